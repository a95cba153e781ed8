"""The modules a subcommand always imports, loaded from one file of their bytecode.

Importing a module looks for it, stats, opens and reads its bytecode, then builds the
module through importlib's own Python code: some 190 microseconds a module on a small
VM, more than most of `stats`' thirty modules take to run. A subcommand that names the
modules it always imports, each after those it imports, has them loaded from one file
read at once, each made and run as importlib makes and runs it (the same spec and
loader, so `reload` and `inspect` work as usual).

The file sits beside Python's own bytecode, in `entrypoints/__pycache__` (for `stats` on
CPython 3.11, `stats.cpython-311.modules`), and is trusted as that bytecode is. Only the
interpreter that wrote it reads it (the same `sys.version` and optimisation level), and a
module is loaded from it only while its source has the modification time (in
nanoseconds) and size its code was compiled from: from the first one that has not, the
modules are imported as usual, when something imports them, and the file is written
anew (by rename) once the subcommand is done. A file that cannot be read, or a folder
that cannot be written (or -B, PYTHONDONTWRITEBYTECODE), costs nothing but time, and
loading never fails a run: a module that cannot be loaded from the file is left to be
imported as usual, and fails there if it must.
"""

from __future__ import annotations

import marshal
import os
import stat
import sys

from adapters.files import write_atomically
from domain.errors import RunnerError

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing at start-up
if TYPE_CHECKING:
    from collections.abc import Sequence
    from types import CodeType

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
        """Write the file anew if it did not hold every module unchanged, with each module's
        code as importlib read or compiled it; nothing is raised for a file that cannot
        be written, and nothing is written unless every module is imported."""
        if self.current or sys.dont_write_bytecode or not _writable(self.path):
            return
        index: dict[str, Entry] = {}
        codes: list[bytes] = []
        at = 0
        for name in self.names:
            found = self._kept(name)
            if found is None:
                return
            source, mtime, size, code = found
            index[name] = (source, mtime, size, at, at + len(code))
            codes.append(code)
            at += len(code)
        header = marshal.dumps((FORM, sys.version, sys.flags.optimize, self.names, index))
        try:
            os.makedirs(os.path.dirname(self.path), exist_ok=True)
            pieces: list[bytes | memoryview] = [len(header).to_bytes(4, "little"), header, *codes]
            write_atomically(self.path, pieces, durable=False)
        except OSError:
            pass

    def _read(self) -> None:
        """The file's index and codes, if this interpreter wrote it for these modules."""
        try:
            data = _read_file(self.path)
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

    def _code(self, name: str) -> CodeType | None:
        """A module's code from the file, if its source is unchanged since."""
        entry = self._index.get(name)
        if entry is None:
            return None
        try:
            if _status(os.path.join(self.root, entry[0])) != entry[1:3]:
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
        try:  # a SourceFileLoader, as its package's (any other takes other arguments)
            loader = type(made_like.loader)(name, origin)
        except TypeError:
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

    def _kept(self, name: str) -> tuple[str, int, int, bytes] | None:
        """What the file keeps of a module: its source, relative to the root, its status,
        and its code, marshalled (the file's own for a module loaded from it). None for
        one that is not imported, not a source file under the root, or that changed
        while it was read."""
        spec = getattr(sys.modules.get(name), "__spec__", None)
        origin = getattr(spec, "origin", None)
        if spec is None or type(origin) is not str or not origin.endswith(".py"):
            return None
        source = os.path.relpath(origin, self.root)
        if source.startswith(os.pardir):
            return None
        try:
            mtime, size = _status(origin)
            entry = self._index.get(name)
            if name in self.served and entry is not None:
                return source, mtime, size, bytes(self._codes[entry[3] : entry[4]])
            code = marshal.dumps(spec.loader.get_code(name))
            if _status(origin) != (mtime, size):
                return None
        except (OSError, ImportError, SyntaxError, AttributeError, ValueError):
            return None
        return source, mtime, size, code


def preload(tag: str, root: str, names: Sequence[str]) -> Preloaded | None:
    """Load the modules `names` of the runner's folder `root` from the file kept for `tag`
    (a subcommand); None where no file can be kept (the modules are in an archive, or
    the interpreter keeps no bytecode)."""
    python = sys.implementation.cache_tag
    folder = os.path.join(root, "entrypoints")
    if python is None or not os.path.isdir(folder):
        return None
    optimized = f".opt-{sys.flags.optimize}" if sys.flags.optimize else ""
    path = os.path.join(folder, "__pycache__", f"{tag}.{python}{optimized}.modules")
    preloaded = Preloaded(path, root, names)
    preloaded.load()
    return preloaded


def _read_file(path: str) -> bytes:
    """A regular file's bytes, up to LARGEST; OSError or ValueError otherwise (a link is
    not followed, a FIFO not waited on)."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        status = os.fstat(fd)
        if not stat.S_ISREG(status.st_mode) or status.st_size > LARGEST:
            raise ValueError("not a file to read")
        with open(fd, "rb", closefd=False) as handle:
            return handle.read(LARGEST + 1)
    finally:
        os.close(fd)


def _writable(path: str) -> bool:
    """Whether the file at `path` could be written, or its folder made: checked first, so
    that a folder the user cannot write (an install owned by root) costs no reading of
    the modules' code at every run."""
    folder = os.path.dirname(path)
    return os.access(folder if os.path.isdir(folder) else os.path.dirname(folder), os.W_OK)


def _status(path: str) -> tuple[int, int]:
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
