"""--ping URL: Healthchecks.io's ping API, so a job that fails or stops running alerts off the host.

`URL/start` when the run starts; when it ends, `URL` on success or `URL/<rc>` on failure
(Healthchecks reads a non-zero exit status as a failure), each with `?rid=` the run id
as a UUID (`f1218cb4-09dc-6bb8-0000-000000000000` for the log's `f1218cb409dc6bb8`),
so the service pairs start and end and measures the run. A query the URL has (a slug
URL's `?create=1`) stays the query, `rid` added to it. With --output-on-failure the
end ping carries the end of the output as its body: as many bytes as the service keeps
(its `Ping-Body-Limit` header, else BODY_LIMIT), a first line saying what was cut.
Every ping has a short timeout and a few tries; the pings' own time is counted, never
the command's: all of a run's pings together add at most BUDGET seconds, the start ping
at most half of it, so the end ping is always tried, however long the run took.
A ping that fails is one warning (the URL is a secret: its UUID is the credential,
so it is never shown) and `ping_failed` on the attempt's log line; the exit code
never changes.
"""

from __future__ import annotations

import os
import select
import time

from adapters.signals import ending

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing at start-up
if TYPE_CHECKING:
    from collections.abc import Callable
    from urllib.request import Request

    from adapters.signals import SignalWatch
    from domain.attempts import AttemptRecord
    from domain.ports import AttemptSink

BUDGET = 10.0
"""Seconds all the pings of one run may add to it, counted while they are sent."""
START_SHARE = 0.5
"""The part of BUDGET the start ping may take."""
TRY_TIMEOUT = 5.0
"""Seconds one try may take."""
TRIES = 3
BODY_LIMIT = 10_000
"""Bytes of a body Healthchecks keeps when its answers say no other (PING_BODY_LIMIT)."""
BODY_MAX = 1 << 20
"""The most a body is made of, whatever a service says it keeps."""
END_AFTER_SIGNAL = 2.0
"""Seconds the end ping of a run that a signal ended may take: the runner is being stopped
(`docker stop` sends SIGKILL 10 s after SIGTERM), so it tells the service briefly."""


class Pinger:
    """The pings of one run, within one time budget."""

    def __init__(
        self,
        url: str,
        run_id: str,
        warn: Callable[[str], None],
        watch: SignalWatch,
    ) -> None:
        from urllib.parse import urlsplit  # noqa: PLC0415 - only with --ping

        parts = urlsplit(url)
        place = parts.netloc.rpartition("@")[2]
        self.endpoint = f"{parts.scheme}://{place}{parts.path.rstrip('/')}"
        """The URL without its query, nor a user and password: `/start` or `/<rc>` goes
        after it."""
        self.headers = {"User-Agent": "runner.py"}
        if "@" in parts.netloc:  # a service behind an authenticating proxy
            self.headers["Authorization"] = _basic(parts.username or "", parts.password or "")
        self.query = f"{parts.query}&" if parts.query else ""
        """The URL's own query (a slug URL's `create=1`), kept before `rid=`."""
        digits = f"{run_id:0<32}"[:32]
        self.rid = "-".join((digits[:8], digits[8:12], digits[12:16], digits[16:20], digits[20:]))
        """The run id as Healthchecks wants one, a UUID in canonical form (it refuses any
        other `rid` with a 400): the log's 16 hex digits, then zeros."""
        self.warn = warn
        self.watch = watch
        self.spent = 0.0
        """Seconds the pings sent so far took."""
        self.deadline = 0.0
        """When the ping being sent must give up (time.monotonic())."""
        self.finished = False
        self.body_limit = BODY_LIMIT
        """Bytes of a body the service keeps, as its last answer said (Ping-Body-Limit)."""
        self.fail_after = 1
        self.failed_before: Callable[[], int] = lambda: 0
        """--ping-fail-after: a failure is pinged as `/log` (the check stays up) until it is
        the `fail_after`-th in a row, counting `failed_before()` runs of the job before it."""

    def start(self) -> bool:
        """Say the run started; False when the ping failed."""
        return self._ping("/start", b"", BUDGET * START_SHARE)

    def finish(self, rc: int, body: bytes = b"") -> bool:
        """Say how the run ended (once), with `body` when it failed (a success attaches
        nothing); False when the ping failed."""
        if self.finished:
            return True
        self.finished = True
        allowed = BUDGET - self.spent
        if self.watch.ended is not None:
            allowed = min(allowed, END_AFTER_SIGNAL)
        suffix = "" if rc == 0 else f"/{min(rc, 255)}"
        if rc == 0:
            body = b""
        elif self.fail_after > 1 and self.failed_before() + 1 < self.fail_after:
            suffix = "/log"
        return self._ping(suffix, body, allowed)

    def _ping(self, suffix: str, body: bytes, allowed: float) -> bool:
        """Send one ping within `allowed` seconds, its tries and pauses included."""
        begun = time.monotonic()
        self.deadline = begun + max(0.0, allowed)
        try:
            return self._tries(suffix, body)
        finally:
            self.spent += time.monotonic() - begun

    def _tries(self, suffix: str, body: bytes) -> bool:
        import urllib.request  # noqa: PLC0415 - only with --ping

        request = urllib.request.Request(
            f"{self.endpoint}{suffix}?{self.query}rid={self.rid}",
            data=body,
            method="POST",
            headers=self.headers,
        )
        what = suffix.lstrip("/") or "success"
        why = "no time left"
        for attempt in range(TRIES):
            left = self.deadline - time.monotonic()
            if left <= 0:
                break
            answer = self._send(request, min(TRY_TIMEOUT, left))
            if answer is None:
                self.warn(f"ping {what} abandoned: a signal ends the run")
                return False
            if isinstance(answer, int) and 200 <= answer < 300:
                return True
            why = f"HTTP {answer}" if isinstance(answer, int) else _reason(answer)
            if isinstance(answer, int) and answer < 500 and answer not in AGAIN:
                break  # the service refused it: trying again changes nothing
            if isinstance(answer, Refused):
                break
            pause = min(0.5 * 2**attempt, max(0.0, self.deadline - time.monotonic()))
            if attempt + 1 < TRIES and not self._pause(pause):
                self.warn(f"ping {what} abandoned: a signal ends the run")
                return False
        self.warn(f"ping {what} failed ({why}); the run goes on")
        return False

    def _send(self, request: Request, timeout: float) -> int | Exception | None:
        """The answer's HTTP status, or the error; None when a signal that ends the run came
        first (the request is left to finish, or time out, in its own thread)."""
        import threading  # noqa: PLC0415 - only with --ping

        found: list[int | Exception] = []
        done_read, done_write = os.pipe()

        def send() -> None:
            import urllib.error  # noqa: PLC0415
            import urllib.request  # noqa: PLC0415

            try:
                opener = urllib.request.build_opener(_same_origin_handler())
                with opener.open(request, timeout=timeout) as answer:
                    said = str(answer.headers.get("Ping-Body-Limit") or "")
                    if said.isdigit() and int(said) > 0:
                        self.body_limit = min(int(said), BODY_MAX)
                    found.append(answer.status)
            except urllib.error.HTTPError as error:
                found.append(error.code)
            except Exception as error:  # any answer, however malformed, is one warning line
                found.append(error)
            finally:
                os.close(done_write)

        sender = threading.Thread(target=send, daemon=True)
        sender.start()
        try:
            if not self._pause(timeout, done_read):
                return None
            return found[0] if found else TimeoutError("timed out")
        finally:
            os.close(done_read)

    def _pause(self, seconds: float, done: int | None = None) -> bool:
        """Wait `seconds`, or until `done` is readable; False if a signal that ends the run
        came first. Signals read meanwhile are put back for the run to act on."""
        kept: list[int] = []
        deadline = time.monotonic() + seconds
        try:
            while time.monotonic() < deadline:
                kept += self.watch.wait(deadline - time.monotonic(), also=done)
                if ending(kept) is not None:
                    return False
                if done is not None and select.select([done], [], [], 0)[0]:
                    return True
            return True
        finally:
            self.watch.put_back(kept)


