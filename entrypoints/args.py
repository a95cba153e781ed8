"""The command line, read into an Invocation. Pure: raises UsageError, touches nothing.

Hand-written rather than argparse: it is a few lines, and argparse alone would
cost more start-up time than everything else the runner imports.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from domain.apply import check_name
from domain.errors import UsageError
from domain.policy import Policy

if TYPE_CHECKING:
    from collections.abc import Mapping

VERSION = "0.1.0"
DEFAULT_APPLY_COMMAND = "/opt/fixtures/pyops/bin/apply.sh"

USAGE = """\
usage: runner.py run [OPTIONS] [--] CMD [ARG...]
       runner.py apply [OPTIONS] [--dry-run] NAME [-- CMD [ARG...]]

Run an external command safely: ended when it hangs, retried with exponential
backoff when it fails, applied once when it must not run twice.

options (after the subcommand):
  --timeout DURATION     end an attempt after this long: SIGTERM to its process
                         group, exit 124 (default 0: no limit)
  --kill-after DURATION  SIGKILL the group this long after SIGTERM (default 10s)
  --retries N            try again up to N more times on failure (default 0)
  --backoff DURATION     wait backoff * 2**(attempt-1) before each retry (default 1s)
  --retry-on CODES       retry only these exit codes, e.g. 1,75,124 or 1-3,124
                         (default: every failure but 126 and 127)
  --max-backoff DURATION no single wait is longer than this (default 0: no cap)
  --jitter               wait a random time between 0 and the capped backoff
  --deadline DURATION    a budget for the whole run, waits included (default 0: none)
  --lock FILE            run only: hold an exclusive flock on FILE, or exit 3
  --lock-wait DURATION   wait this long for a busy lock before exit 3 (default 0)
  --home DIR             keep state/ and runs.jsonl in DIR (default: $RUNNER_HOME,
                         else the folder of runner.py)
  --dry-run              apply only: say what would be done; run and write nothing
  -q, --quiet            print errors only
  -h, --help             show this help; --version shows the version

DURATION is seconds (1.5) or a number with s, m, h or d (30s, 5m); 0 means no limit.
apply runs $RUNNER_APPLY_COMMAND NAME (default: /opt/fixtures/pyops/bin/apply.sh NAME)
unless a command follows --. NAME is [A-Za-z0-9][A-Za-z0-9._-]{0,127}.

