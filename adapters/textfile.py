"""The Prometheus textfile: checked before the log is read, written whole and renamed."""

from __future__ import annotations

import os
import stat

from adapters import stats_files
from adapters.files import write_atomically
from domain.errors import StateError

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing at start-up
if TYPE_CHECKING:
    from collections.abc import Sequence


def check(path: str, logs: Sequence[str] = (), kept: Sequence[str] = ()) -> None:
    """Raise StateError unless `path` names a regular file or nothing, and nothing `stats`
    reads or keeps (`logs`, and `kept`: see adapters.stats_files). The textfile is renamed over
    it: a symbolic link or a device (`/dev/stdout`, `/dev/null`) would be replaced by a
    file, the system's own nodes too when run as root. A link is refused as logrotate
    refuses to rotate one; `-` writes to stdout."""
    if logs:
        stats_files.check(path, logs, kept, "name a file of its own, such as runner.prom")
    try:
        info = os.lstat(path)
    except OSError:
        info = None  # nothing there yet, or said when it is written
    if info is None:
        folder = os.path.dirname(path) or "."
        if not os.path.isdir(folder):
            raise StateError(f"cannot write {path}: there is no folder {folder}")
        return
    mode = info.st_mode
    if stat.S_ISLNK(mode):
        raise StateError(
            f"cannot write {path}: a symbolic link, which would be replaced by a file "
            "(name the file itself, or write to stdout with --prometheus -)"
        )
    if stat.S_ISDIR(mode):
        raise StateError(f"cannot write {path}: a folder")
    if not stat.S_ISREG(mode):
        raise StateError(
            f"cannot write {path}: not a regular file (write to stdout with --prometheus -)"
        )


def write(path: str, data: bytes, mode: int) -> None:
    """Write the textfile whole (written again every time, so no fsync), with `mode`.
    Raises StateError when it cannot be, or when `path` is not a file to replace (check)."""
    check(path)
    try:
        write_atomically(path, data, mode, durable=False)
    except OSError as exc:
        folder = os.path.dirname(os.path.abspath(path))
        if isinstance(exc, PermissionError) and not os.access(folder, os.W_OK):
            raise StateError(
                f"cannot write {path}: its folder {folder} is not writable (the file is "
                "replaced whole, by a new file renamed over it, so that node_exporter "
                "never reads half of it)"
            ) from None
        raise StateError(f"cannot write {path}: {exc.strerror or exc}") from None