def _basic(user: str, password: str) -> str:
    """An Authorization header's Basic credentials, from a URL's percent-encoded parts."""
    from base64 import b64encode  # noqa: PLC0415 - only for a URL with a user
    from urllib.parse import unquote  # noqa: PLC0415

    return "Basic " + b64encode(f"{unquote(user)}:{unquote(password)}".encode()).decode()


AGAIN = frozenset({408, 429})
"""Answers below 500 that say to try again later (a timeout, too many requests)."""


class Refused(Exception):
    """A redirect the runner does not follow."""


def _same_origin_handler() -> type:
    import urllib.request  # noqa: PLC0415 - only with --ping

    class SameOrigin(urllib.request.HTTPRedirectHandler):
        """Follows a redirect only to the same host and port, never from https to http: the
        ping URL's credentials (its user and password, its secret path) go nowhere else."""

        def redirect_request(self, req, fp, code, msg, headers, newurl):  # type: ignore[no-untyped-def]
            from urllib.parse import urlsplit  # noqa: PLC0415

            old, new = urlsplit(req.full_url), urlsplit(newurl)
            if new.netloc.rpartition("@")[2] != old.netloc.rpartition("@")[2] or (
                old.scheme == "https" and new.scheme != "https"
            ):
                raise Refused(f"redirected to another place ({code}), not followed")
            return super().redirect_request(req, fp, code, msg, headers, newurl)

    return SameOrigin


def _reason(error: Exception) -> str:
    if isinstance(error, Refused):
        return str(error)
    if isinstance(error, ValueError):
        return "an answer that is not HTTP"
    if not isinstance(error, OSError):  # http.client's errors: a malformed answer
        return "a malformed answer"
    reason = getattr(error, "reason", None) or error
    text = getattr(reason, "strerror", None) or str(reason)
    return "timed out" if "timed out" in text else text


class PingingSink:
    """An AttemptSink that pings the end of the run before it writes the run's last line, so
    that line can say the ping failed. `tail(limit)` gives the end ping's body, `limit`
    bytes at most (None: no body, without --output-on-failure)."""

    def __init__(
        self, sink: AttemptSink, pinger: Pinger, tail: Callable[[int], bytes] | None
    ) -> None:
        self.sink = sink
        self.pinger = pinger
        self.tail = tail
        self.start_failed = False

    def record(self, attempt: AttemptRecord) -> None:
        failed = self.start_failed
        if attempt.delay_ms is None:  # no attempt follows: the run ends with this one
            body = b"" if self.tail is None else self.tail(self.pinger.body_limit)
            failed = not self.pinger.finish(attempt.rc, body) or failed
        attempt.ping_failed = failed
        self.sink.record(attempt)
