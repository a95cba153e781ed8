#!/usr/bin/env python3
"""Build dist/runner.pyz: the standard-library runner as one file, byte for byte the same
every time it is built from the same sources.

    python3 packaging/build_zipapp.py [OUTPUT]

The standard library's zipapp stamps each entry with the file's time, so two builds
differ; here every entry has a fixed time and mode, in a fixed order. runner.py is
the archive's __main__.py.
"""

from __future__ import annotations

import os
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FOLDERS = ("domain", "adapters", "entrypoints")
SHEBANG = b"#!/usr/bin/env python3\n"
EPOCH = (1980, 1, 1, 0, 0, 0)


def sources() -> list[tuple[str, Path]]:
    """(name in the archive, file) for runner.py and every module of the three folders."""
    found = [("__main__.py", ROOT / "runner.py")]
    for folder in FOLDERS:
        for path in sorted((ROOT / folder).rglob("*.py")):
            found.append((path.relative_to(ROOT).as_posix(), path))
    return found


def build(output: Path) -> None:
    output.parent.mkdir(parents=True, exist_ok=True)
    partial = output.with_name(output.name + ".part")
    with partial.open("wb") as handle:
        handle.write(SHEBANG)
        with zipfile.ZipFile(handle, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as archive:
            for name, path in sources():
                entry = zipfile.ZipInfo(name, EPOCH)
                entry.external_attr = 0o644 << 16
                entry.compress_type = zipfile.ZIP_DEFLATED
                archive.writestr(entry, path.read_bytes(), compresslevel=9)
    partial.chmod(0o755)
    os.replace(partial, output)


if __name__ == "__main__":
    build(Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "dist" / "runner.pyz")
