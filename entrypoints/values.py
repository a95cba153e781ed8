"""Values on the command line: durations, counts, exit codes, signals, names. Pure."""

from __future__ import annotations

import signal

from domain.errors import UsageError

CODE_MAX = 255
COUNT_MAX = 1_000_000_000
"""The largest --retries: more attempts than a run could ever make."""
SLOTS_MAX = 255
"""The most holders a run --lock may allow at once."""
LEASE_MAX = 86400.0
"""Seconds: the longest --lease (the server's keepalive settings must be able to hold it)."""
SMALLEST = 1e-9
"""Seconds: a positive duration too small to represent rounds up to this."""
FOREVER = 100 * 365 * 86400.0
"""Seconds: a duration too large to represent (or inf) means this, no practical limit."""
_UNITS = {"s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}
_FLOAT_CHARS = frozenset("0123456789.e+-infty")


def check_name(name: str) -> str:
    """apply's rule for names (loaded only by the subcommands that take one)."""
    from domain.words import check_name as check  # noqa: PLC0415 - not on run's path

    return check(name)


def parse_duration(text: str, option: str) -> float:
    """Seconds from `1.5`, `500ms`, `30s`, `5m`, `2h` or `1d`, as coreutils `timeout` reads
    them (spaces before the number, and hexadecimal `0x10`, too).

    A positive value too small to represent rounds up to the smallest (a nanosecond);
    one too large (or `inf`) means no practical limit (FOREVER); negative, NaN and
    malformed values are usage errors.
    """
    spaced = text.lstrip(" \t\n")  # as strtod, which coreutils `timeout` reads with
    if _is_hex(spaced):  # strtod reads every hexadecimal digit first: 0x1d is 29 seconds
        number, scale = spaced, 1.0
    elif spaced.endswith("ms"):  # as the runner writes a duration itself: 500ms
        number, scale = spaced[:-2], 0.001
    elif spaced[-1:] in _UNITS:
        number, scale = spaced[:-1], _UNITS[spaced[-1]]
    else:
        number, scale = spaced, 1.0
    try:
        if not number.isascii() or not number or number != number.rstrip():
            raise ValueError
        if number.lower().lstrip("+").startswith("0x"):  # a hexadecimal number, as strtod
            value = float.fromhex(number)
        elif _FLOAT_CHARS.issuperset(number.lower()):
            value = float(number)
        else:
            raise ValueError
    except ValueError:
        raise UsageError(
            f"{option}: invalid duration {text!r} (e.g. 1.5, 500ms, 30s, 5m, 2h)"
        ) from None
    if not value >= 0:
        raise UsageError(f"{option}: duration must be zero or more, not {text!r}")
    seconds = value * scale
    if seconds == 0 and any(digit in "123456789" for digit in number.lower().partition("e")[0]):
        return SMALLEST
    return min(seconds, FOREVER)


def _is_hex(text: str) -> bool:
    """Whether `text` is a whole hexadecimal number, suffix-free (`0x1d`, `0x1.8p1`)."""
    try:
        hexadecimal = text.lower().lstrip("+").startswith("0x") and text == text.rstrip()
        return hexadecimal and text.isascii() and float.fromhex(text) >= 0
    except ValueError:
        return False


def parse_count(text: str, option: str) -> int:
    if not text.isdigit() or not text.isascii():
        raise UsageError(f"{option}: expected a whole number of zero or more, not {text!r}")
    if len(text.lstrip("0")) > len(str(COUNT_MAX)) or int(text) > COUNT_MAX:
        raise UsageError(f"{option}: at most {COUNT_MAX}, not {shown(text)}")
    return int(text)


def is_identifier(text: str) -> bool:
    """[A-Za-z_][A-Za-z0-9_]{0,62}: a schema name that needs no quoting rules of its own."""
    letters = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_"
    return (
        0 < len(text) <= 63
        and text[0] in letters
        and all(char in letters or char in "0123456789" for char in text)
    )


def shown(text: str) -> str:
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


def parse_signal(text: str, option: str) -> int:
    """A signal by name (TERM, SIGTERM, term) or number (15), as timeout's -s reads it;
    0 sends nothing (as `timeout -s 0`: only --kill-after then ends the command)."""
    name = text.upper().removeprefix("SIG")
    if text == "0":
        return 0
    try:
        number = int(text) if text.isdigit() and text.isascii() else signal.Signals["SIG" + name]
        return int(signal.Signals(number))
    except (KeyError, ValueError):
        raise UsageError(
            f"{option}: {shown(text)} is not a signal (e.g. TERM, INT, QUIT, 9)"
        ) from None


def parse_exit_code(text: str, option: str) -> int:
    code = parse_count(text, option)
    if code > CODE_MAX:
        raise UsageError(f"{option}: an exit code is 0 to {CODE_MAX}, not {shown(text)}")
    return code


def check_ping_url(url: str, source: str = "--ping") -> str:
    """`url` if it is an http(s) URL with a host (and a port from 1 to 65535, if any), all
    in printable ASCII; else UsageError, naming `source`. The URL is a credential (its path
    holds the check's key), so no message shows it."""
    from urllib.parse import urlsplit  # noqa: PLC0415 - only with --ping

    why = "expected an http:// or https:// URL (a Healthchecks ping)"
    if not url.isascii() or not url.isprintable() or " " in url:
        why = "the URL holds a space, a control or a non-ASCII character (write it as %XX)"
    else:
        try:
            parts = urlsplit(url)
            port = parts.port
        except ValueError:
            why = "the URL's host or port is malformed"
        else:
            if parts.scheme in ("http", "https") and parts.hostname and port != 0:
                return url
            if parts.scheme in ("http", "https"):
                why = "the URL has no host" if not parts.hostname else "the URL's port is 0"
    raise UsageError(f"{source}: {why}")
