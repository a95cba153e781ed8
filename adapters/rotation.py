"""A log's rotated generations: found beside it by logrotate's names, known by their first line.

logrotate leaves `runs.jsonl.1`, `runs.jsonl.2.gz`, … (numbered, the highest oldest) or
`runs.jsonl-20261130`, `runs.jsonl-20261130.gz`, … (dated, in name order); compressed by
gzip, or by another program (`compresscmd`: `.bz2`, `.xz`, `.zst`). A generation is known
by its first whole line: a runner's first line names a run id and a time of its own, so
no two generations share one.
"""

from __future__ import annotations

import os
from binascii import crc32

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing at start-up
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import BinaryIO

HEAD_MAX = 1 << 16
"""Bytes of the first line that identify a log."""
MAGIC = ((b"\x1f\x8b", "gzip"), (b"BZh", "bz2"), (b"\xfd7zXZ\x00", "lzma"), (b"(\xb5/\xfd", "zstd"))
"""The first bytes of each compression logrotate can be told to use, and its module."""
SUFFIXES = (".gz", ".bz2", ".xz", ".zst")
"""The names compressed generations end with."""


class Unreadable(OSError):
    """A compressed log this Python cannot decompress, or whose data is damaged."""


def open_log(path: str) -> BinaryIO:
    """A log for reading, decompressed when it is compressed (known by its first bytes, not
    its name). Reading it raises EOFError when it is cut short, OSError when it is damaged."""
    handle = open(path, "rb")  # noqa: SIM115 - handed to the caller
    module = _compression(handle.read(6))
    if module is None:
        handle.seek(0)
        return handle
    handle.close()
    if module == "zstd":
        try:
            from compression import zstd  # type: ignore[import-not-found]  # noqa: PLC0415
        except ImportError:
            raise Unreadable(
                "it is zstd-compressed, which Python reads from 3.14 on (zstd -d it)"
            ) from None
        return zstd.open(path, "rb")  # type: ignore[no-any-return]
    import importlib  # noqa: PLC0415 - only for a compressed log

    return _Guarded(importlib.import_module(module).open(path, "rb"))  # type: ignore[return-value]


def is_compressed(path: str) -> bool:
    with open(path, "rb") as handle:
        return _compression(handle.read(6)) is not None


def _compression(first: bytes) -> str | None:
    return next((module for magic, module in MAGIC if first.startswith(magic)), None)


class _Guarded:
    """A decompressing reader whose damaged data is an OSError (lzma raises its own error)."""

    def __init__(self, inner: BinaryIO) -> None:
        self.inner = inner

    def read(self, size: int = -1) -> bytes:
        return self._guard(self.inner.read, size)

    def readline(self, size: int = -1) -> bytes:
        return self._guard(self.inner.readline, size)

    def close(self) -> None:
        self.inner.close()

    def __enter__(self) -> _Guarded:
        return self

    def __exit__(self, *exc: object) -> None:
        self.inner.close()

    @staticmethod
    def _guard(call: Callable[[int], bytes], size: int) -> bytes:
        try:
            return call(size)
        except (OSError, EOFError):
            raise
        except Exception as exc:  # lzma.LZMAError, zlib.error: damaged data
            raise Unreadable(f"damaged compressed data ({exc})") from None


def head_at(fd: int) -> str | None:
    """The first whole line of the plain log open at `fd`, as in head_of (read by position)."""
    return _head(os.pread(fd, HEAD_MAX, 0))


def head_of(path: str) -> str | None:
    """The log's first whole line as its length and CRC-32, or None when it has none yet.

    With the inode, enough to know a log again (binascii loads far faster than hashlib).
    """
    try:
        with open_log(path) as handle:
            return _head(handle.readline(HEAD_MAX))
    except (OSError, EOFError):
        return None


def _head(block: bytes) -> str | None:
    """A first line of more than HEAD_MAX bytes (an inline script) is known by its start."""
    cut = block.find(b"\n")
    if cut < 0:
        return f"{len(block)}+:{crc32(block):08x}" if len(block) >= HEAD_MAX else None
    first = block[: cut + 1]
    return f"{len(first)}:{crc32(first):08x}"