exit: the command's code; apply: 0 applied or already applied, 1 failed;
3 another run holds the lock; 124 timeout; 125 runner error; 126 cannot execute;
127 not found; 128+N ended by signal N.
"""

_UNITS = {"s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}
_DURATIONS = {
    "--timeout": "timeout",
    "--kill-after": "kill_after",
    "--backoff": "backoff",
    "--max-backoff": "max_backoff",
    "--deadline": "deadline",
    "--lock-wait": "lock_wait",
}
_VALUED = (*_DURATIONS, "--retries", "--retry-on", "--home", "--lock")
_FLAGS = {"--quiet": "quiet", "-q": "quiet", "--dry-run": "dry_run", "--jitter": "jitter"}
CODE_MAX = 255


class Invocation:
    """What the command line asks for."""

    __slots__ = ("action", "cmd", "dry_run", "home", "lock", "name", "policy", "quiet")

    def __init__(self, action: str) -> None:
        self.action = action
        self.cmd: list[str] = []
        self.name = ""
        self.policy = Policy()
        self.home: str | None = None
        self.lock: str | None = None
        self.quiet = False
        self.dry_run = False


def parse_duration(text: str, option: str) -> float:
    """Seconds from `1.5`, `30s`, `5m`, `2h` or `1d`; negative or non-finite is an error."""
    number, scale = (text[:-1], _UNITS[text[-1]]) if text[-1:] in _UNITS else (text, 1.0)
    try:
        if number.strip() != number:
            raise ValueError
        seconds = float(number) * scale
    except ValueError:
        raise UsageError(f"{option}: invalid duration {text!r} (e.g. 1.5, 30s, 5m, 2h)") from None
    if not 0 <= seconds < float("inf"):
        raise UsageError(f"{option}: duration must be zero or more and finite, not {text!r}")
    return seconds


def parse_count(text: str, option: str) -> int:
    if not text.isdigit() or not text.isascii():
        raise UsageError(f"{option}: expected a whole number of zero or more, not {text!r}")
    return int(text)


def parse_codes(text: str, option: str) -> frozenset[int]:
    """Exit codes from `1,75,124` or ranges `1-3,124`; each 1 to 255, never 126 or 127."""
    codes: set[int] = set()
    for part in text.split(","):
        low, dash, high = part.partition("-")
        try:
            first = parse_count(low, option)
            last = parse_count(high, option) if dash else first
        except UsageError:
            raise UsageError(
                f"{option}: expected codes like 1,75,124 or 1-3, not {text!r}"
            ) from None
        if not 1 <= first <= last <= CODE_MAX:
            raise UsageError(f"{option}: {part!r} is not a range of exit codes from 1 to 255")
        codes.update(range(first, last + 1))
    if codes & {126, 127}:
        raise UsageError(f"{option}: 126 and 127 (cannot execute, not found) are never retried")
    return frozenset(codes)


def parse(argv: list[str], env: Mapping[str, str]) -> Invocation:
    if not argv:
        raise UsageError("missing subcommand: run or apply (see --help)")
    first = argv[0]
    if first in ("-h", "--help", "help"):
        return Invocation("help")
    if first == "--version":
        return Invocation("version")
    if first not in ("run", "apply"):
        raise UsageError(f"unknown subcommand {first!r}: use run or apply (see --help)")
    invocation = Invocation(first)
    words, command = _read_options(invocation, argv[1:])
    if invocation.action == "help":
        return invocation
    if first == "run":
        if invocation.dry_run:
            raise UsageError("--dry-run is an apply option")
        if invocation.policy.lock_wait and invocation.lock is None:
            raise UsageError("--lock-wait goes with --lock FILE")
        invocation.cmd = words + (command or [])
        if not invocation.cmd:
            raise UsageError("run: missing command (runner.py run [OPTIONS] -- CMD [ARG...])")
    else:
        if invocation.lock is not None:
            raise UsageError("--lock is a run option; apply always locks <home>/state/lock")
        _read_apply(invocation, words, command, env)
    if invocation.home is None:
        invocation.home = env.get("RUNNER_HOME") or None
    return invocation


def _read_apply(
    invocation: Invocation, words: list[str], command: list[str] | None, env: Mapping[str, str]
) -> None:
    if not words:
        raise UsageError("apply: missing NAME (runner.py apply [OPTIONS] NAME [-- CMD...])")
    invocation.name = check_name(words[0])
    if len(words) > 1:
        raise UsageError(f"apply: unexpected argument {words[1]!r}; put a command after --")
    if command == []:
        raise UsageError("apply: missing command after --")
    default = [env.get("RUNNER_APPLY_COMMAND") or DEFAULT_APPLY_COMMAND, invocation.name]
    invocation.cmd = command or default


def _read_options(invocation: Invocation, args: list[str]) -> tuple[list[str], list[str] | None]:
    """Apply the options in `args`; return the other words and the words after `--`.

    For run, the command starts at `--` or at the first word that is not an option;
    for apply, NAME may stand among the options.
    """
    words: list[str] = []
    index = 0
    while index < len(args):
        word = args[index]
        index += 1
        if word == "--":
            return words, args[index:]
        if not word.startswith("-") or word == "-":
            words.append(word)
            if invocation.action == "run":
                return words + args[index:], None
            continue
        if word in ("-h", "--help"):
            invocation.action = "help"
            return [], None
        if word in _FLAGS:
            target = invocation.policy if word == "--jitter" else invocation
            setattr(target, _FLAGS[word], True)
            continue
        option, has_value, value = word.partition("=")
        if option not in _VALUED:
            raise UsageError(f"unknown option {option!r} (see --help)")
        if not has_value:
            if index >= len(args):
                raise UsageError(f"{option} needs a value")
            value = args[index]
            index += 1
        _set_option(invocation, option, value)
    return words, None


def _set_option(invocation: Invocation, option: str, value: str) -> None:
    policy = invocation.policy
    if option in _DURATIONS:
        setattr(policy, _DURATIONS[option], parse_duration(value, option))
    elif option == "--retries":
        policy.retries = parse_count(value, option)
    elif option == "--retry-on":
        policy.retry_on = parse_codes(value, option)
    elif not value:
        raise UsageError(f"{option} needs a path")
    elif option == "--home":
        invocation.home = value
    else:
        invocation.lock = value
