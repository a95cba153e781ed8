"""The modules a subcommand always imports, loaded from one file of their bytecode.

Importing a module looks for it, stats, opens and reads its bytecode, then builds the
module through importlib's own Python code: some 190 microseconds a module on a small
VM, more than most of `stats`' thirty modules take to run. A subcommand that names the
modules it always imports, each after those it imports, has them loaded from one file
read at once, each made and run as importlib makes and runs it (the same spec and
loader, so `reload` and `inspect` work as usual).

The file sits beside Python's own bytecode, in `entrypoints/__pycache__` (for `stats` on
CPython 3.11.7, `stats.cpython-311-30b07f0.modules`), and is trusted as that bytecode is;
a zipapp has it built in. Only the interpreter that wrote it reads it (the same
`sys.version` and optimisation level), and a module is loaded from it only while its
source has the modification time (in nanoseconds) and size its code was compiled from:
from the first one that has not, the modules are imported as usual, when something
imports them, and the file is written anew (by rename) once the subcommand is done. A
file that cannot be read, or a folder that cannot be written (or -B,
PYTHONDONTWRITEBYTECODE), costs nothing but time, and loading never fails a run: a
module that cannot be loaded from the file is left to be imported as usual, and fails
there if it must.
"""

from __future__ import annotations

import marshal
import os
import stat
import sys

from domain.errors import RunnerError

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing at start-up
if TYPE_CHECKING:
    from collections.abc import Sequence
    from types import CodeType
    from typing import Any

FORM = 1
"""The file's form, first in its header."""
LARGEST = 16 << 20
"""A file larger than this (bytes) is not read: the runner's own modules are some 1 MB."""

_CODE = type((lambda: None).__code__)
_MODULE = type(sys)
_DAMAGED = (ValueError, EOFError, TypeError, IndexError)
"""What unmarshalling a damaged file, or a damaged part of one, raises."""

Entry = tuple[str, int, int, int, int]
"""A module's source (relative to the root), its modification time (ns) and size, and
where its code starts and ends among the file's codes."""


class Preloaded:
    """The modules `names` (modules of packages already imported), loaded from the file
    at `path` as far as it holds them unchanged; `keep` brings the file up to date."""

    def __init__(self, path: str, root: str, names: Sequence[str]) -> None:
        self.path = path
        self.root = root
        self.names = tuple(names)
        self.served: set[str] = set()
        """The modules loaded from the file."""
        self.current = False
        """Whether the file held every module unchanged."""
        self._codes = memoryview(b"")
        self._index: dict[str, Entry] = {}

    def load(self) -> None:
        """Load each module in turn, to the first the file does not hold unchanged; one
        imported already is left as it is."""
        self._read()
        for name in self.names:
            if name in sys.modules:
                continue
            code = self._code(name)
            if code is None or not self._run(name, code):
                return
            self.served.add(name)
        self.current = True

    def keep(self) -> None:
        """Write the file anew if it did not hold every module unchanged (see
        adapters.preload_write); nothing is raised for a file that cannot be written."""
        if self.current or sys.dont_write_bytecode:
            return
        from adapters.preload_write import write  # noqa: PLC0415 - seldom: when it changed

        write(self)

    def code_of(self, name: str) -> bytes | None:
        """The marshalled code of a module loaded from the file (None: not loaded from it)."""
        entry = self._index.get(name)
        if name not in self.served or entry is None:
            return None
        return bytes(self._codes[entry[3] : entry[4]])

    def _read(self) -> None:
        """The file's index and codes, if this interpreter wrote it for these modules."""
        try:
            data = self._bytes()
            size = int.from_bytes(data[:4], "little")
            form, version, optimize, names, index = marshal.loads(data[4 : 4 + size])
        except (OSError, *_DAMAGED):
            return
        if (form, version, optimize, names) != (FORM, sys.version, sys.flags.optimize, self.names):
            return
        if type(index) is not dict or not all(map(_is_entry, index.values())):
            return
        self._codes = memoryview(data)[4 + size :]
        self._index = index

    def _bytes(self) -> bytes:
        """The file's bytes (OSError or ValueError when it is none to read)."""
        return _read_file(self.path)

    def _current(self, entry: Entry) -> bool:
        """Whether a module's source has the modification time and size its code was
        compiled from (OSError when it cannot be read)."""
        return source_status(os.path.join(self.root, entry[0])) == entry[1:3]

    def _loader(self, name: str, origin: str, like: object) -> Any:
        """The loader of a module: a SourceFileLoader, as its package's (None for a package
        loaded otherwise, whose loader takes other arguments)."""
        try:
            return type(like)(name, origin)  # type: ignore[call-arg]
        except TypeError:
            return None

    def _code(self, name: str) -> CodeType | None:
        """A module's code from the file, if its source is unchanged since."""
        entry = self._index.get(name)
        if entry is None:
            return None
        try:
            if not self._current(entry):
                return None
            code = marshal.loads(self._codes[entry[3] : entry[4]])
        except (OSError, *_DAMAGED):
            return None
        return code if type(code) is _CODE else None

    def _run(self, name: str, code: CodeType) -> bool:
        """Make and run a module as importlib does for a source file's: its spec and loader
        of the classes its package's are, its attributes, then its code, in sys.modules
        while it runs and moved to its end after. False, and no module left, when it
        raises (the import as usual will raise it where the module is needed), except
        for a signal's or the runner's own errors, which propagate."""
        parent_name, _, child = name.rpartition(".")
        parent = sys.modules.get(parent_name)
        made_like = getattr(parent, "__spec__", None)
        if made_like is None or made_like.loader is None:
            return False
        origin = os.path.join(self.root, self._index[name][0])
        loader = self._loader(name, origin, made_like.loader)
        if loader is None:
            return False
        spec = type(made_like)(name, loader, origin=origin)
        spec.has_location = True
        spec.cached = self.path
        module = _MODULE(name)
        module.__spec__, module.__loader__, module.__package__ = spec, loader, parent_name
        module.__file__, module.__cached__ = origin, self.path  # type: ignore[attr-defined]
        sys.modules[name] = module
        try:
            exec(code, module.__dict__)  # the module's own code, as importlib runs it
        except Exception as error:
            sys.modules.pop(name, None)
            if isinstance(error, RunnerError):
                raise
            return False
        except BaseException:
            sys.modules.pop(name, None)
            raise
        sys.modules[name] = sys.modules.pop(name)
        setattr(parent, child, sys.modules[name])
        return True


