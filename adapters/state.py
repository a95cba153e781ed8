"""The state folder: created 0700 on first use, refused when it is not a folder."""

from __future__ import annotations

import os
import stat

from adapters.files import make_folders
from domain.errors import StateError


def ensure_folder(path: str) -> str:
    """Create `path` (mode 0700, as every folder made above it) if missing; raise StateError
    if it cannot be used."""
    try:
        make_folders(path)
    except FileExistsError:
        raise StateError(f"state path {path} exists and is not a folder") from None
    except NotADirectoryError as exc:
        raise StateError(f"cannot create state folder {path}: {exc.filename} is a file") from None
    except OSError as exc:
        raise StateError(f"cannot create state folder {path}: {exc.strerror}") from None
    try:
        mode = os.stat(path).st_mode
    except OSError as exc:
        raise StateError(f"cannot use state folder {path}: {exc.strerror}") from None
    if not stat.S_ISDIR(mode):
        raise StateError(f"state path {path} exists and is not a folder")
    return path
