"""Writing the file of a subcommand's modules (see adapters.preload): when a run found it
missing or out of date, and by packaging/build_zipapp.py for the zipapp."""

from __future__ import annotations

import marshal
import os
import sys

from adapters.files import write_atomically
from adapters.preload import FORM, Entry, Preloaded, source_status

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing at start-up
if TYPE_CHECKING:
    from collections.abc import Sequence


def write(preloaded: Preloaded) -> None:
    """Write `preloaded`'s file anew, each module's code as importlib read or compiled it
    (the file's own for a module loaded from it), unless a module is not imported or the
    folder cannot be written (checked first: an install owned by root, run by a user,
    then costs no reading of the modules' code at every run). Nothing is raised."""
    folder = os.path.dirname(preloaded.path)
    if not os.access(folder if os.path.isdir(folder) else os.path.dirname(folder), os.W_OK):
        return
    modules = []
    for name in preloaded.names:
        found = _kept(preloaded, name)
        if found is None:
            return
        modules.append(found)
    try:
        os.makedirs(folder, exist_ok=True)
        write_atomically(preloaded.path, packed(preloaded.names, modules), durable=False)
    except OSError:
        pass


def packed(
    names: Sequence[str], modules: Sequence[tuple[str, int, int, bytes]]
) -> list[bytes | memoryview]:
    """The file of the modules `names`, given for each its source (relative to the root),
    the modification time (ns) and size of the source its code was compiled from, and
    its code, marshalled: as pieces, in order."""
    index: dict[str, Entry] = {}
    at = 0
    for name, (source, mtime, size, code) in zip(names, modules, strict=True):
        index[name] = (source, mtime, size, at, at + len(code))
        at += len(code)
    header = marshal.dumps((FORM, sys.version, sys.flags.optimize, tuple(names), index))
    return [len(header).to_bytes(4, "little"), header, *(code for *_, code in modules)]


def _kept(preloaded: Preloaded, name: str) -> tuple[str, int, int, bytes] | None:
    """What the file keeps of a module: its source, relative to the root, its status, and
    its code, marshalled. None for one that is not imported, not a source file under the
    root, or that changed while it was read."""
    spec = getattr(sys.modules.get(name), "__spec__", None)
    origin = getattr(spec, "origin", None)
    if spec is None or type(origin) is not str or not origin.endswith(".py"):
        return None
    source = os.path.relpath(origin, preloaded.root)
    if source.startswith(os.pardir):
        return None
    try:
        mtime, size = source_status(origin)
        code = preloaded.code_of(name)
        if code is None:
            code = marshal.dumps(spec.loader.get_code(name))
            if source_status(origin) != (mtime, size):
                return None
    except (OSError, ImportError, SyntaxError, AttributeError, ValueError):
        return None
    return source, mtime, size, code
