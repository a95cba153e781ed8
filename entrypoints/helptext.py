"""The help's words: each subcommand's synopsis and summary, each option's line, the exit
codes each can give (rendered by `usage.py`, loaded only for help)."""

from __future__ import annotations

SUBCOMMANDS = {
    "run": (
        "run [OPTIONS] [--] CMD [ARG...]",
        "Run CMD (never through a shell): end it when it hangs, retry it when it fails,\n"
        "and exit with its code. Each attempt is one line of <home>/runs.jsonl.",
    ),
    "apply": (
        "apply [OPTIONS] [--dry-run] NAME [-- CMD [ARG...]]",
        "Apply NAME once: under a lock, skip it if marked, else run the command and mark\n"
        "it on success. The command is the one after --; without one, it is\n"
        "$RUNNER_APPLY_COMMAND NAME (unset: /opt/fixtures/pyops/bin/apply.sh NAME).\n"
        "NAME is [A-Za-z0-9][A-Za-z0-9._-]{0,127}.",
    ),
    "stats": (
        "stats [OPTIONS]",
        "Summarize the attempt log: one row per command (or apply name).",
    ),
    "applied": ("applied [OPTIONS]", "List what has been applied."),
    "forget": (
        "forget [OPTIONS] NAME",
        "Forget that NAME was applied, under apply's lock, so that it runs again.",
    ),
    "locks": (
        "locks [OPTIONS]",
        "Show the locks held now: what each holder runs, where, its pid, since when, the\n"
        "lock's fencing token and, for a lease, when it expires.",
    ),
    "setup": (
        "setup --state URL [--schema NAME] [--grant ROLE]...",
        "Create the schema and the state tables, and grant each ROLE exactly what the\n"
        "runner needs there (run it once as a role that may create them).",
    ),
}

SUMMARIES = {
    "run": "run a command: timeout, retries with backoff, signals passed on",
    "apply": "apply a named step once, under a lock, marked on success",
    "stats": "summarize the attempt log (a table, JSON, or Prometheus text)",
    "applied": "list what has been applied",
    "forget": "forget a step, so that its next apply runs again",
    "locks": "show who holds which lock, on this host or across the fleet",
    "setup": "create the PostgreSQL tables and grant a runtime role its rights",
}

DURATIONS_NOTE = """\
DURATION is seconds (1.5) or a number with ms, s, m, h or d (500ms, 30s, 5m), as
coreutils timeout reads it; each option says what 0 means (inf: no limit)."""
FOOTER = (
    DURATIONS_NOTE
    + """
exit: the command's code; apply: 0 applied or already applied, 1 failed;
3 another run holds the lock; 124 timeout; 125 runner error; 126 cannot execute;
127 not found; 128+N ended by signal N."""
)

EXITS = {
    "run": "exit: the command's code; 3 another run holds the --lock; 124 timeout; 125 runner\n"
    "error or a lost lock; 126 cannot execute; 127 not found; 128+N ended by signal N.",
    "apply": "exit: 0 applied, already applied, or --dry-run; 1 failed; 3 another run holds the\n"
    "lock; 125 runner error or a lost lock; 126 cannot execute; 127 not found; 128+N ended by\n"
    "signal N.",
    "stats": "exit: 0; 125 runner error (a log missing or unreadable, another stats updating\n"
    "the checkpoint for 2 minutes, output that cannot be written); 128+N ended by signal N.",
    "applied": "exit: 0; 125 runner error (unusable state, output that cannot be written).",
    "forget": "exit: 0 forgotten, or nothing to forget; 3 another run holds the lock; 125 runner\n"
    "error.",
    "locks": "exit: 0; 125 runner error (unusable state, output that cannot be written).",
    "setup": "exit: 0 the tables are ready; 125 runner error (no server, no right to create).",
}
"""What each subcommand's exit codes mean: only those it can give."""
