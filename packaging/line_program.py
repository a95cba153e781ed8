#!/usr/bin/env python3
"""Write adapters/line_program.py: RUNNER_LINE_PATTERN as `re` compiles it, so that `stats`
can build the pattern from that program without importing `re` or compiling it.

    python3 packaging/line_program.py PYTHON [PYTHON ...]

Each interpreter given (3.11 or later: the pattern's possessive quantifiers) compiles
the pattern with its own `re`. They must all make the same program; the file then names
each one's engine (`_sre.MAGIC`), the only engines it is used on. Run it again, with
every interpreter to serve, whenever the pattern changes (a test says so).
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from binascii import crc32
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TARGET = ROOT / "adapters" / "line_program.py"

COMPILE = """
import json, re, sys, _sre
sys.path.insert(0, sys.argv[1])
from adapters.line_form import RUNNER_LINE_PATTERN
from re import _compiler, _parser
parsed = _parser.parse(RUNNER_LINE_PATTERN, re.MULTILINE)
code = _compiler._code(parsed, re.MULTILINE)
print(json.dumps({
    "version": sys.version.split()[0],
    "engine": _sre.MAGIC,
    "flags": re.MULTILINE | parsed.state.flags,
    "groups": parsed.state.groups - 1,
    "named": bool(parsed.state.groupdict),
    "program": [int(word) for word in code],
}))
"""
"""Run by each interpreter: the pattern's program as `re.compile` builds it (re._compiler)."""


def compiled(python: str) -> dict[str, object]:
    found = subprocess.run(
        [python, "-c", COMPILE, str(ROOT)], check=True, capture_output=True, text=True
    )
    made: dict[str, object] = json.loads(found.stdout)
    return made


def module(made: list[dict[str, object]], pattern: bytes) -> str:
    first = made[0]
    words = " ".join(map(str, first["program"]))  # type: ignore[call-overload]
    lines = textwrap.wrap(words, 88, break_on_hyphens=False)
    program = "\n".join(f'    "{line} "' for line in lines[:-1]) + f'\n    "{lines[-1]}"'
    engines = ", ".join(str(one["engine"]) for one in made) + ("," if len(made) == 1 else "")
    versions = ", ".join(str(one["version"]) for one in made)
    return f'''"""The runner's line pattern as a program: what `re.compile` makes of it,
with re.MULTILINE, on the regular expression engines named here. A `stats` that reads
a batch of lines builds the pattern from it (adapters.line_form), without importing
`re` or compiling the pattern, which cost half what reading a thousand lines does.

Written by packaging/line_program.py, compiled by Python {versions}. A test
compares it with what `re` compiles on the interpreter that runs it. Not code: numbers
that `_sre` checks before it runs them.
"""

PATTERN_CRC = {crc32(pattern)}
"""CRC-32 of the pattern compiled: another pattern is compiled by `re`, not read from here."""
ENGINES = ({engines})
"""`_sre.MAGIC` of the engines that made this program: on any other, `re` compiles the pattern."""
FLAGS = {first["flags"]}
GROUPS = {first["groups"]}
PROGRAM = (
{program}
)
"""The program's words, in decimal."""
'''


def main() -> int:
    sys.path.insert(0, str(ROOT))
    from adapters.line_form import RUNNER_LINE_PATTERN  # noqa: PLC0415 - once on the path

    pythons = sys.argv[1:] or [sys.executable]
    made = [compiled(python) for python in pythons]
    differ = [one["version"] for one in made if one["program"] != made[0]["program"]]
    if differ or any(one["named"] for one in made):
        print(f"line_program: Python {', '.join(map(str, differ))} compile another program")
        return 1
    TARGET.write_text(module(made, RUNNER_LINE_PATTERN))
    versions = ", ".join(str(one["version"]) for one in made)
    print(f"wrote {TARGET.relative_to(ROOT)} for Python {versions}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
