"""The command line, read into an Invocation. Pure: raises UsageError, touches nothing.

Hand-written rather than argparse: it is a few lines, and argparse alone would
cost more start-up time than everything else the runner imports.
"""

from __future__ import annotations

from domain.errors import UsageError
from entrypoints.invocation import (
    ACTIONS,
    ALLOWED,
    DEFAULT_APPLY_COMMAND,
    FLAGS,
    GLOBAL,
    VALUED,
    Invocation,
)
from entrypoints.options import named, scope, set_option
from entrypoints.values import check_name, check_ping_url

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing at start-up
if TYPE_CHECKING:
    from collections.abc import Mapping


def parse(argv: list[str], env: Mapping[str, str]) -> Invocation:
    """Read `argv`: global options, a subcommand, its options and words."""
    invocation = Invocation("")
    index = 0
    while index < len(argv) and argv[index].startswith("-") and argv[index] != "-":
        word = argv[index]
        if word in ("-h", "--help"):
            return Invocation("help")
        if word in ("-V", "--version"):
            return Invocation("version")
        index = _take_option(invocation, argv, index, GLOBAL)
    if index >= len(argv):
        raise UsageError(f"missing subcommand: {', '.join(ACTIONS)} (see --help)")
    first = argv[index]
    if first == "help":
        return _help(argv[index + 1 :])
    if first not in ACTIONS:
        raise _unknown("subcommand", first, [*ACTIONS, "help"])
    invocation.action = first
    words, command = _read_options(invocation, argv[index + 1 :])
    if invocation.action != "help":
        _read_words(invocation, words, command, env)
        _complete(invocation, env)
    return invocation


def _complete(invocation: Invocation, env: Mapping[str, str]) -> None:
    """What the environment gives that the command line did not, and checks across options."""
    action = invocation.action
    if invocation.home is None:
        invocation.home = env.get("RUNNER_HOME") or None
    if action in ("run", "apply", "applied", "forget", "locks", "setup"):
        _read_state(invocation, env)
    if action in ("run", "apply") and invocation.ping is None and env.get("RUNNER_PING_URL"):
        invocation.ping = check_ping_url(env["RUNNER_PING_URL"], "RUNNER_PING_URL")
    policy = invocation.policy
    if policy.every and (policy.every < 1 or policy.every != int(policy.every)):
        raise UsageError("--every: a whole number of seconds, 1s or more (e.g. 1h, 1d)")
    if policy.splay and policy.deadline and policy.splay >= policy.deadline:
        raise UsageError("--splay is waited within the --deadline: give it less than the deadline")
    if invocation.ping_fail_after > 1 and invocation.ping is None:
        raise UsageError("--ping-fail-after goes with --ping URL (or RUNNER_PING_URL)")
    if invocation.stop_signal == 0 and invocation.policy.kill_after == 0:
        raise UsageError("--signal 0 sends nothing: give --kill-after a grace to end with")
    if action in ("apply", "forget") and invocation.lock_scope is None:
        invocation.lock_scope = scope(env.get("RUNNER_LOCK_SCOPE") or "home", "RUNNER_LOCK_SCOPE")
    if invocation.json and invocation.prometheus == "-":
        raise UsageError("--json and --prometheus - both write to stdout: give the text a file")
    if invocation.checkpoint is not None and (len(invocation.logs) > 1 or "-" in invocation.logs):
        raise UsageError("--checkpoint keeps the history of one log file: give one --log, not -")


def _help(words: list[str]) -> Invocation:
    """`help` or `help SUB`."""
    invocation = Invocation("help")
    if words == ["help"]:  # help about help: the overview, which says how to ask for more
        return invocation
    if words:
        if words[0] not in ACTIONS or len(words) > 1:
            raise _unknown("subcommand", " ".join(words), list(ACTIONS))
        invocation.topic = words[0]
    return invocation


def _unknown(kind: str, word: str, *choices: list[str]) -> UsageError:
    """An unknown word, with the closest known one when there is one (first choices first)."""
    from difflib import get_close_matches  # noqa: PLC0415 - only on a mistake

    close = next((m for c in choices for m in get_close_matches(word, c, n=1, cutoff=0.6)), None)
    hint = f" (did you mean {close}?)" if close else ""
    return UsageError(f"unknown {kind} {word!r}{hint}; see --help")


