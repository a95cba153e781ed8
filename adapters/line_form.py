"""The runner's own line form as patterns: one that reads a line in it (`stats` reads
whole batches with it, far faster than decoding JSON), and one that tells a line that
may be a JSON object from one that cannot be.

The runner writes every line in one form: its keys in a fixed order, no spaces, ASCII
only. What RUNNER_LINE_PATTERN takes, `json.loads` reads the same way (property tests
hold the two together); `lines` reads any other line with `json.loads`.
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing at start-up
if TYPE_CHECKING:
    import re

_STRING = rb'"[ !#-\[\]-~]*+(?:"|(?:\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4})[ !#-\[\]-~]*+)++")'
"""A JSON string of printable ASCII and escapes: its plain text read in one step, then
its closing quote or, rarely, escapes each followed by plain text (most strings have
none, and this form matches them with no repeat at all)."""
_PLAIN = rb'"[ !#-\[\]-~]*+"'
"""A JSON string of printable ASCII, with no escape: its bytes are its text."""
_INT = rb"-?+(?:0|[1-9][0-9]*+)"
_ATTEMPT = rb"[1-9][0-9]{0,8}+"
"""An attempt number the pattern takes: 1 to 999,999,999 (see `lines.LIMITS`)."""
_RC = rb"(?:0|[1-9][0-9]{0,2}+)"
"""An exit code the pattern takes: 0 to 999 (the reader refuses those above 255)."""
_MILLISECONDS = rb"(?:0|[1-9][0-9]{0,12}+)"
"""A duration the pattern takes: 0 to 9,999,999,999,999 ms (see `lines.LIMITS`)."""

RUNNER_LINE_PATTERN = (
    rb'^\{"ts":"([ !#-\[\]-~]*+)"'
    rb',"cmd":(\[(?:\]|' + _STRING + rb"(?:," + _STRING + rb")*+\]))"
    rb',"attempt":(' + _ATTEMPT + rb'),"rc":(' + _RC + rb")"
    rb',"duration_ms":(' + _MILLISECONDS + rb'),"run_id":"([ !#-\[\]-~]*+)"'
    rb'(?:,"name":(' + _STRING + rb"))?+"
    rb'(,"delay_ms":' + _INT + rb")?+"
    rb'(?:,"token":' + _INT + rb")?+"
    rb'(?:,"timed_out":(true|false))?+'
    rb'(?:,"signal":(' + _PLAIN + rb"|null))?+"
    rb'(?:,"ping_failed":(?:true|false))?+\}$'
)
"""One line in the runner's own form (possessive quantifiers, optional members too: nothing
is tried twice, and an optional member costs a step, not a repeat's bookkeeping).
Groups: ts, cmd (an array of strings), attempt, rc, duration_ms, run_id, name
(quoted, or empty when absent), the delay_ms member (empty when absent), timed_out,
signal (quoted or null). It takes numbers within `lines.LIMITS` only (and an rc up to
999, which the reader refuses above 255): a line with any other is left to json.loads,
which reads it the same way."""

MAYBE_OBJECT = rb"^[^\n!-z|-~].*$"
"""A line that may be a JSON object. One that begins with a printable character other than
`{` (a number, a word, a list: `x`, `7`, `[1]`) cannot be one, whatever its encoding
(json.loads reads UTF-8, and UTF-16 and UTF-32 by their null bytes): it is malformed
without being decoded, where decoding raised an exception for each (2.6 s a megabyte
of `x` lines)."""

POSSESSIVE = sys.version_info >= (3, 11)
"""Whether `re` knows possessive quantifiers (Python 3.11 on). Before, the pattern cannot
be compiled, and without them it could backtrack for ever on a hostile line: every
line is read by the json module, the same way, only slower."""

_built: list[re.Pattern[bytes] | None] = []
"""The pattern built from its program (None: it cannot be, here), once built."""
_compiled: list[re.Pattern[bytes]] = []
"""The pattern `re` compiled, once compiled."""


def runner_line() -> re.Pattern[bytes] | None:
    """RUNNER_LINE_PATTERN, compiled once (with `^` and `$` at each line); None before
    Python 3.11 (see POSSESSIVE). Built from the program compiled beforehand where this
    interpreter's engine is one it was made for (`prebuilt`), else compiled by `re`."""
    if not POSSESSIVE:
        return None
    return prebuilt() or _by_re()


def prebuilt() -> re.Pattern[bytes] | None:
    """The pattern built from adapters.line_program (what `re.compile` makes of it), without
    importing `re`: 12.7 million instructions fewer than importing it and compiling, half
    what reading an hour's thousand lines with the pattern costs. None on an engine it
    was not made for, or when the program is not the pattern's."""
    if not _built:
        _built.append(_from_program() if POSSESSIVE else None)
    return _built[0]


def _from_program() -> re.Pattern[bytes] | None:
    try:
        import _sre  # type: ignore[import-not-found]  # noqa: PLC0415 - the engine of `re`
        from binascii import crc32  # noqa: PLC0415

        from adapters import line_program as made  # noqa: PLC0415 - only for a batch of lines

        if _sre.MAGIC not in made.ENGINES or crc32(RUNNER_LINE_PATTERN) != made.PATTERN_CRC:
            return None
        program = list(map(int, made.PROGRAM.split()))
        groups = made.GROUPS
        pattern: re.Pattern[bytes] = _sre.compile(
            RUNNER_LINE_PATTERN, made.FLAGS, program, groups, {}, (None,) * (groups + 1)
        )
    except (ImportError, AttributeError, TypeError, ValueError, RuntimeError):
        return None  # another interpreter's engine: `re` compiles the pattern
    return pattern


def _by_re() -> re.Pattern[bytes]:
    if not _compiled:
        import re  # noqa: PLC0415 - only for a long read (see lines.COMPILED_FROM)

        _compiled.append(re.compile(RUNNER_LINE_PATTERN, re.MULTILINE))
    return _compiled[0]
