"""The one file of a subcommand's modules, with real files and real imports: what it loads
and how, what it never loads (a changed source, a damaged or foreign file), and that
nothing it cannot read, run or write fails a run."""

from __future__ import annotations

import importlib
import inspect
import marshal
import os
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest
from pytest_mock import MockerFixture

from adapters import preload
from adapters.preload import Preloaded
from domain.errors import Interrupted


class Tree:
    """A runner's folder with a package of its own: `beta`, then `alpha`, which imports it."""

    def __init__(self, root: Path) -> None:
        self.root = root
        (root / "entrypoints").mkdir()
        self.package = f"preloaded_{uuid.uuid4().hex[:8]}"
        self.folder = root / self.package
        self.folder.mkdir()
        (self.folder / "__init__.py").write_text("")
        self.write("beta", "VALUE = 41\n")
        self.write("alpha", f"from {self.package} import beta\n\nVALUE = beta.VALUE + 1\n")
        self.names = (f"{self.package}.beta", f"{self.package}.alpha")

    def write(self, name: str, text: str) -> None:
        (self.folder / f"{name}.py").write_text(text)

    @property
    def kept(self) -> Path:
        return self.root / "entrypoints" / "__pycache__" / str(preload.file_name("stats"))

    def start(self, *names: str) -> Preloaded:
        """A new process, as far as the package goes: its modules forgotten, the package
        imported as usual, then `names` (both modules by default) preloaded."""
        self.forget()
        importlib.import_module(self.package)
        found = preload.preload("stats", str(self.root), names or self.names)
        assert found is not None
        return found

    def module(self, name: str) -> ModuleType:
        return importlib.import_module(f"{self.package}.{name}")

    def forget(self) -> None:
        for name in [name for name in sys.modules if name.partition(".")[0] == self.package]:
            del sys.modules[name]
        importlib.invalidate_caches()


