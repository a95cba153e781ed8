#!/usr/bin/env python3
"""Build dist/runner.pyz: the standard-library runner as one file, byte for byte the same
every time it is built from the same sources by the same Python.

    python3 packaging/build_zipapp.py [OUTPUT]

The standard library's zipapp stamps each entry with the file's time, so two builds
differ; here every entry has a fixed time and mode, in a fixed order. runner.py is
the archive's __main__.py.

Python never writes bytecode into an archive, so one that holds only sources compiles
every module it imports at every start: twice the start-up of the folder. Beside each
source the archive holds its bytecode (`name.pyc`, where zipimport looks first),
compiled by the Python that builds it and stored uncompressed: that Python starts
from it within a few milliseconds of the folder (reading the archive's index). Any
other Python finds bytecode of another version, passes it by, and compiles the
source, as before (so an old one still says what it lacks): build it with the Python
that will run it. The bytecode is unchecked-hash (PEP 552): the archive never
changes, so nothing is compared at start.
"""

from __future__ import annotations

import os
import py_compile
import sys
import tempfile
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


def bytecode(path: Path, name: str, scratch: str) -> bytes:
    """The module's bytecode as this Python compiles it, named by its place in the archive
    (as tracebacks show it)."""
    compiled = os.path.join(scratch, "module.pyc")
    py_compile.compile(
        str(path),
        cfile=compiled,
        dfile=name,
        doraise=True,
        optimize=0,  # asserts kept, whatever -O the building Python runs with
        invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH,
    )
    return Path(compiled).read_bytes()


def build(output: Path) -> None:
    output.parent.mkdir(parents=True, exist_ok=True)
    partial = output.with_name(output.name + ".part")
    with tempfile.TemporaryDirectory() as scratch, partial.open("wb") as handle:
        handle.write(SHEBANG)
        with zipfile.ZipFile(handle, "w") as archive:
            for name, path in sources():
                _add(archive, name, path.read_bytes(), zipfile.ZIP_DEFLATED)
                _add(archive, name[:-3] + ".pyc", bytecode(path, name, scratch), zipfile.ZIP_STORED)
    partial.chmod(0o755)
    os.replace(partial, output)


def _add(archive: zipfile.ZipFile, name: str, data: bytes, compression: int) -> None:
    entry = zipfile.ZipInfo(name, EPOCH)
    entry.external_attr = 0o644 << 16
    entry.compress_type = compression
    archive.writestr(entry, data, compresslevel=9 if compression == zipfile.ZIP_DEFLATED else None)


if __name__ == "__main__":
    if os.environ.get("PYTHONHASHSEED") != "0":
        # Before Python 3.11, the order of a set constant in bytecode follows the string
        # hashes, which differ from run to run: the same bytes every build need one seed.
        environ = {**os.environ, "PYTHONHASHSEED": "0"}
        os.execve(sys.executable, [sys.executable, __file__, *sys.argv[1:]], environ)
    build(Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "dist" / "runner.pyz")
