"""One option of the command line and its value: checked, then set on the Invocation.
Pure: raises UsageError, touches nothing."""

from __future__ import annotations

from domain.errors import UsageError
from entrypoints.invocation import DURATIONS, PATHS, STATE, Invocation
from entrypoints.values import (
    LEASE_MAX,
    SLOTS_MAX,
    check_name,
    check_ping_url,
    is_identifier,
    parse_codes,
    parse_count,
    parse_duration,
    parse_exit_code,
    parse_signal,
)


def set_option(invocation: Invocation, option: str, value: str) -> None:
    """Check the value of a valued option (one of VALUED) and set it."""
    policy = invocation.policy
    if option in DURATIONS:
        setattr(policy, DURATIONS[option], parse_duration(value, option))
    elif option == "--retries":
        policy.retries = parse_count(value, option)
    elif option == "--retry-on":
        policy.retry_on = parse_codes(value, option)
    elif option in ("--since", "--retire-after"):
        limit = parse_duration(value, option) or None  # 0: no limit, as for every DURATION
        setattr(invocation, option[2:].replace("-", "_"), limit)
    elif option == "--signal":
        invocation.stop_signal = parse_signal(value, option)
    elif option == "--conflict-exit-code":
        invocation.conflict_exit_code = parse_exit_code(value, option)
    elif option in STATE or option in ("--slots", "--lock-scope", "--grant"):
        _set_state_option(invocation, option, value)
    elif option in ("--by", "--name", "--ping", "--ping-fail-after", "--label"):
        set_naming(invocation, option, value)
    elif not value:
        raise UsageError(
            f"{option} needs a path" + (" (or - for stdin)" if option == "--log" else "")
        )
    elif option == "--log":
        invocation.logs.append(_home_expanded(value))
    else:
        setattr(invocation, PATHS[option], _home_expanded(value))


def _home_expanded(path: str) -> str:
    """`~/x` and `~user/x` as a shell would read them: a path given where no shell runs (a
    systemd unit, a crontab's environment) would otherwise make a folder named `~`."""
    if not path.startswith("~"):
        return path
    import os.path  # noqa: PLC0415 - only for such a path

    return os.path.expanduser(path)


def set_naming(invocation: Invocation, option: str, value: str) -> None:
    """run's --name JOB (apply's rule for names), --ping URL, and stats' --by cmd|name."""
    if option == "--label":
        key, equals, text = value.partition("=")
        reserved = ("cmd", "name", "outcome", "code", "le", "instance", "job")
        if not equals or not is_identifier(key) or key.startswith("__") or key in reserved:
            raise UsageError(
                f"--label: expected KEY=VALUE with KEY a label name of your own, not {value!r}"
            )
        if not _is_utf8(text):
            raise UsageError(f"--label: the value of {key} is not UTF-8 text")
        if any(key == given for given, _ in invocation.labels):
            raise UsageError(f"--label: {key} is given twice (a sample has each label once)")
        invocation.labels.append((key, text))
    elif option == "--ping":
        invocation.ping = check_ping_url(value)
    elif option == "--ping-fail-after":
        invocation.ping_fail_after = parse_count(value, option)
        if invocation.ping_fail_after < 1:
            raise UsageError(f"--ping-fail-after: 1 or more runs in a row, not {value!r}")
    elif option == "--name":
        invocation.name = named(
            value, f"--name: {value!r} is not a valid job name (as apply's NAME)"
        )
    elif value not in ("cmd", "name"):
        raise UsageError(f"--by: expected cmd or name, not {value!r}")
    else:
        invocation.by = value


def _is_utf8(text: str) -> bool:
    """Whether `text` (a command-line word, undecodable bytes as surrogate escapes) is text."""
    try:
        text.encode()
    except UnicodeEncodeError:
        return False
    return True


def named(value: str, refusal: str) -> str:
    """`value` if it is a valid name (as apply's NAME), else UsageError(`refusal`)."""
    try:
        return check_name(value)
    except UsageError:
        raise UsageError(refusal) from None


def scope(value: str, where: str) -> str:
    """A lock scope: home or name (from --lock-scope or $RUNNER_LOCK_SCOPE)."""
    if value not in ("home", "name"):
        raise UsageError(f"{where}: expected home or name, not {value!r}")
    return value


def _set_state_option(invocation: Invocation, option: str, value: str) -> None:
    """The options of the state backends, --slots, --lock-scope and --grant."""
    if option in STATE and option != "--state":
        invocation.state_options.append(option)
    if option == "--lock-scope":
        invocation.lock_scope = scope(value, option)
    elif option == "--grant":
        invocation.grants.append(_identifier(value, option, "role"))
    elif option == "--state":
        if not value:
            raise UsageError("--state needs a URL")
        invocation.state_url = value
    elif option == "--namespace":
        invocation.namespace = named(
            value, f"--namespace: {value!r} is not a valid namespace (as NAME)"
        )
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
    else:
        invocation.schema = _identifier(value, "--schema", "schema")


def _identifier(value: str, option: str, kind: str) -> str:
    """A schema or role name as the runner quotes it: letters, digits and _, at most 63."""
    if not is_identifier(value):
        raise UsageError(
            f"{option}: {value!r} is not a {kind} name (letters, digits and _, "
            "not starting with a digit, at most 63)"
        )
    return value
