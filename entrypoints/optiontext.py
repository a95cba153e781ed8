"""The help's table of options: each option's metavar, what it does, and its default (for a
DURATION, what 0 means)."""

from __future__ import annotations

OPTIONS = {
    "--timeout": (
        "DURATION",
        "end an attempt after this long: the --signal to its process group, exit 124",
        "0, no limit",
    ),
    "--idle-timeout": (
        "DURATION",
        "end an attempt that writes nothing to stdout or stderr for this long, as a timeout "
        "(writes seen where they land; to /dev/null or a socket, through the runner)",
        "0, no limit",
    ),
    "--kill-after": (
        "DURATION",
        "SIGKILL this long after the --signal, if still running",
        "10s; 0 waits for ever",
    ),
    "--signal": (
        "SIG",
        "the signal sent on timeout or a lost lock, by name or number; KILL skips the grace",
        "TERM",
    ),
    "--foreground": (
        "",
        (
            "keep the command in the runner's process group and terminal (sudo, ssh and git can "
            "prompt; Ctrl-C and Ctrl-Z reach it); on timeout only the command itself is signalled"
        ),
        "off",
    ),
    "--retries": (
        "N",
        "try again up to N more times on failure",
        "0",
    ),
    "--backoff": (
        "DURATION",
        "wait backoff * 2**(attempt-1) before each retry",
        "1s; 0 retries at once",
    ),
    "--retry-on": (
        "CODES",
        "retry only these exit codes, e.g. 1,75,124 or 1-3,124",
        "every failure but 126 and 127",
    ),
    "--max-backoff": (
        "DURATION",
        "no single wait is longer than this",
        "0, no cap",
    ),
    "--jitter": (
        "",
        "wait a random time between 0 and the capped backoff",
        "off",
    ),
    "--deadline": (
        "DURATION",
        "a budget for the whole run, waits (for a retry or the lock) included",
        "0, none",
    ),
    "--splay": (
        "DURATION",
        "wait a random time below this before the lock and the first attempt (within --deadline)",
        "0, none",
    ),
    "--replay-stdin": (
        "",
        (
            "keep piped stdin in a private temporary file, so every attempt reads the same bytes "
            "(a regular file is re-read from its start anyway)"
        ),
        "off: a pipe is read once",
    ),
    "--lock": (
        "FILE|NAME",
        (
            "run only as the holder of a lock: a FILE path (with a /) is flocked as flock(1) "
            "does; a NAME is kept in the home's state folder, or with a state URL in PostgreSQL"
        ),
        "none",
    ),
    "--every": (
        "PERIOD",
        "apply, forget: once per PERIOD (aligned to the epoch, in UTC, by the state's clock): "
        "the marker counts for the period it was applied in",
        "0: once, for ever",
    ),
    "--hold": (
        "DURATION",
        "with --lock: keep the lock taken this long after it was taken, however soon the run "
        "ends (ShedLock's lockAtLeastFor): once per period across a fleet",
        "0, none",
    ),
    "--slots": (
        "N",
        "with --lock: at most N holders at once",
        "1",
    ),
    "--name": (
        "JOB",
        "run: the job's name (apply's rule), in the log as `name`, for stats --by name and metrics",
        "$RUNNER_JOB_NAME, else none",
    ),
    "--output-on-failure": (
        "",
        "as chronic: keep the command's output in private files and show it only if the run "
        "fails, each attempt's in order",
        "off: passed through",
    ),
    "--ping": (
        "URL",
        "Healthchecks ping URL: URL/start, then URL on success or URL/RC on failure, with the "
        "run id; never printed",
        "$RUNNER_PING_URL, else none",
    ),
    "--ping-fail-after": (
        "N",
        "ping a failure as /log (the check stays up) until N runs of the job in a row have "
        "failed, counted from the log; then /RC",
        "1: every failure",
    ),
    "--preserve-status": (
        "",
        "as timeout --preserve-status: a timed-out attempt ends with the command's own "
        "status (143 for TERM), not 124",
        "off",
    ),
    "--retire-after": (
        "DURATION",
        "stats: leave out of the export the series of a job not run for this long (its "
        "counters then vanish)",
        "0, never",
    ),
    "--label": (
        "KEY=VALUE",
        "stats: a constant label on every exported sample (repeatable), so that the "
        "textfiles of several homes never collide",
        "none",
    ),
    "--lock-scope": (
        "home|name",
        "home: one lock for every apply (the default); name: steps of other names run beside",
        "$RUNNER_LOCK_SCOPE, else home",
    ),
    "--grant": (
        "ROLE",
        "setup: grant ROLE the use of the schema and its tables (repeatable)",
        "none",
    ),
    "--lock-wait": (
        "DURATION",
        "wait this long, queued, for a busy lock",
        "0: no wait, exit 3 at once",
    ),
    "--conflict-exit-code": (
        "N",
        "the exit code when another run holds the lock",
        "3",
    ),
    "--dry-run": (
        "",
        "say what would be done; change nothing",
        "off",
    ),
    "--state": (
        "URL",
        "keep the lock (and markers) in PostgreSQL: postgresql://user@host:port/db",
        "$RUNNER_STATE_URL, else the state folder",
    ),
    "--namespace": (
        "NS",
        "which locks, tokens and markers in PostgreSQL",
        "default",
    ),
    "--schema": (
        "NAME",
        "the PostgreSQL schema of the runner's tables",
        "public",
    ),
    "--lease": (
        "DURATION",
        "a silent server is a lost lock after this long (0.1s to a day)",
        "30s",
    ),
    "--connect-timeout": (
        "DURATION",
        "give up connecting to PostgreSQL after this long",
        "5s; 0 leaves it to each call's own bound",
    ),
    "--log": (
        "FILE",
        "the attempt log to read (repeatable, oldest first; compressed ones too; - for stdin)",
        "<home>/runs.jsonl",
    ),
    "--since": (
        "DURATION",
        "only runs of the current log that started this long ago or later (exported: gauges)",
        "0, all",
    ),
    "--by": (
        "cmd|name",
        "one row per command or per apply name",
        "cmd",
    ),
    "--json": (
        "",
        "print one JSON document instead of a table",
        "off",
    ),
    "--prometheus": (
        "FILE",
        "write the figures for node_exporter's textfile collector (-: to stdout, alone)",
        "none",
    ),
    "--checkpoint": (
        "FILE",
        "stats: keep the log's history counted so far, and where it stopped, in FILE (one "
        "for each log and --by), where the log's folder cannot be written",
        "beside the log: .<log>.stats-<by>.json",
    ),
    "--home": (
        "DIR",
        "keep state/ and runs.jsonl in DIR",
        (
            "$RUNNER_HOME, else runner.py's folder (installed: $XDG_STATE_HOME/runner or "
            "~/.local/state/runner)"
        ),
    ),
    "--quiet": (
        "",
        "print no diagnostic but errors (also -q); what was asked for still prints",
        "off",
    ),
}