class Archived(Preloaded):
    """The modules of a zipapp, from the file built into it beside their bytecode
    (packaging/build_zipapp.py): an archive does not change, so its modules are not
    checked against their sources, as its bytecode is not, and the file is never written."""

    def __init__(self, importer: Any, member: str, root: str, names: Sequence[str]) -> None:
        super().__init__(os.path.join(root, member), root, names)
        self.importer = importer
        self.member = member

    def keep(self) -> None:
        return None

    def _bytes(self) -> bytes:
        data: bytes = self.importer.get_data(self.member)
        return data

    def _current(self, entry: Entry) -> bool:
        return True

    def _loader(self, name: str, origin: str, like: object) -> Any:
        return like if like is self.importer else None


def preload(tag: str, root: str, names: Sequence[str]) -> Preloaded | None:
    """Load the modules `names` of the runner's folder or zipapp `root` from the file kept
    for `tag` (a subcommand); None where there is no such file (modules found otherwise,
    or an interpreter that keeps no bytecode)."""
    name = file_name(tag)
    if name is None:
        return None
    folder = os.path.join(root, "entrypoints")
    if os.path.isdir(folder):
        preloaded = Preloaded(os.path.join(folder, "__pycache__", name), root, names)
    else:
        importer = getattr(sys.modules.get("entrypoints"), "__loader__", None)
        archive = getattr(importer, "archive", None)
        if type(archive) is not str or os.path.abspath(archive) != root:
            return None
        preloaded = Archived(importer, f"entrypoints/{name}", root, names)
    preloaded.load()
    return preloaded


def file_name(tag: str) -> str | None:
    """The name of the file kept for `tag` by this interpreter (its bytecode's tag and its
    version: 3.11.2 and 3.11.7 share .pyc files, but each keeps a file of its own, so that
    two that take turns in one folder do not write it anew each time), at this
    optimisation level; None for an interpreter that keeps no bytecode."""
    python = sys.implementation.cache_tag
    if python is None:
        return None
    optimized = f".opt-{sys.flags.optimize}" if sys.flags.optimize else ""
    return f"{tag}.{python}-{sys.hexversion:x}{optimized}.modules"


def _read_file(path: str) -> bytes:
    """A regular file's bytes, up to LARGEST; OSError or ValueError otherwise (a link is
    not followed, a FIFO not waited on)."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        status = os.fstat(fd)
        if not stat.S_ISREG(status.st_mode) or status.st_size > LARGEST:
            raise ValueError("not a file to read")
        with open(fd, "rb", closefd=False) as handle:
            return handle.read(status.st_size + 1)  # a buffer of its size, not of LARGEST
    finally:
        os.close(fd)


def source_status(path: str) -> tuple[int, int]:
    status = os.stat(path)
    return status.st_mtime_ns, status.st_size


def _is_entry(entry: object) -> bool:
    """Whether an index entry has the form `keep` writes."""
    return (
        type(entry) is tuple
        and len(entry) == 5
        and type(entry[0]) is str
        and all(type(number) is int for number in entry[1:])
    )
