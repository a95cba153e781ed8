"""The names of a log's rotated generations: one rule, for finding them and for keeping the
textfile off them."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from adapters.rotation import generations, named_as_generation

NAMES = [
    "runs.jsonl.1",
    "runs.jsonl.2.gz",
    "runs.jsonl.10.zst",
    "runs.jsonl-20261130",
    "runs.jsonl-20261201.bz2",
    "runs.jsonl-",
    "runs.1.jsonl",
    "runs.2.jsonl.xz",
    "runs-20261130.jsonl",
    "runs.1.5",
    "runs.1-20261130",
    "runs.2.1",
    "runs.jsonl.prom",
    "runs.jsonl.bak",
    "runs.jsonl.1x",
    "runs.jsonl.\u0661",  # a digit, not an ASCII one
    "runs.jsonl.",
    "runs.x.jsonl",
    "runs.3.jsonl.bak",
    "runs..jsonl",
    "runs.prom",
    "runner.prom",
    ".runs.jsonl.stats-cmd.json",
]


@pytest.mark.parametrize("log", ["runs.jsonl", "runs", "runs.1"])
def test_a_name_is_a_generations_exactly_when_generations_finds_a_file_of_it(
    tmp_path: Path, log: str
) -> None:
    """Every name above as a file beside the log: those `generations` reads are those
    `named_as_generation` says, and no other."""
    for name in [log, *NAMES]:
        (tmp_path / name).write_text("x\n")
    path = str(tmp_path / log)
    found = {os.path.basename(each) for each in generations(path, os.stat(path))}
    named = {name for name in NAMES if named_as_generation(log, name)}
    assert named == found
    assert found  # the names hold generations of each log


def test_the_log_itself_is_no_generation_of_it() -> None:
    assert not named_as_generation("runs.jsonl", "runs.jsonl")
