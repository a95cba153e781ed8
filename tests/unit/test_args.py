"""The command line."""

from __future__ import annotations

import os
import signal

import pytest

from domain.errors import UsageError
from entrypoints.args import parse
from entrypoints.invocation import DEFAULT_APPLY_COMMAND
from entrypoints.values import FOREVER, SMALLEST, parse_duration, parse_signal


@pytest.mark.parametrize("text", ["INT", "SIGINT", "int", "sigint", "2"])
def test_signals_by_name_or_number(text: str) -> None:
    """As timeout's -s: a name with or without SIG, in any case, or the number."""
    assert parse_signal(text, "--signal") == signal.SIGINT


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("0", 0), ("1.5", 1.5), ("30s", 30), ("5m", 300), ("2h", 7200), ("1d", 86400), ("0.5m", 30)],
)
def test_durations(text: str, seconds: float) -> None:
    """Seconds, or a number with s, m, h, d, as coreutils timeout reads them."""
    assert parse_duration(text, "--timeout") == seconds


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("1e-10000", SMALLEST),
        ("0e-10000", 0),
        ("inf", FOREVER),
        ("1e400", FOREVER),
        ("1e9d", FOREVER),
    ],
)
def test_durations_out_of_range_are_clamped(text: str, seconds: float) -> None:
    """Too small (but positive) is the smallest duration; too large is no practical limit."""
    assert parse_duration(text, "--timeout") == seconds


@pytest.mark.parametrize(
    "text", ["", "abc", "-1", "nan", "-inf", "5x", "s", "1 ", "--1", "1_0", "\u0661"]
)
def test_bad_durations(text: str) -> None:
    """Negative, NaN and malformed durations are usage errors."""
    with pytest.raises(UsageError, match="--timeout"):
        parse_duration(text, "--timeout")


def test_run_with_every_option() -> None:
    """Options after the subcommand, both --opt VALUE and --opt=VALUE."""
    inv = parse(
        [
            "run",
            "--timeout",
            "5",
            "--kill-after=1",
            "--retries",
            "3",
            "--backoff",
            "0.2",
            "--home",
            "/h",
            "-q",
            "--",
            "echo",
            "--timeout",
        ],
        {},
    )
    assert inv.cmd == ["echo", "--timeout"]
    assert (inv.policy.timeout, inv.policy.kill_after) == (5, 1)
    assert (inv.policy.retries, inv.policy.backoff) == (3, 0.2)
    assert (inv.home, inv.quiet) == ("/h", True)


def test_run_command_starts_at_the_first_word() -> None:
    """Without --, the first word that is not an option starts the command."""
    assert parse(["run", "ls", "-l"], {}).cmd == ["ls", "-l"]


def test_defaults() -> None:
    """No limit, 10 s grace, no retries, 1 s backoff, home from RUNNER_HOME."""
    inv = parse(["run", "true"], {"RUNNER_HOME": "/srv/r"})
    policy = inv.policy
    assert (policy.timeout, policy.kill_after, policy.retries, policy.backoff) == (0, 10, 0, 1)
    assert inv.home == "/srv/r"


def test_home_option_beats_the_environment() -> None:
    """--home wins over RUNNER_HOME."""
    assert parse(["run", "--home", "/a", "true"], {"RUNNER_HOME": "/b"}).home == "/a"


def test_apply_default_command_and_environment_override() -> None:
    """apply.sh NAME by default; RUNNER_APPLY_COMMAND replaces the program."""
    assert parse(["apply", "x"], {}).cmd == [DEFAULT_APPLY_COMMAND, "x"]
    assert parse(["apply", "x"], {"RUNNER_APPLY_COMMAND": "/bin/mk"}).cmd == ["/bin/mk", "x"]


