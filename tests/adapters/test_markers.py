"""FileMarkerStore on a real folder, with the OS made to fail where it matters."""

from __future__ import annotations

import errno
import json
import os
from pathlib import Path

import pytest
from pytest_mock import MockerFixture

from adapters.markers import FileMarkerStore
from domain.errors import StateError


def test_write_then_exists(tmp_path: Path) -> None:
    """The marker is NAME.done and holds name, time, run id, command and host."""
    store = FileMarkerStore(str(tmp_path / "state"))
    assert not store.exists("db")
    store.write("db", when=0.0, run_id="r1", cmd=["apply.sh", "db"])
    assert store.exists("db")
    body = json.loads((tmp_path / "state" / "db.done").read_text())
    assert body["name"] == "db"
    assert body["run_id"] == "r1"
    assert body["cmd"] == ["apply.sh", "db"]
    assert body["host"] == os.uname().nodename
    assert body["time"].startswith(("1970-01-01T", "1969-12-31T"))
    assert sorted(os.listdir(tmp_path / "state")) == ["db.done"]


def test_write_is_fsynced_and_renamed_into_place(tmp_path: Path, mocker: MockerFixture) -> None:
    """The file and then its folder are fsynced; the marker appears by rename."""
    fsync = mocker.spy(os, "fsync")
    rename = mocker.spy(os, "rename")
    FileMarkerStore(str(tmp_path)).write("db", when=0.0, run_id="r", cmd=["x"])
    assert fsync.call_count == 2
    source, target = rename.call_args.args
    assert target == str(tmp_path / "db.done")
    assert not os.path.exists(source)


@pytest.mark.parametrize("failing", ["write", "fsync", "rename"])
def test_a_full_disk_leaves_no_marker_and_no_temporary(
    tmp_path: Path, mocker: MockerFixture, failing: str
) -> None:
    """ENOSPC at any step: StateError naming the problem, and the folder as it was."""
    mocker.patch(
        f"adapters.markers.os.{failing}", side_effect=OSError(errno.ENOSPC, "No space left")
    )
    store = FileMarkerStore(str(tmp_path))
    with pytest.raises(StateError, match="No space left"):
        store.write("db", when=0.0, run_id="r", cmd=["x"])
    assert os.listdir(tmp_path) == []


def test_a_short_write_is_a_failure(tmp_path: Path, mocker: MockerFixture) -> None:
    """A write that lands only partly never becomes a marker."""
    mocker.patch("adapters.markers.os.write", return_value=3)
    with pytest.raises(StateError):
        FileMarkerStore(str(tmp_path)).write("db", when=0.0, run_id="r", cmd=["x"])
    assert os.listdir(tmp_path) == []


def test_a_marker_that_cannot_be_checked_is_a_state_error(
    tmp_path: Path, mocker: MockerFixture
) -> None:
    """EACCES on the check is not taken for 'not applied'."""
    mocker.patch("adapters.markers.os.lstat", side_effect=PermissionError(errno.EACCES, "denied"))
    with pytest.raises(StateError, match="denied"):
        FileMarkerStore(str(tmp_path)).exists("db")