@pytest.fixture
def tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Tree]:
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    made = Tree(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    yield made
    made.forget()


def _served(tree: Tree) -> Preloaded:
    """A run that keeps the file, then a run served from it."""
    first = tree.start()
    tree.module("alpha")
    first.keep()
    return tree.start()


def test_modules_imported_as_usual_are_kept_then_loaded_from_the_one_file(tree: Tree) -> None:
    """The first run imports as usual and keeps the file; the next loads both from it,
    made as importlib makes a source file's module."""
    first = tree.start()
    assert (first.served, first.current) == (set(), False)
    assert tree.module("alpha").VALUE == 42
    first.keep()
    assert tree.kept.is_file()
    second = tree.start()
    assert (second.served, second.current) == (set(tree.names), True)
    alpha = sys.modules[f"{tree.package}.alpha"]
    assert alpha.VALUE == 42
    assert alpha.__file__ == str(tree.folder / "alpha.py")
    assert alpha.__spec__ is not None
    assert alpha.__spec__.cached == str(tree.kept)
    assert type(alpha.__loader__).__name__ == "SourceFileLoader"
    assert alpha.__package__ == tree.package
    assert sys.modules[tree.package].alpha is alpha
    assert list(sys.modules)[-2:] == list(tree.names)
    assert "VALUE = beta.VALUE + 1" in inspect.getsource(alpha)
    assert importlib.reload(alpha).VALUE == 42
    before = tree.kept.stat().st_mtime_ns
    second.keep()
    assert tree.kept.stat().st_mtime_ns == before  # every module held: nothing written


def test_from_a_changed_source_on_modules_are_imported_as_usual_and_kept_anew(tree: Tree) -> None:
    """A new size, or a new modification time with the same size: never the code compiled
    before; the modules before it are still loaded from the file."""
    _served(tree).keep()
    tree.write("alpha", f"from {tree.package} import beta\n\nVALUE = beta.VALUE + 100\n")
    changed = tree.start()
    assert (changed.served, changed.current) == ({f"{tree.package}.beta"}, False)
    assert tree.module("alpha").VALUE == 141
    changed.keep()
    again = tree.start()
    assert again.current
    assert tree.module("alpha").VALUE == 141
    tree.write("alpha", f"from {tree.package} import beta\n\nVALUE = beta.VALUE + 200\n")
    status = (tree.folder / "alpha.py").stat()
    os.utime(tree.folder / "alpha.py", ns=(status.st_atime_ns, status.st_mtime_ns + 1))
    touched = tree.start()  # Python's own .pyc, checked to the second, is taken as current
    assert (touched.served, touched.current) == ({f"{tree.package}.beta"}, False)


def test_a_module_imported_already_is_left_as_it_is(tree: Tree) -> None:
    """Loading runs no module twice: one already in sys.modules is neither made again nor
    counted as loaded from the file."""
    _served(tree).keep()
    tree.forget()
    importlib.import_module(tree.package)
    beta = tree.module("beta")
    found = preload.preload("stats", str(tree.root), tree.names)
    assert found is not None
    assert (found.served, found.current) == ({f"{tree.package}.alpha"}, True)
    assert sys.modules[f"{tree.package}.beta"] is beta


def _raising(tree: Tree, monkeypatch: pytest.MonkeyPatch, error: str) -> None:
    """beta kept in the file, then made to raise `error` when it runs."""
    tree.write(
        "beta", f"import os\n\nif os.environ.get('PRELOAD_FAIL'):\n    raise {error}\nVALUE = 1\n"
    )
    _served(tree).keep()
    monkeypatch.setenv("PRELOAD_FAIL", "1")


def test_a_module_that_raises_is_left_to_be_imported_as_usual(
    tree: Tree, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Its exception is raised where the module is imported, as without the file; loading
    stops there and leaves no half-made module."""
    _raising(tree, monkeypatch, "OSError('told to')")
    failed = tree.start()
    assert (failed.served, failed.current) == (set(), False)
    assert not {*tree.names} & set(sys.modules)
    with pytest.raises(OSError, match="told to"):
        tree.module("alpha")


def test_a_signal_while_a_module_runs_ends_the_run(
    tree: Tree, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The runner's own errors (a signal's Interrupted) are not taken for a module's."""
    _raising(tree, monkeypatch, "__import__('domain.errors').errors.Interrupted(15)")
    with pytest.raises(Interrupted):
        tree.start()
    assert f"{tree.package}.beta" not in sys.modules


def _parts(tree: Tree) -> tuple[tuple[object, ...], bytes]:
    data = tree.kept.read_bytes()
    size = int.from_bytes(data[:4], "little")
    header: tuple[object, ...] = marshal.loads(data[4 : 4 + size])
    return header, data[4 + size :]


def _write(tree: Tree, header: tuple[object, ...], codes: bytes) -> None:
    encoded = marshal.dumps(header)  # type: ignore[arg-type]
    tree.kept.write_bytes(len(encoded).to_bytes(4, "little") + encoded + codes)


def _damage(tree: Tree, how: str) -> None:
    """Put a damaged or foreign file in the kept file's place."""
    (form, version, optimize, names, index), codes = _parts(tree)
    assert isinstance(index, dict)
    data, kept = tree.kept.read_bytes(), tree.kept
    moved = {name: (*entry[:3], 10**9, 10**9 + 5) for name, entry in index.items()}
    typed = {name: (*entry[:3], "0", entry[4]) for name, entry in index.items()}
    number = marshal.dumps(12345)
    not_code = {name: (*entry[:3], 0, len(number)) for name, entry in index.items()}
    whole = {
        "truncated": data[: len(data) // 2],
        "garbage": os.urandom(4096),
        "empty": b"",
        "header past the end": b"\xff\xff\xff\x7f" + data[4:],
    }
    headers: dict[str, tuple[tuple[object, ...], bytes]] = {
        "another interpreter": ((form, "2.7.18 (default)", optimize, names, index), codes),
        "another form": ((99, version, optimize, names, index), codes),
        "another optimisation": ((form, version, 2, names, index), codes),
        "other modules": ((form, version, optimize, ("x.y",), index), codes),
        "index not a dict": ((form, version, optimize, names, list(index.items())), codes),
        "entry of the wrong form": ((form, version, optimize, names, typed), codes),
        "code that is not code": ((form, version, optimize, names, not_code), number),
        "positions past the end": ((form, version, optimize, names, moved), codes),
    }
    if how in whole:
        kept.write_bytes(whole[how])
    elif how in headers:
        _write(tree, *headers[how])
    elif how == "a symbolic link":
        kept.rename(kept.with_name("real"))
        kept.symlink_to(kept.with_name("real"))
    elif how == "a FIFO":
        kept.unlink()
        os.mkfifo(kept)
    else:
        assert how == "too large"
        with kept.open("ab") as grown:
            grown.truncate(preload.LARGEST + 1)


@pytest.mark.parametrize(
    "how",
    [
        "truncated",
        "garbage",
        "empty",
        "header past the end",
        "another interpreter",
        "another form",
        "another optimisation",
        "other modules",
        "index not a dict",
        "entry of the wrong form",
        "code that is not code",
        "positions past the end",
        "a symbolic link",
        "a FIFO",
        "too large",
    ],
)
def test_a_damaged_or_foreign_file_loads_nothing_and_is_written_anew(tree: Tree, how: str) -> None:
    """Every module is imported as usual, with no error and no wait; the file is replaced."""
    _served(tree).keep()
    _damage(tree, how)
    passed = tree.start()
    assert (passed.served, passed.current) == (set(), False)
    assert tree.module("alpha").VALUE == 42
    passed.keep()
    assert tree.kept.is_file()
    assert not tree.kept.is_symlink()
    assert tree.start().current


def test_a_place_that_cannot_be_written_costs_nothing_but_time(tree: Tree) -> None:
    """A folder in the file's place: the rename fails, nothing is raised or left behind."""
    first = tree.start()
    tree.module("alpha")
    tree.kept.mkdir(parents=True)
    first.keep()
    assert tree.kept.is_dir()
    assert [path.name for path in tree.kept.parent.iterdir()] == [tree.kept.name]


def test_a_folder_the_user_cannot_write_costs_no_reading_of_the_modules(
    tree: Tree, mocker: MockerFixture
) -> None:
    """An install owned by root, run by a user: no module's code is read again to be kept,
    at any run."""
    first = tree.start()
    tree.module("alpha")
    mocker.patch("adapters.preload_write.os.access", return_value=False)
    dumps = mocker.spy(marshal, "dumps")
    first.keep()
    assert dumps.call_count == 0
    assert not tree.kept.exists()


def test_nothing_is_written_where_bytecode_may_not_be(
    tree: Tree, monkeypatch: pytest.MonkeyPatch
) -> None:
    """-B or PYTHONDONTWRITEBYTECODE: Python writes no .pyc, and no modules file either."""
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    first = tree.start()
    tree.module("alpha")
    first.keep()
    assert not tree.kept.exists()


def test_nothing_is_written_unless_every_module_was_imported(tree: Tree) -> None:
    """A run that ended before importing them all (an error, a signal) keeps no partial file."""
    first = tree.start()
    tree.module("beta")
    first.keep()
    assert not tree.kept.exists()


def test_each_interpreter_keeps_a_file_of_its_own() -> None:
    """Two Pythons of one bytecode tag (3.11.2 and 3.11.7) taking turns in one folder would
    each find the other's file and write it anew, every time."""
    name = preload.file_name("stats")
    assert name is not None
    assert name.startswith(f"stats.{sys.implementation.cache_tag}-{sys.hexversion:x}")


def test_modules_in_an_archive_have_no_file(tmp_path: Path) -> None:
    """A zipapp's modules: no folder to keep a file in."""
    archive = tmp_path / "runner.pyz"
    archive.write_bytes(b"PK")
    assert preload.preload("stats", str(archive), ("entrypoints.stats",)) is None