def test_apply_with_command_and_options_around_the_name() -> None:
    """NAME may stand among the options; the command follows --."""
    inv = parse(["apply", "--dry-run", "x", "--retries", "2", "--", "make", "x"], {})
    assert (inv.name, inv.dry_run, inv.policy.retries, inv.cmd) == ("x", True, 2, ["make", "x"])


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        ([], "missing subcommand"),
        (["bogus"], "unknown subcommand"),
        (["run"], "missing command"),
        (["run", "--"], "missing command"),
        (["run", "--bogus", "true"], "unknown option '--bogus'"),
        (["run", "--timeout"], "needs a value"),
        (["run", "--timeout", "abc", "true"], "--timeout"),
        (["run", "--retries", "-1", "true"], "--retries"),
        (["run", "--retries", "1.5", "true"], "--retries"),
        (["run", "--dry-run", "true"], "--dry-run"),
        (["run", "--home=", "true"], "--home"),
        (["apply"], "missing NAME"),
        (["apply", "../x"], "invalid apply name"),
        (["apply", "--", "-rf"], "missing NAME"),
        (["apply", "a", "b"], "unexpected argument"),
        (["apply", "a", "--"], "missing command after --"),
        (["stats", "--label", "a=b", "--label", "a=c"], "--label: a is given twice"),
    ],
)
def test_usage_errors(argv: list[str], message: str) -> None:
    """Bad input is a UsageError with a message that says what is wrong."""
    with pytest.raises(UsageError, match=message):
        parse(argv, {})


@pytest.mark.parametrize("argv", [["--help"], ["-h"], ["run", "--help"], ["apply", "-h"]])
def test_help_anywhere(argv: list[str]) -> None:
    """--help before or after the subcommand."""
    assert parse(argv, {}).action == "help"


def test_retry_policy_options() -> None:
    """--retry-on with ranges, --max-backoff, --jitter, --deadline, --lock, --lock-wait."""
    inv = parse(
        [
            "run",
            "--retry-on",
            "1-3,124",
            "--max-backoff=1m",
            "--jitter",
            "--deadline",
            "2h",
            "--lock",
            "/run/job.lock",
            "--lock-wait",
            "30s",
            "true",
        ],
        {},
    )
    policy = inv.policy
    assert policy.retry_on == frozenset({1, 2, 3, 124})
    assert (policy.max_backoff, policy.jitter, policy.deadline) == (60, True, 7200)
    assert (inv.lock, policy.lock_wait) == ("/run/job.lock", 30)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["run", "--retry-on", "", "true"], "--retry-on"),
        (["run", "--retry-on", "0", "true"], "from 1 to 255"),
        (["run", "--retry-on", "256", "true"], "from 1 to 255"),
        (["run", "--retry-on", "5-3", "true"], "from 1 to 255"),
        (["run", "--retry-on", "1,x", "true"], "--retry-on"),
        (["run", "--retry-on", "1-", "true"], "--retry-on"),
        (["run", "--retry-on", "120-130", "true"], "never retried"),
        (["run", "--max-backoff", "-1", "true"], "--max-backoff"),
        (["run", "--deadline", "nan", "true"], "--deadline"),
        (["run", "--lock-wait", "5", "true"], "--lock-wait goes with --lock"),
        (["run", "--lock", "", "true"], "--lock needs a path"),
        (["apply", "--lock", "/x", "a"], "--lock is not an option of apply"),
    ],
)
def test_retry_policy_usage_errors(argv: list[str], message: str) -> None:
    """Every new value is validated like the others."""
    with pytest.raises(UsageError, match=message):
        parse(argv, {})


@pytest.mark.parametrize(
    "url",
    [
        "https://hc-ping.com/5f2b7c1e-secret",
        "http://127.0.0.1:8000/ping/secret",
        "http://[::1]:8000/ping/secret",
        "HTTPS://hc-ping.com/secret",
    ],
)
def test_ping_urls(url: str) -> None:
    """Any http(s) URL with a host (and a valid port, if any), from --ping or the environment."""
    assert parse(["run", "--ping", url, "true"], {}).ping == url
    assert parse(["run", "true"], {"RUNNER_PING_URL": url}).ping == url


