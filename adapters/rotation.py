"""A log's rotated generations: found beside it by logrotate's names, known by their first line.

logrotate leaves `runs.jsonl.1`, `runs.jsonl.2.gz`, … (numbered, the highest oldest) or
`runs.jsonl-20261130`, `runs.jsonl-20261130.gz`, … (dated, in name order). A generation
is known by its first whole line: a runner's first line names a run id and a time of
its own, so no two generations share one.
"""

from __future__ import annotations

import os
from binascii import crc32

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing at start-up
if TYPE_CHECKING:
    from typing import BinaryIO

HEAD_MAX = 1 << 16
"""Bytes of the first line that identify a log."""
GZIP_MAGIC = b"\x1f\x8b"


def open_log(path: str) -> BinaryIO:
    """A log for reading, decompressed when it is gzip (by its first bytes, not its name)."""
    handle = open(path, "rb")  # noqa: SIM115 - handed to the caller
    if handle.read(2) == GZIP_MAGIC:
        handle.close()
        import gzip  # noqa: PLC0415 - only for a compressed log

        return gzip.open(path, "rb")  # type: ignore[return-value]
    handle.seek(0)
    return handle


def is_gzip(path: str) -> bool:
    with open(path, "rb") as handle:
        return handle.read(2) == GZIP_MAGIC


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
    cut = block.find(b"\n")
    if cut < 0:
        return None
    first = block[: cut + 1]
    return f"{len(first)}:{crc32(first):08x}"


def unread(log: str, head: str | None, current: os.stat_result) -> list[str] | None:
    """The generation whose first line is `head`, then every newer one, oldest first; None
    when none has that first line (it was deleted, or the log never had a whole line)."""
    if head is None:
        return None
    found = generations(log, current)
    heads = [head_of(path) for path in found]
    if head not in heads:
        return None
    return found[heads.index(head) :]


def generations(log: str, current: os.stat_result) -> list[str]:
    """The rotated files beside `log`, oldest first: dated ones by name, then numbered ones
    from the highest number. A generation both plain and compressed (logrotate compressing
    it right now) is taken plain, since the compressed one may be cut short; a file that
    is the log itself (a link) is left out."""
    import glob  # noqa: PLC0415 - only after a rotation

    name = os.path.basename(log)
    dated: list[str] = []
    numbered: list[tuple[int, str]] = []
    for path in glob.glob(glob.escape(log) + "[-.]*"):
        rest = os.path.basename(path)[len(name) :]
        stem = rest.removesuffix(".gz")
        if stem.startswith("-"):
            dated.append(path)
        elif stem[1:].isdigit() and stem[1:].isascii():
            numbered.append((int(stem[1:]), path))
    ordered = sorted(dated, key=lambda path: (path.removesuffix(".gz"), path.endswith(".gz")))
    ordered += [path for _, path in sorted(numbered, key=lambda item: (-item[0], item[1]))]
    chosen: list[str] = []
    for path in ordered:
        try:
            info = os.stat(path)
        except OSError:
            continue
        itself = (info.st_dev, info.st_ino) == (current.st_dev, current.st_ino)
        if itself or not os.path.isfile(path):
            continue
        if path.endswith(".gz") and path.removesuffix(".gz") in chosen:
            continue
        chosen.append(path)
    return chosen
