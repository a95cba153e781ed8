"""The command line, read into an Invocation. Pure: raises UsageError, touches nothing.

Hand-written rather than argparse: it is a few lines, and argparse alone would
cost more start-up time than everything else the runner imports.
"""

from __future__ import annotations

from domain.errors import UsageError
from domain.policy import Policy

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing at start-up
if TYPE_CHECKING:
    from collections.abc import Mapping

DEFAULT_APPLY_COMMAND = "/opt/fixtures/pyops/bin/apply.sh"
ACTIONS = ("run", "apply", "stats", "applied", "forget")

_UNITS = {"s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}
_DURATIONS = {
    "--timeout": "timeout",
    "--kill-after": "kill_after",
    "--backoff": "backoff",
    "--max-backoff": "max_backoff",
    "--deadline": "deadline",
    "--lock-wait": "lock_wait",
}
_PATHS = {
    "--home": "home",
    "--lock": "lock",
    "--log": "log",
    "--prometheus": "prometheus",
    "--state": "state_url",
}
_VALUED = (
    *_DURATIONS,
    *_PATHS,
    "--retries",
    "--retry-on",
    "--since",
    "--by",
    "--namespace",
    "--connect-timeout",
    "--lease",
    "--schema",
    "--slots",
)
_FLAGS = {
    "--quiet": "quiet",
    "-q": "quiet",
    "--dry-run": "dry_run",
    "--jitter": "jitter",
    "--json": "json",
}
_EVERYWHERE = frozenset({"--home", "--quiet", "-q"})
_POLICY = frozenset({*_DURATIONS, "--retries", "--retry-on", "--jitter"} - {"--lock-wait"})
_STATE = frozenset({"--state", "--namespace", "--connect-timeout", "--schema", "--lease"})
ALLOWED = {
    "run": _EVERYWHERE | _POLICY | _STATE | {"--lock", "--lock-wait", "--slots"},
    "apply": _EVERYWHERE | _POLICY | _STATE | {"--dry-run", "--lock-wait"},
    "stats": _EVERYWHERE | {"--log", "--since", "--by", "--json", "--prometheus"},
    "applied": _EVERYWHERE | _STATE | {"--json"},
    "forget": _EVERYWHERE | _STATE | {"--dry-run", "--lock-wait"},
}
"""The options each subcommand takes."""
CODE_MAX = 255
SLOTS_MAX = 255
"""The most holders a run --lock may allow at once."""
LEASE_MAX = 86400.0
"""Seconds: the longest --lease (the server's keepalive settings must be able to hold it)."""
COUNT_MAX = 1_000_000_000
"""The largest --retries: more attempts than a run could ever make."""
SMALLEST = 1e-9
"""Seconds: a positive duration too small to represent rounds up to this."""
FOREVER = 100 * 365 * 86400.0
"""Seconds: a duration too large to represent (or inf) means this, no practical limit."""
_FLOAT_CHARS = frozenset("0123456789.e+-infty")


class Invocation:
    """What the command line asks for."""

    __slots__ = (
        "action",
        "by",
        "cmd",
        "connect_timeout",
        "dry_run",
        "home",
        "json",
        "lease",
        "lock",
        "log",
        "name",
        "namespace",
        "policy",
        "prometheus",
        "quiet",
        "schema",
        "since",
        "slots",
        "state_url",
    )

    def __init__(self, action: str) -> None:
        self.action = action
        self.cmd: list[str] = []
        self.name = ""
        self.policy = Policy()
        self.home: str | None = None
        self.lock: str | None = None
        self.log: str | None = None
        self.prometheus: str | None = None
        self.since: float | None = None
        self.by = "cmd"
        self.state_url: str | None = None
        self.namespace = "default"
        self.schema = "public"
        self.lease = 30.0
        self.slots = 1
        self.connect_timeout = 5.0
        self.json = False
        self.quiet = False
        self.dry_run = False


def check_name(name: str) -> str:
    """apply's rule for names (loaded only by the subcommands that take one)."""
    from domain.apply import check_name as check  # noqa: PLC0415 - not on run's path

    return check(name)


def parse_duration(text: str, option: str) -> float:
    """Seconds from `1.5`, `30s`, `5m`, `2h` or `1d`, as coreutils `timeout` reads them.

    A positive value too small to represent rounds up to the smallest (a nanosecond);
    one too large (or `inf`) means no practical limit (FOREVER); negative, NaN and
    malformed values are usage errors.
    """
    number, scale = (text[:-1], _UNITS[text[-1]]) if text[-1:] in _UNITS else (text, 1.0)
    try:
        if not number.isascii() or not number or not _FLOAT_CHARS.issuperset(number.lower()):
            raise ValueError
        value = float(number)
    except ValueError:
        raise UsageError(f"{option}: invalid duration {text!r} (e.g. 1.5, 30s, 5m, 2h)") from None
    if not value >= 0:
        raise UsageError(f"{option}: duration must be zero or more, not {text!r}")
    seconds = value * scale
    if seconds == 0 and any(digit in "123456789" for digit in number.lower().partition("e")[0]):
        return SMALLEST
    return min(seconds, FOREVER)


def parse_count(text: str, option: str) -> int:
    if not text.isdigit() or not text.isascii():
        raise UsageError(f"{option}: expected a whole number of zero or more, not {text!r}")
    if len(text.lstrip("0")) > len(str(COUNT_MAX)) or int(text) > COUNT_MAX:
        raise UsageError(f"{option}: at most {COUNT_MAX}, not {_shown(text)}")
    return int(text)


def _is_identifier(text: str) -> bool:
    """[A-Za-z_][A-Za-z0-9_]{0,62}: a schema name that needs no quoting rules of its own."""
    letters = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_"
    return (
        0 < len(text) <= 63
        and text[0] in letters
        and all(char in letters or char in "0123456789" for char in text)
    )


def _shown(text: str) -> str:
    """`text` for a message: a long one is cut, with its length."""
    return repr(text) if len(text) <= 40 else f"{text[:20]!r}... ({len(text)} characters)"


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
        raise UsageError(f"missing subcommand: {', '.join(ACTIONS)} (see --help)")
    first = argv[0]
    if first in ("-h", "--help", "help"):
        return Invocation("help")
    if first == "--version":
        return Invocation("version")
    if first not in ACTIONS:
        raise UsageError(f"unknown subcommand {first!r}: use {', '.join(ACTIONS)} (see --help)")
    invocation = Invocation(first)
    words, command = _read_options(invocation, argv[1:])
    if invocation.action != "help":
        _read_words(invocation, words, command, env)
        if invocation.home is None:
            invocation.home = env.get("RUNNER_HOME") or None
        if invocation.action in ("run", "apply", "applied", "forget"):
            _read_state(invocation, env)
    return invocation


def _read_state(invocation: Invocation, env: Mapping[str, str]) -> None:
    """--state URL or $RUNNER_STATE_URL: PostgreSQL instead of the state folder.

    With a state URL, run's --lock is a lock NAME held in PostgreSQL, not a file.
    """
    url = invocation.state_url or env.get("RUNNER_STATE_URL") or None
    if url is not None and not url.startswith(("postgresql://", "postgres://")):
        raise UsageError("--state: expected a postgresql://user@host:port/db URL")
    invocation.state_url = url
    if invocation.action == "run" and url is not None and invocation.lock is not None:
        try:
            check_name(invocation.lock)
        except UsageError:
            raise UsageError(
                f"--lock: with a state URL, --lock takes a lock NAME (as apply's), "
                f"not {invocation.lock!r}"
            ) from None


def _read_words(
    invocation: Invocation, words: list[str], command: list[str] | None, env: Mapping[str, str]
) -> None:
    """The positional words of each subcommand: a command, a NAME, or none."""
    action = invocation.action
    if action == "run":
        if invocation.policy.lock_wait and invocation.lock is None:
            raise UsageError("--lock-wait goes with --lock FILE")
        if invocation.slots != 1 and invocation.lock is None:
            raise UsageError("--slots goes with --lock")
        invocation.cmd = words + (command or [])
        if not invocation.cmd:
            raise UsageError("run: missing command (runner.py run [OPTIONS] -- CMD [ARG...])")
    elif action == "apply":
        _read_apply(invocation, words, command, env)
    elif action == "forget":
        if len(words) != 1 or command is not None:
            raise UsageError("forget: give exactly one NAME (runner.py forget [--dry-run] NAME)")
        invocation.name = check_name(words[0])
    elif words or command is not None:
        extra = (words or command or ["--"])[0]
        raise UsageError(f"{action}: unexpected argument {extra!r}")


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
        option, has_value, value = word.partition("=")
        if option not in _VALUED and option not in _FLAGS:
            raise UsageError(f"unknown option {option!r} (see --help)")
        if option not in ALLOWED[invocation.action]:
            raise UsageError(f"{option} is not an option of {invocation.action}")
        if option in _FLAGS:
            if has_value:
                raise UsageError(f"{option} takes no value")
            target = invocation.policy if option == "--jitter" else invocation
            setattr(target, _FLAGS[option], True)
            continue
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
    elif option == "--since":
        invocation.since = parse_duration(value, option)
    elif option in _STATE or option == "--slots":
        _set_state_option(invocation, option, value)
    elif option == "--by":
        if value not in ("cmd", "name"):
            raise UsageError(f"--by: expected cmd or name, not {value!r}")
        invocation.by = value
    elif not value:
        raise UsageError(f"{option} needs a path")
    else:
        setattr(invocation, _PATHS[option], value)


def _set_state_option(invocation: Invocation, option: str, value: str) -> None:
    """The options of the state backends, and --slots."""
    if option == "--state":
        if not value:
            raise UsageError("--state needs a URL")
        invocation.state_url = value
    elif option == "--namespace":
        try:
            invocation.namespace = check_name(value)
        except UsageError:
            raise UsageError(f"--namespace: {value!r} is not a valid namespace (as NAME)") from None
    elif option == "--connect-timeout":
        invocation.connect_timeout = parse_duration(value, option)
    elif option == "--lease":
        invocation.lease = parse_duration(value, option)
        if not 0.1 <= invocation.lease <= LEASE_MAX:
            raise UsageError(f"--lease: from 0.1s to {LEASE_MAX:.0f}s, not {value!r}")
    elif option == "--slots":
        invocation.slots = parse_count(value, option)
        if not 1 <= invocation.slots <= SLOTS_MAX:
            raise UsageError(f"--slots: from 1 to {SLOTS_MAX}, not {value!r}")
    elif option == "--schema":
        if not _is_identifier(value):
            raise UsageError(
                f"--schema: {value!r} is not a schema name (letters, digits and _, "
                "not starting with a digit, at most 63)"
            )
        invocation.schema = value
