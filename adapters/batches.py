"""A log read in batches of whole lines, memory bounded whatever the lines are; and cut into
pieces at line boundaries, for one process each."""

from __future__ import annotations

import os

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing at start-up
if TYPE_CHECKING:
    from collections.abc import Iterator
    from typing import BinaryIO

    from adapters.logfile import At

BATCH_BYTES = 1 << 20
"""Lines are read about a mebibyte at a time."""

MAX_LINE_BYTES = 16 << 20
"""A longer line is malformed, skipped without being held whole (memory stays bounded)."""


def cut(handle: BinaryIO | At, limit: int | None) -> Iterator[tuple[bytes, int, int]]:
    """Whole lines in the next `limit` bytes (None: to the end), joined by newlines, with how
    many there are (empty ones included: `nonblank` tells them) and how many were skipped,
    too long to keep; memory stays within BATCH_BYTES + MAX_LINE_BYTES.

    A file read by position (`At`) is read again from the start of a block's last, cut-off
    line: no block is copied onto the tail of the one before."""
    remaining = limit
    carry = b""
    skipping = False
    back = getattr(handle, "back", None)
    while remaining is None or remaining > 0:
        block = handle.read(BATCH_BYTES if remaining is None else min(BATCH_BYTES, remaining))
        if not block:
            break
        if remaining is not None:
            remaining -= len(block)
        if skipping:
            cut = block.find(b"\n")
            if cut < 0:
                continue
            block, skipping = block[cut + 1 :], False
        last = block.rfind(b"\n")
        chunk, count, overlong = b"", 0, 0
        if last < 0:
            carry += block
        else:
            chunk = block[:last] if not carry else carry + block[:last]
            count = chunk.count(b"\n") + 1
            carry = block[last + 1 :]
            if back is not None and carry:  # read again with the next block, not kept
                back(len(carry))
                if remaining is not None:
                    remaining += len(carry)
                carry = b""
        if len(carry) > MAX_LINE_BYTES:
            carry, skipping, overlong = b"", True, 1
        yield chunk, count, overlong
    if carry and not skipping:
        yield carry, 1, 0


_BLANKS = b"\n\n"


def nonblank(chunk: bytes) -> tuple[bytes, int, int]:
    """`chunk` (lines joined by newlines) without its empty lines, how many lines are left,
    and how many were empty. Runs of empty lines are taken out at once, not one by one (a
    gzip of newlines costs what its size says)."""
    total = chunk.count(b"\n") + 1
    if _BLANKS in chunk:
        import re  # noqa: PLC0415 - only for a batch with empty lines

        chunk = re.sub(rb"\n\n+", b"\n", chunk)
    chunk = chunk.strip(b"\n")
    count = chunk.count(b"\n") + 1 if chunk else 0
    return chunk, count, total - count


def pieces(fd: int, start: int, end: int, parts: int) -> list[int]:
    """Byte offsets that cut [start, end) of the file into `parts` pieces at line boundaries."""
    bounds = [start]
    for n in range(1, parts):
        bounds.append(min(_next_line(fd, max(bounds[-1], start + (end - start) * n // parts)), end))
    bounds.append(end)
    return sorted(set(bounds))


def _next_line(fd: int, position: int) -> int:
    """The offset just past the next newline at or after `position` (or the end)."""
    while block := os.pread(fd, 1 << 16, position):
        cut = block.find(b"\n")
        if cut >= 0:
            return position + cut + 1
        position += len(block)
    return position
