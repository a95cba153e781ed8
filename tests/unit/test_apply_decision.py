"""Apply names and the apply decision."""

from __future__ import annotations

import pytest

from domain.apply import DryRun, Run, Skip, decide_apply
from domain.errors import UsageError
from domain.words import check_name


@pytest.mark.parametrize("name", ["a", "A9", "db-migrate_1.2", "x" * 128, "0.9.1"])
def test_good_names_pass(name: str) -> None:
    """Letters, digits, '.', '_' and '-' after a letter or digit, up to 128."""
    assert check_name(name) == name


@pytest.mark.parametrize(
    "name",
    ["", ".", "..", "../x", "a/b", "-rf", "_x", ".hidden", "a b", "x" * 129, "é", "a\n", "a\0b"],
)
def test_bad_names_are_usage_errors(name: str) -> None:
    """Anything that could escape the state folder or look like an option is refused."""
    with pytest.raises(UsageError, match="invalid apply name"):
        check_name(name)


def test_long_bad_names_are_shortened_in_the_message() -> None:
    """A 300-character name does not flood the terminal."""
    with pytest.raises(UsageError) as info:
        check_name("/" * 300)
    assert len(str(info.value)) < 200


@pytest.mark.parametrize(
    ("applied", "dry_run", "expected"),
    [(True, False, Skip), (True, True, Skip), (False, True, DryRun), (False, False, Run)],
)
def test_decision(applied: bool, dry_run: bool, expected: type) -> None:
    """An applied name is skipped, dry run or not."""
    assert decide_apply(applied, dry_run) == expected()
