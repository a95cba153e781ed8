"""The help text."""

VERSION = "0.3.0"

USAGE = """\
usage: runner.py run [OPTIONS] [--] CMD [ARG...]
       runner.py apply [OPTIONS] [--dry-run] NAME [-- CMD [ARG...]]
       runner.py stats [--log FILE] [--since DURATION] [--by cmd|name] [--json]
                       [--prometheus FILE]
       runner.py applied [--json]
       runner.py forget [--dry-run] NAME

Run an external command safely: ended when it hangs, retried with exponential
backoff when it fails, applied once when it must not run twice.

run and apply options:
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
  --lock FILE            run only: hold an exclusive flock on FILE, or exit 3;
                         with a state URL, a lock NAME held in PostgreSQL
  --slots N              run --lock: at most N holders at once (default 1)
  --lock-wait DURATION   wait this long for a busy lock before exit 3 (default 0)
  --dry-run              apply, forget: say what would be done; change nothing

stats options:
  --log FILE             the attempt log to read (default: <home>/runs.jsonl)
  --since DURATION       only runs that started this long ago or later
  --by cmd|name          one row per command (default) or per apply name
  --json                 print one JSON document instead of a table (also applied)
  --prometheus FILE      write the figures for node_exporter's textfile collector

state in PostgreSQL (run, apply, applied, forget):
  --state URL            postgresql://user@host:port/db (default: $RUNNER_STATE_URL)
  --namespace NS         which locks, tokens and markers (default: default)
  --schema NAME          the schema of the runner's tables (default: public)
  --lease DURATION       a silent server is a lost lock after this long (default 30s)
  --connect-timeout DURATION  give up connecting after this long (default 5s)

every subcommand:
  --home DIR             keep state/ and runs.jsonl in DIR (default: $RUNNER_HOME,
                         else the folder of runner.py)
  -q, --quiet            print errors only
  -h, --help             show this help; --version shows the version

DURATION is seconds (1.5) or a number with s, m, h or d (30s, 5m); 0 means no limit,
as does inf.
apply runs $RUNNER_APPLY_COMMAND NAME (default: /opt/fixtures/pyops/bin/apply.sh NAME)
unless a command follows --. NAME is [A-Za-z0-9][A-Za-z0-9._-]{0,127}.

exit: the command's code; apply: 0 applied or already applied, 1 failed;
3 another run holds the lock; 124 timeout; 125 runner error; 126 cannot execute;
127 not found; 128+N ended by signal N.
"""
