"""--ping URL: Healthchecks.io's ping API, so a job that fails or stops running alerts off the host.

`URL/start` when the run starts; when it ends, `URL` on success or `URL/<rc>` on failure
(Healthchecks reads a non-zero exit status as a failure), each with `?rid=` the run id
as a UUID (`f1218cb4-09dc-6bb8-0000-000000000000` for the log's `f1218cb409dc6bb8`),
so the service pairs start and end and measures the run. A query the URL has (a slug
URL's `?create=1`) stays the query, `rid` added to it. With --output-on-failure the
end ping carries the last 10 KB of the output as its body. Every ping has a short
timeout and a few tries; all of a run's pings together add at most BUDGET seconds.
A ping that fails is one warning (the URL is a secret: its UUID is the credential,
so it is never shown) and `ping_failed` on the attempt's log line; the exit code
never changes.
"""

from __future__ import annotations

import time

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing at start-up
if TYPE_CHECKING:
    from collections.abc import Callable

    from domain.attempts import AttemptRecord
    from domain.ports import AttemptSink

BUDGET = 10.0
"""Seconds all the pings of one run may add to it."""
TRY_TIMEOUT = 5.0
"""Seconds one try may take."""
TRIES = 3


class Pinger:
    """The pings of one run, within one time budget."""

    def __init__(self, url: str, run_id: str, warn: Callable[[str], None]) -> None:
        from urllib.parse import urlsplit  # noqa: PLC0415 - only with --ping

        parts = urlsplit(url)
        self.endpoint = f"{parts.scheme}://{parts.netloc}{parts.path.rstrip('/')}"
        """The URL without its query: `/start` or `/<rc>` goes after it."""
        self.query = f"{parts.query}&" if parts.query else ""
        """The URL's own query (a slug URL's `create=1`), kept before `rid=`."""
        digits = f"{run_id:0<32}"[:32]
        self.rid = "-".join((digits[:8], digits[8:12], digits[12:16], digits[16:20], digits[20:]))
        """The run id as Healthchecks wants one, a UUID in canonical form (it refuses any
        other `rid` with a 400): the log's 16 hex digits, then zeros."""
        self.warn = warn
        self.deadline = time.monotonic() + BUDGET
        self.finished = False

    def start(self) -> bool:
        """Say the run started; False when the ping failed."""
        return self._ping("/start", b"")

    def finish(self, rc: int, body: bytes = b"") -> bool:
        """Say how the run ended (once); False when the ping failed."""
        if self.finished:
            return True
        self.finished = True
        return self._ping("" if rc == 0 else f"/{min(rc, 255)}", body)

    def _ping(self, suffix: str, body: bytes) -> bool:
        import urllib.error  # noqa: PLC0415 - only with --ping
        import urllib.request  # noqa: PLC0415

        request = urllib.request.Request(
            f"{self.endpoint}{suffix}?{self.query}rid={self.rid}",
            data=body,
            method="POST",
            headers={"User-Agent": "runner.py"},
        )
        why = "no time left"
        for attempt in range(TRIES):
            left = self.deadline - time.monotonic()
            if left <= 0:
                break
            try:
                with urllib.request.urlopen(request, timeout=min(TRY_TIMEOUT, left)) as answer:
                    if 200 <= answer.status < 300:
                        return True
                    why = f"HTTP {answer.status}"
            except urllib.error.HTTPError as error:
                why = f"HTTP {error.code}"
                if error.code < 500:
                    break  # the service refused it: trying again changes nothing
            except (OSError, ValueError) as error:
                why = type(error).__name__ if isinstance(error, ValueError) else _reason(error)
            if attempt + 1 < TRIES:
                time.sleep(min(0.5 * 2**attempt, max(0.0, self.deadline - time.monotonic())))
        self.warn(f"ping {suffix.lstrip('/') or 'success'} failed ({why}); the run goes on")
        return False


def _reason(error: OSError) -> str:
    reason = getattr(error, "reason", None) or error
    text = getattr(reason, "strerror", None) or str(reason)
    return "timed out" if "timed out" in text else text


class PingingSink:
    """An AttemptSink that pings the end of the run before it writes the run's last line, so
    that line can say the ping failed. `tail` gives the end ping's body."""

    def __init__(self, sink: AttemptSink, pinger: Pinger, tail: Callable[[], bytes]) -> None:
        self.sink = sink
        self.pinger = pinger
        self.tail = tail
        self.start_failed = False

    def record(self, attempt: AttemptRecord) -> None:
        failed = self.start_failed
        if attempt.delay_ms is None:  # no attempt follows: the run ends with this one
            failed = not self.pinger.finish(attempt.rc, self.tail()) or failed
        attempt.ping_failed = failed
        self.sink.record(attempt)
