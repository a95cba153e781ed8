"""The apply decision: run the command, skip it, or only say what would happen."""

from __future__ import annotations

from domain.errors import UsageError

_NAME_FIRST = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789")
_NAME_REST = _NAME_FIRST | frozenset("._-")
NAME_MAX = 128


def check_name(name: str) -> str:
    """Return `name` if it matches [A-Za-z0-9][A-Za-z0-9._-]{0,127}, else raise UsageError."""
    if (
        not 0 < len(name) <= NAME_MAX
        or name[0] not in _NAME_FIRST
        or not _NAME_REST.issuperset(name)
    ):
        shown = name if len(name) <= 40 else name[:37] + "..."
        raise UsageError(
            f"invalid apply name {shown!r}: use 1 to {NAME_MAX} letters, digits, '.', '_' "
            "or '-', starting with a letter or digit"
        )
    return name


class Skip:
    """The marker exists: nothing to do."""

    __slots__ = ()


class DryRun:
    """Only say what would be done."""

    __slots__ = ()


class Run:
    """Run the command, then write the marker if it succeeded."""

    __slots__ = ()


ApplyDecision = Skip | DryRun | Run


def decide_apply(applied: bool, dry_run: bool) -> ApplyDecision:
    """Choose what apply does, given whether the marker exists."""
    if applied:
        return Skip()
    if dry_run:
        return DryRun()
    return Run()


_SAFE = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789@%+=:,./-_")


def shell_words(cmd: list[str]) -> str:
    """The command as a shell user would type it (for messages only; never executed)."""
    return " ".join(
        arg if arg and _SAFE.issuperset(arg) else "'" + arg.replace("'", "'\"'\"'") + "'"
        for arg in cmd
    )