def _read_state(invocation: Invocation, env: Mapping[str, str]) -> None:
    """--state URL or $RUNNER_STATE_URL: PostgreSQL instead of the state folder.

    With a state URL, run's --lock is a lock NAME held in PostgreSQL, not a file.
    """
    url = invocation.state_url or env.get("RUNNER_STATE_URL") or None
    if url is not None and not url.startswith(("postgresql://", "postgres://")):
        source = "--state" if invocation.state_url else "RUNNER_STATE_URL"
        raise UsageError(f"{source}: expected a postgresql://user@host:port/db URL")
    invocation.state_url = url
    if url is None and invocation.state_options and invocation.action != "setup":
        given = invocation.state_options[0]
        raise UsageError(
            f"{given} is for a state in PostgreSQL: give --state URL or set RUNNER_STATE_URL "
            f"(without one, the lock and markers are this host's, and {given} would mean nothing)"
        )
    if invocation.action == "run" and url is None and invocation.lock is not None:
        _lock_name_or_path(invocation.lock)
    leased = url is not None and (invocation.action == "apply" or invocation.lock is not None)
    if leased and invocation.policy.kill_after == 0 and invocation.stop_signal != 9:
        raise UsageError(
            "--kill-after 0 with a --state lock: a lost lease could never be bounded "
            "(give the command a grace, or --signal KILL)"
        )
    if leased and invocation.foreground:
        raise UsageError(
            "--foreground with a --state lock: a lost lease must stop everything the "
            "command started, which --foreground does not"
        )
    if invocation.action == "run" and url is not None and invocation.lock is not None:
        try:
            check_name(invocation.lock)
        except UsageError:
            raise UsageError(
                f"--lock: with a state URL, --lock takes a lock NAME (as apply's), "
                f"not {invocation.lock!r}"
            ) from None


def _lock_name_or_path(lock: str) -> None:
    """A --lock with a `/` is a file path (as flock's); without one, a lock NAME kept in the
    home's state folder, whatever the current folder (or an error)."""
    if "/" not in lock:
        try:
            check_name(lock)
        except UsageError:
            raise UsageError(
                f"--lock: {lock!r} is not a lock NAME (letters, digits, '.', '_' or '-'); "
                f"for a file in this folder, give ./{lock}"
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
        if invocation.policy.hold and invocation.lock is None:
            raise UsageError("--hold goes with --lock: it keeps the lock taken")
        invocation.cmd = words + (command or [])
        if not invocation.cmd:
            raise UsageError("run: missing command (runner.py run [OPTIONS] -- CMD [ARG...])")
        if not invocation.name and env.get("RUNNER_JOB_NAME"):
            name = env["RUNNER_JOB_NAME"]
            refusal = f"RUNNER_JOB_NAME: {name!r} is not a valid job name (as apply's NAME)"
            invocation.name = named(name, refusal)
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
        if word == "--":
            return words, args[index + 1 :]
        if not word.startswith("-") or word == "-":
            words.append(word)
            index += 1
            if invocation.action == "run":
                return words + args[index:], None
            continue
        if word in ("-h", "--help"):
            invocation.topic, invocation.action = invocation.action, "help"
            return [], None
        index = _take_option(invocation, args, index, ALLOWED[invocation.action])
    return words, None


def _take_option(
    invocation: Invocation, args: list[str], index: int, allowed: frozenset[str]
) -> int:
    """Apply the option at `args[index]` (with its value); return the index after it."""
    option, has_value, value = args[index].partition("=")
    index += 1
    if option not in VALUED and option not in FLAGS and option != "--jitter":
        everything = sorted(VALUED | set(FLAGS) | {"--jitter"})
        raise _unknown("option", option, sorted(allowed), everything)
    if option not in allowed:
        where = invocation.action or "the runner before its subcommand"
        raise UsageError(f"{option} is not an option of {where}")
    if option in FLAGS or option == "--jitter":
        if has_value:
            raise UsageError(f"{option} takes no value")
        target = invocation.policy if option == "--jitter" else invocation
        setattr(target, "jitter" if option == "--jitter" else FLAGS[option], True)
        return index
    if not has_value:
        if index >= len(args):
            raise UsageError(f"{option} needs a value")
        value = args[index]
        index += 1
    set_option(invocation, option, value)
    return index
