"""write_atomically with the real filesystem: whole files, and no trust in a shared folder."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from pytest_mock import MockerFixture

from adapters.files import IOV_MAX, _write_all, write_atomically


def test_a_link_planted_at_the_old_temporary_name_is_not_followed(tmp_path: Path) -> None:
    """Regression: `.NAME.PID.tmp` was predictable and opened through a planted symlink."""
    victim = tmp_path / "victim"
    victim.write_text("keep me")
    planted = tmp_path / f".runner.prom.{os.getpid()}.tmp"
    planted.symlink_to(victim)
    write_atomically(str(tmp_path / "runner.prom"), b"metrics\n")
    assert victim.read_text() == "keep me"
    assert (tmp_path / "runner.prom").read_bytes() == b"metrics\n"


def test_the_temporary_file_is_new_private_and_unpredictable(
    tmp_path: Path, mocker: MockerFixture
) -> None:
    """O_EXCL | O_NOFOLLOW, mode 0600, a fresh random name each time, in the target's folder."""
    opened: list[tuple[str, int, int]] = []
    real_open = os.open

    def spy(path: str, flags: int, mode: int = 0o777) -> int:
        opened.append((path, flags, mode))
        return real_open(path, flags, mode)

    mocker.patch("adapters.files.os.open", side_effect=spy)
    for _ in range(2):
        write_atomically(str(tmp_path / "out"), b"x", 0o644)
    temporaries = [entry for entry in opened if entry[0].endswith(".tmp")]
    assert len(temporaries) == 2
    assert temporaries[0][0] != temporaries[1][0]
    for name, flags, mode in temporaries:
        assert os.path.dirname(name) == str(tmp_path)
        assert flags & os.O_EXCL
        assert flags & os.O_NOFOLLOW
        assert mode == 0o600
    assert (tmp_path / "out").stat().st_mode & 0o777 == 0o644
    assert [p.name for p in tmp_path.iterdir()] == ["out"]


def test_a_failed_write_leaves_no_temporary_file(tmp_path: Path, mocker: MockerFixture) -> None:
    """ENOSPC mid-write: the error propagates, the old file stays, nothing is left beside it."""
    target = tmp_path / "out"
    target.write_bytes(b"old")
    mocker.patch("adapters.files.os.write", return_value=1)
    with pytest.raises(OSError, match="No space"):
        write_atomically(str(target), b"new data")
    mocker.patch("adapters.files.os.writev", return_value=1)
    with pytest.raises(OSError, match="No space"):
        write_atomically(str(target), [b"new", memoryview(b" data")])
    assert target.read_bytes() == b"old"
    assert [p.name for p in tmp_path.iterdir()] == ["out"]


def test_a_file_is_written_from_its_pieces_in_order_however_many(tmp_path: Path) -> None:
    """Pieces are written as they are, beyond the most one writev takes; a full disk is
    known whichever write falls short."""
    whole = bytes(range(256)) * 40
    pieces: list[bytes | memoryview] = [memoryview(whole)[n : n + 3] for n in range(0, 10240, 3)]
    assert len(pieces) > 3 * IOV_MAX
    write_atomically(str(tmp_path / "out"), pieces)
    assert (tmp_path / "out").read_bytes() == whole


def test_a_piece_cut_short_on_a_full_disk_is_an_error(tmp_path: Path) -> None:
    """A real full disk: /dev/full takes nothing."""
    fd = os.open("/dev/full", os.O_WRONLY)
    try:
        with pytest.raises(OSError, match="No space"):
            _write_all(fd, [b"x", memoryview(b"yz")])
    finally:
        os.close(fd)


def test_a_textfile_in_a_folder_it_may_not_write_says_the_folder_is_why(
    tmp_path: Path, mocker: MockerFixture
) -> None:
    """Regression: a textfile the user may write, in a folder they may not (a collector's
    folder owned by root, the file handed over), failed with a bare `Permission denied`,
    which its own mode contradicts. The message says the folder is why: the file is
    replaced whole, by a rename beside it."""
    from adapters.stats_files import write_textfile
    from domain.errors import StateError

    out = tmp_path / "runner.prom"
    out.write_text("")
    mocker.patch(
        "adapters.stats_files.write_atomically",
        side_effect=PermissionError(13, "Permission denied"),
    )
    mocker.patch("adapters.stats_files.os.access", return_value=False)
    with pytest.raises(StateError, match=r"its folder .* is not writable"):
        write_textfile(str(out), b"x 1\n", 0o644)


def test_folders_are_made_private_and_a_file_above_is_named(tmp_path: Path) -> None:
    """Every folder made is 0700 (os.makedirs leaves those above at 0755); a file standing
    above the folder is named, not taken for the folder itself (`state path … exists and
    is not a folder`, said of a path that did not exist)."""
    from adapters.files import make_folders
    from adapters.state import ensure_folder
    from domain.errors import StateError

    make_folders(str(tmp_path / "a" / "b" / "c"))
    modes = [(tmp_path / name).stat().st_mode & 0o777 for name in ("a", "a/b", "a/b/c")]
    assert modes == [0o700] * 3
    (tmp_path / "file").write_text("")
    with pytest.raises(NotADirectoryError) as above:
        make_folders(str(tmp_path / "file" / "x" / "state"))
    assert above.value.filename == str(tmp_path / "file")
    with pytest.raises(StateError, match=r"cannot create state folder .*: .*/file is a file"):
        ensure_folder(str(tmp_path / "file" / "state"))
    with pytest.raises(StateError, match="exists and is not a folder"):
        ensure_folder(str(tmp_path / "file"))
