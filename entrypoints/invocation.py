"""What a command line can say: the options of each subcommand, and the Invocation they fill."""

from __future__ import annotations

from domain.policy import Policy

DEFAULT_APPLY_COMMAND = "/opt/fixtures/pyops/bin/apply.sh"
ACTIONS = ("run", "apply", "stats", "applied", "forget", "locks", "setup")

DURATIONS = {
    "--timeout": "timeout",
    "--kill-after": "kill_after",
    "--backoff": "backoff",
    "--max-backoff": "max_backoff",
    "--deadline": "deadline",
    "--lock-wait": "lock_wait",
    "--splay": "splay",
    "--hold": "hold",
    "--every": "every",
    "--idle-timeout": "idle_timeout",
}
PATHS = {
    "--home": "home",
    "--lock": "lock",
    "--prometheus": "prometheus",
    "--checkpoint": "checkpoint",
}
VALUED = frozenset(
    {
        *DURATIONS,
        *PATHS,
        "--retries",
        "--retry-on",
        "--since",
        "--log",
        "--by",
        "--state",
        "--namespace",
        "--connect-timeout",
        "--lease",
        "--schema",
        "--slots",
        "--signal",
        "--conflict-exit-code",
        "--lock-scope",
        "--grant",
        "--label",
        "--name",
        "--retire-after",
        "--ping",
        "--ping-fail-after",
    }
)
FLAGS = {
    "--quiet": "quiet",
    "-q": "quiet",
    "--dry-run": "dry_run",
    "--json": "json",
    "--foreground": "foreground",
    "--replay-stdin": "replay_stdin",
    "--preserve-status": "preserve_status",
    "--output-on-failure": "output_on_failure",
}
GLOBAL = frozenset({"--home", "--quiet", "-q"})
"""Options every subcommand takes, also before the subcommand."""
POLICY = frozenset(
    {*DURATIONS, "--retries", "--retry-on", "--jitter"} - {"--lock-wait", "--hold", "--every"}
)
PROCESS = frozenset(
    {
        "--foreground",
        "--signal",
        "--replay-stdin",
        "--preserve-status",
        "--output-on-failure",
        "--ping",
        "--ping-fail-after",
    }
)
STATE = frozenset({"--state", "--namespace", "--connect-timeout", "--schema", "--lease"})
BUSY = frozenset({"--lock-wait", "--conflict-exit-code"})
ALLOWED = {
    "run": GLOBAL | POLICY | PROCESS | STATE | BUSY | {"--lock", "--slots", "--name", "--hold"},
    "apply": GLOBAL | POLICY | PROCESS | STATE | BUSY | {"--dry-run", "--lock-scope", "--every"},
    "stats": GLOBAL
    | {"--log", "--since", "--by", "--json", "--prometheus", "--label", "--retire-after"}
    | {"--checkpoint"},
    "applied": GLOBAL | STATE - {"--lease"} | {"--json"},
    "forget": GLOBAL | STATE | BUSY | {"--dry-run", "--lock-scope", "--every"},
    "locks": GLOBAL | STATE - {"--lease"} | {"--json"},
    "setup": GLOBAL | STATE - {"--lease"} | {"--grant"},
}
"""The options each subcommand takes."""


class Invocation:
    """What the command line asks for."""

    __slots__ = (
        "action",
        "by",
        "checkpoint",
        "cmd",
        "conflict_exit_code",
        "connect_timeout",
        "dry_run",
        "foreground",
        "grants",
        "home",
        "json",
        "labels",
        "lease",
        "lock",
        "lock_scope",
        "logs",
        "name",
        "namespace",
        "output_on_failure",
        "ping",
        "ping_fail_after",
        "policy",
        "preserve_status",
        "prometheus",
        "quiet",
        "replay_stdin",
        "retire_after",
        "schema",
        "since",
        "slots",
        "state_options",
        "state_url",
        "stop_signal",
        "topic",
    )

    def __init__(self, action: str) -> None:
        self.action = action
        self.cmd: list[str] = []
        self.name = ""
        self.policy = Policy()
        self.home: str | None = None
        self.lock: str | None = None
        self.lock_scope: str | None = None
        self.logs: list[str] = []
        self.grants: list[str] = []
        self.labels: list[tuple[str, str]] = []
        self.prometheus: str | None = None
        self.checkpoint: str | None = None
        self.since: float | None = None
        self.retire_after: float | None = None
        self.by = "cmd"
        self.state_url: str | None = None
        self.state_options: list[str] = []
        """The options given that only a state URL uses (--namespace, --schema, ...)."""
        self.namespace = "default"
        self.schema = "public"
        self.lease = 30.0
        self.slots = 1
        self.connect_timeout = 5.0
        self.json = False
        self.quiet = False
        self.dry_run = False
        self.foreground = False
        self.replay_stdin = False
        self.preserve_status = False
        self.output_on_failure = False
        self.ping: str | None = None
        self.ping_fail_after = 1
        self.stop_signal = 15
        self.conflict_exit_code = 3
        self.topic: str | None = None