@pytest.mark.parametrize(
    "url",
    [
        "file:///etc/secret",
        "hc-ping.com/secret",
        "http://",
        "https:///secret",
        "http://[::1/secret",
        "http://host:99999/secret",
        "http://host:x/secret",
        "http://host/se cret",
        "http://host/secret\n",
        "http://host/se\x7fcret",
        "http://host\t/secret",
        "http://host/s\u00e9cret",
        "http://h\u00f3st/secret",
    ],
)
def test_bad_ping_urls_are_usage_errors_that_never_show_the_url(url: str) -> None:
    """Refused before the command runs, from the option and from the environment alike; the
    URL is a credential, so the message never holds it."""
    with pytest.raises(UsageError, match=r"^--ping: ") as refused:
        parse(["run", "--ping", url, "true"], {})
    assert "secret" not in str(refused.value)
    with pytest.raises(UsageError, match=r"^RUNNER_PING_URL: ") as refused:
        parse(["run", "true"], {"RUNNER_PING_URL": url})
    assert "secret" not in str(refused.value)


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"RUNNER_JOB_NAME": "bad name"}, r"^RUNNER_JOB_NAME: 'bad name' is not a valid job name"),
        ({"RUNNER_STATE_URL": "mysql://x"}, r"^RUNNER_STATE_URL: expected a postgresql://"),
    ],
)
def test_a_bad_value_from_the_environment_is_named_by_its_variable(
    env: dict[str, str], message: str
) -> None:
    """Regression: RUNNER_JOB_NAME and RUNNER_STATE_URL were refused as --name and --state,
    options the command line did not hold."""
    with pytest.raises(UsageError, match=message):
        parse(["run", "--lock", "x", "true"], env)


@pytest.mark.parametrize("option", ["--since", "--retire-after"])
def test_a_zero_window_is_no_limit_as_every_duration_says(option: str) -> None:
    """Regression: `--since 0` kept no run at all ("no runs in that time"), where the help
    says of every DURATION that 0 means no limit, as `--retire-after 0` read it."""
    assert getattr(parse(["stats", option, "0"], {}), option[2:].replace("-", "_")) is None
    assert getattr(parse(["stats", option, "5m"], {}), option[2:].replace("-", "_")) == 300


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("500ms", 0.5),
        (" 5", 5.0),
        ("\t2m", 120.0),
        ("0x10", 16.0),
        ("0x1.8p1s", 3.0),
        ("1.5ms", 0.0015),
    ],
)
def test_durations_are_read_as_coreutils_timeout_reads_them(text: str, seconds: float) -> None:
    """Regression: `--backoff 500ms` was refused though the runner writes 500ms itself, and
    ` 5` and `0x10` were refused though coreutils `timeout` (strtod) reads them."""
    assert parse_duration(text, "--backoff") == pytest.approx(seconds)


@pytest.mark.parametrize("text", ["5 ", "ms", "0x", "1e", "5mss", "0xg", "0x10 "])
def test_durations_that_no_reader_takes_are_refused(text: str) -> None:
    """Trailing spaces, a unit alone or a number cut short: usage errors naming the value."""
    with pytest.raises(UsageError, match="invalid duration"):
        parse_duration(text, "--backoff")


def test_a_path_starting_with_a_tilde_is_the_home_s() -> None:
    """Regression: `--checkpoint '~/x.json'` where no shell runs (systemd) made a folder
    named `~`; a leading `~` is read as a shell reads it."""
    invocation = parse(["stats", "--checkpoint", "~/x.json", "--log", "~/runs.jsonl"], {})
    assert invocation.checkpoint == os.path.expanduser("~/x.json")
    assert invocation.logs == [os.path.expanduser("~/runs.jsonl")]


def test_help_help_is_the_overview() -> None:
    """Regression: `runner.py help help` was an unknown subcommand."""
    assert parse(["help", "help"], {}).action == "help"