def known_generations(log: str, current: os.stat_result) -> list[tuple[str, str]]:
    """The generations beside `log` (see `generations`), oldest first, with their first lines,
    one file for each first line: a copy of a generation made by hand (`runs.jsonl-old`)
    shares its first line and would be counted twice; the last in order is kept, the one
    logrotate moves along. One with no whole first line yet is left out."""
    found: dict[str | None, str] = {}
    for path in generations(log, current):
        first = head_of(path)
        found.pop(first, None)
        found[first] = path
    return [(path, first) for first, path in found.items() if first is not None]


def generations(log: str, current: os.stat_result) -> list[str]:
    """The rotated files beside `log`, oldest first: named after the log (`runs.jsonl.1`),
    or with its extension kept, as logrotate's `extension .jsonl` names them
    (`runs.1.jsonl`); dated ones by name, numbered ones from the highest number. When
    more than one naming lies beside the log (logrotate's config switched to `dateext` or
    `extension`, or back), the one left behind is older: namings are ordered by when
    their newest generation's first line says it began. A generation both plain and
    compressed (logrotate compressing it right now) is taken plain, since the compressed
    one may be cut short; a file that is the log itself (a link) is left out."""
    namings: dict[tuple[bool, bool], list[tuple[tuple[object, ...], str]]] = {}
    for path, (kept, mark) in _marked(log).items():
        if mark.startswith("-"):
            order: tuple[object, ...] = (_plain(path), path != _plain(path))
        else:
            order = (-int(mark[1:]), path)
        namings.setdefault((kept, not mark.startswith("-")), []).append((order, path))
    named = [[path for _, path in sorted(found)] for _, found in sorted(namings.items())]
    if len(named) > 1:
        named.sort(key=lambda paths: _began(paths[-1]))  # stable: by name when no time says
    ordered = [path for paths in named for path in paths]
    chosen: list[str] = []
    for path in ordered:
        try:
            info = os.stat(path)
        except OSError:
            continue
        itself = (info.st_dev, info.st_ino) == (current.st_dev, current.st_ino)
        if itself or not os.path.isfile(path):
            continue
        if path != _plain(path) and _plain(path) in chosen:
            continue
        chosen.append(path)
    return chosen


_NEVER = float("-inf")


def _began(path: str) -> float:
    """When the first line of the generation at `path` says its attempt started (epoch
    seconds; _NEVER when it says nothing readable, which leaves the order by name)."""
    import re  # noqa: PLC0415 - only when generations of both kinds lie beside the log

    from adapters.timestamps import parse  # noqa: PLC0415

    try:
        with open_log(path) as handle:
            found = re.search(rb'"ts":"([^"\\]{1,64})"', handle.readline(HEAD_MAX))
        return _NEVER if found is None else parse(found.group(1).decode()).timestamp()
    except (OSError, EOFError, ValueError, OverflowError):
        return _NEVER


def named_as_generation(log: str, name: str) -> bool:
    """Whether a file named `name` beside the log named `log` would be taken for one of its
    rotated generations (see `generations`), whether or not there is one now."""
    return _mark(log, name) is not None


def _marked(log: str) -> dict[str, tuple[bool, str]]:
    """The files beside `log` named as its generations are (see `_mark`), with their marks."""
    folder, name = os.path.split(log)
    try:
        names = os.listdir(folder or ".")
    except OSError:
        return {}
    marks = {other: _mark(name, other) for other in names}
    return {os.path.join(folder, other): mark for other, mark in marks.items() if mark}


def _mark(log: str, name: str) -> tuple[bool, str] | None:
    """How the file `name` is named as a generation of the log named `log`: whether its name
    keeps the log's extension (`runs.1.jsonl`), and what it adds to the log's name (`.1`,
    `-20261130`), without that extension and the compression's suffix; None when it is
    not named as one: after the log's name (or its stem), a number after a dot, or a dash."""
    stem, extension = os.path.splitext(log)
    for base, kept in [(log, "")] + ([(stem, extension)] if extension else []):
        if name[len(base) : len(base) + 1] not in ("-", ".") or not name.startswith(base):
            continue
        mark = _plain(name)[len(base) :]
        if kept and not (kept in name[len(base) + 1 :] and mark.endswith(kept)):
            continue
        mark = mark[: len(mark) - len(kept)]
        numbered = mark[1:].isdigit() and mark[1:].isascii()
        return (bool(kept), mark) if mark.startswith("-") or numbered else None
    return None


def _plain(name: str) -> str:
    """`name` without the suffix of a compressed generation."""
    return next((name[: -len(end)] for end in SUFFIXES if name.endswith(end)), name)
