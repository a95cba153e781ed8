"""Cron-grade output and pings: silent on success (as chronic), loud on failure, and
Healthchecks pings that leave the host, against a local HTTP server that behaves as the
service's documentation says (and ones that hang or fail)."""

from __future__ import annotations

import base64
import http.server
import json
import re
import shutil
import signal
import ssl
import subprocess
import sys
import threading
import time
import urllib.parse
from collections.abc import Iterator
from typing import ClassVar

import pytest

from tests.e2e.conftest import RUNNER, Lab
from tests.procs import lock_held_elsewhere, wait_for

SECRET = "5f2d9a1c-secret-check-uuid"


def test_a_success_prints_nothing_of_the_commands_output(lab: Lab) -> None:
    """--output-on-failure: stdout and stderr kept aside; a successful run shows nothing."""
    result = lab.run("run", "--output-on-failure", "--", "sh", "-c", "echo out; echo err >&2")
    assert (result.returncode, result.stdout, result.stderr) == (0, b"", b"")


def test_a_failure_shows_every_attempts_output_in_order_byte_for_byte(lab: Lab) -> None:
    """After the last attempt: each attempt's stdout on stdout, stderr on stderr, announced."""
    script = r'printf "out$RUNNER_ATTEMPT\000\377\n"; echo "err$RUNNER_ATTEMPT" >&2; exit 3'
    result = lab.run(
        "run", "-q", "--output-on-failure", "--retries", "1", "--backoff", "0", "--",
        "sh", "-c", script,
    )  # fmt: skip
    assert result.returncode == 3
    assert result.stdout == b"out1\x00\xff\nout2\x00\xff\n"
    assert result.stderr == (
        b"runner: output of attempt 1 (rc=3):\nerr1\nrunner: output of attempt 2 (rc=3):\nerr2\n"
    )


def test_a_success_after_a_retry_prints_nothing_at_all(lab: Lab) -> None:
    """Regression: with --output-on-failure a run that succeeded after a retry printed
    "attempt 1/2 failed (rc=1); retrying", and cron mailed it. The runner's own lines about
    the attempts are held with their output: a success says nothing."""
    state = lab.tmp / "tried"
    script = f"echo out; if [ -e {state} ]; then exit 0; fi; touch {state}; exit 1"
    result = lab.run(
        "run", "--output-on-failure", "--retries", "1", "--backoff", "0", "--", "sh", "-c", script
    )
    assert (result.returncode, result.stdout, result.stderr) == (0, b"", b"")


def test_a_failure_says_each_attempts_output_then_what_the_runner_made_of_it(lab: Lab) -> None:
    """Held lines come after the output of the attempt they are about, in order."""
    result = lab.run(
        "run", "--output-on-failure", "--retries", "1", "--backoff", "0", "--",
        "sh", "-c", 'echo "err$RUNNER_ATTEMPT" >&2; exit 3',
    )  # fmt: skip
    assert result.returncode == 3
    assert result.stderr.decode().splitlines() == [
        "runner: output of attempt 1 (rc=3):",
        "err1",
        "runner: attempt 1/2 failed (rc=3); retrying in 0ms",
        "runner: output of attempt 2 (rc=3):",
        "err2",
        "runner: attempt 2/2 failed (rc=3); giving up",
    ]


def test_the_kept_output_is_private_and_on_disk(lab: Lab) -> None:
    """The command writes into unlinked files of mode 0600 in TMPDIR, not into memory."""
    tmp = lab.tmp / "tmpdir"
    tmp.mkdir()
    script = "ls -l /proc/self/fd/1 /proc/self/fd/2 >&2; stat -L -c %a /proc/self/fd/1 >&2; exit 1"
    result = lab.run("run", "-q", "--output-on-failure", "--", "sh", "-c", script,
                     env={"TMPDIR": str(tmp)})  # fmt: skip
    assert result.returncode == 1
    said = result.stderr.decode()
    assert said.count("(deleted)") == 2
    assert f"{tmp}/" in said
    assert said.splitlines()[-1] == "600"
    assert list(tmp.iterdir()) == []


UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", re.IGNORECASE)
"""A UUID in the canonical textual form: Healthchecks answers 400 to a `rid` that is not."""


class Service(http.server.BaseHTTPRequestHandler):
    """A Healthchecks ping endpoint: records each ping, and refuses a `rid` that is not a UUID
    as the service does; `behaviour` can make it fail or hang (or hang on the end ping)."""

    pings: ClassVar[list[tuple[str, bytes]]] = []
    behaviour: ClassVar[str] = "ok"
    body_limit: ClassVar[str] = ""
    """What its answers say in Ping-Body-Limit (Healthchecks' PING_BODY_LIMIT): none when empty."""
    authorizations: ClassVar[list[str | None]] = []
    elsewhere: ClassVar[str] = ""
    """Where "redirect" sends every ping (another server's address)."""

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.pings.append((self.path, body))
        self.authorizations.append(self.headers.get("Authorization"))
        start = "/start" in self.path
        if self.behaviour == "redirect":
            self.send_response(302)
            self.send_header("Location", f"{Service.elsewhere}{self.path}")
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        if self.behaviour == "429-once" and not any(
            path == self.path for path, _ in self.pings[:-1]
        ):
            self.send_response(429)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        if self.behaviour == "slow":  # answers, a second and a half late
            time.sleep(1.5)
        if self.behaviour == "hang" or (self.behaviour, start) in (
            ("hang-end", False),
            ("hang-start", True),
        ):
            time.sleep(30)
            return
        rids = urllib.parse.parse_qs(urllib.parse.urlsplit(self.path).query).get("rid", [])
        status, answer = 500 if self.behaviour == "fail" else 200, b"OK"
        if any(UUID.fullmatch(rid) is None for rid in rids):
            status, answer = 400, b"invalid uuid format"
        self.send_response(status)
        self.send_header("Content-Length", str(len(answer)))
        if self.body_limit:
            self.send_header("Ping-Body-Limit", self.body_limit)
        self.end_headers()
        self.wfile.write(answer)

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def service() -> Iterator[str]:
    Service.pings, Service.behaviour, Service.authorizations = [], "ok", []
    Service.body_limit = ""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Service)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/{SECRET}"
    finally:
        server.shutdown()
        server.server_close()


def ping_run_id(lab: Lab) -> str:
    """The run's id as its pings carry it: a UUID (as Healthchecks wants), the log's run id
    its first 16 hex digits."""
    found = str(json.loads(lab.log.read_text().splitlines()[-1])["run_id"])
    return f"{found[:8]}-{found[8:12]}-{found[12:]}-0000-000000000000"


def test_pings_say_start_and_success_with_the_run_id(lab: Lab, service: str) -> None:
    """URL/start, then URL, both with ?rid= the run's id; the URL is never shown or logged.
    Regression: the run id was sent as it is in the log, 16 hex digits, and Healthchecks
    refuses a `rid` that is not a UUID (400): every ping of every run failed."""
    result = lab.run("run", "--ping", service, "--", "true")
    assert (result.returncode, result.stderr) == (0, b"")
    rid = ping_run_id(lab)
    assert [path for path, _ in Service.pings] == [
        f"/{SECRET}/start?rid={rid}",
        f"/{SECRET}?rid={rid}",
    ]
    assert SECRET not in lab.log.read_text()


@pytest.mark.parametrize(("said", "kept"), [("", 10_000), ("2500", 2500), ("100000", 20_006)])
def test_a_failure_pings_its_exit_code_with_as_much_output_as_the_service_keeps(
    lab: Lab, service: str, said: str, kept: int
) -> None:
    """URL/<rc>, whose body is the end of the kept output, at most what the service says it
    keeps (Ping-Body-Limit; Healthchecks keeps the first 10,000 bytes when it says nothing),
    a first line saying how much was cut. Regression: 10,240 bytes were sent, and
    Healthchecks dropped the last 240 of them: the end of stderr, the job's final error."""
    Service.body_limit = said
    script = "head -c 20000 /dev/zero | tr '\\0' x; echo; echo boom >&2; exit 7"
    result = lab.run(
        "run", "-q", "--output-on-failure", "--", "sh", "-c", script,
        env={"RUNNER_PING_URL": service},
    )  # fmt: skip
    assert result.returncode == 7
    (path, body) = Service.pings[-1]
    assert path == f"/{SECRET}/7?rid={ping_run_id(lab)}"
    assert len(body) == kept
    assert body.endswith(b"x\nboom\n")
    if kept < 20_006:
        notice, _ = body.split(b"\n", 1)
        cut = 20_006 - (kept - len(notice) - 1)
        assert notice == f"[runner: the first {cut} bytes of 20006 were cut]".encode()


def test_a_failures_body_is_its_output_in_the_order_written_to_one_destination(
    lab: Lab, service: str
) -> None:
    """Under cron stdout and stderr are one pipe: the body and the output shown both keep
    the order the job wrote its lines in. Regression: the body was stdout's end, then
    stderr's, and the output shown was all of stdout, then all of stderr."""
    script = "echo out1; echo err1 >&2; echo out2; echo err2 >&2; exit 3"
    result = subprocess.run(
        [sys.executable, RUNNER, "run", "-q", "--output-on-failure", "--ping", service,
         "--", "sh", "-c", script],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=lab.env, timeout=60, check=False,
    )  # fmt: skip
    assert result.returncode == 3
    assert Service.pings[-1][1] == b"out1\nerr1\nout2\nerr2\n"
    assert result.stdout == b"runner: output of attempt 1 (rc=3):\nout1\nerr1\nout2\nerr2\n"


def test_a_failures_body_interleaves_stdout_and_stderr_kept_apart(lab: Lab, service: str) -> None:
    """stdout and stderr to two destinations (a container's two streams): each shown on its
    own, and the body in the order the job wrote them (the job writes each line once the
    one before was taken). Regression: the body was stdout's end, then stderr's."""
    result = lab.run(
        "run", "-q", "--output-on-failure", "--ping", service, "--",
        lab.fixture("writes-in-turn"), "out1\n", "err1\n", "out2\n", "err2\n", "out3\n",
    )  # fmt: skip
    assert result.returncode == 0
    assert Service.pings[-1][1] == b""  # a success attaches nothing
    result = lab.run(
        "run", "-q", "--output-on-failure", "--ping", service, "--", "sh", "-c",
        f"{lab.fixture('writes-in-turn')} out1 err1 out2 err2 out3; exit 5",
    )  # fmt: skip
    assert result.returncode == 5
    assert Service.pings[-1][1] == b"out1err1out2err2out3"
    assert result.stdout == b"out1out2out3"
    assert result.stderr == b"runner: output of attempt 1 (rc=5):\nerr1err2"


def test_a_ping_url_with_a_query_keeps_it_and_pings_the_right_endpoints(
    lab: Lab, service: str
) -> None:
    """Regression: Healthchecks' slug URLs take a query (`…/<ping-key>/<slug>?create=1`), and
    `/start`, `/<rc>` and `?rid=` were put after it: the start and a failure reached the
    service as successes (`…?create=1/7?rid=…`)."""
    result = lab.run("run", "--ping", f"{service}/nightly?create=1", "--", "sh", "-c", "exit 7")
    assert result.returncode == 7
    rid = ping_run_id(lab)
    assert [path for path, _ in Service.pings] == [
        f"/{SECRET}/nightly/start?create=1&rid={rid}",
        f"/{SECRET}/nightly/7?create=1&rid={rid}",
    ]


@pytest.mark.parametrize(("conflict", "code"), [([], 3), (["--conflict-exit-code", "0"], 0)])
def test_a_run_that_finds_the_lock_busy_pings_the_code_it_exits_with(
    lab: Lab, service: str, conflict: list[str], code: int
) -> None:
    """Regression: with --conflict-exit-code 0 the busy run exited 0 but pinged `/3`, a
    failure, so an overlap the operator had made harmless still raised the alert."""
    lock = str(lab.tmp / "job.lock")
    with lock_held_elsewhere(lock):
        result = lab.run("run", "--lock", lock, *conflict, "--ping", service, "--", "true")
    assert result.returncode == code
    paths = [urllib.parse.urlsplit(path).path for path, _ in Service.pings]
    assert paths == [f"/{SECRET}/start", f"/{SECRET}/3" if code else f"/{SECRET}"]


@pytest.mark.parametrize("behaviour", ["hang", "fail"])
def test_a_ping_that_fails_is_a_warning_and_never_changes_the_exit_code(
    lab: Lab, service: str, behaviour: str
) -> None:
    """A service that hangs or answers 500: bounded (10 s in all), one warning per ping, the
    command's code, and `ping_failed` in the log; the URL is never shown."""
    Service.behaviour = behaviour
    begun = time.monotonic()
    result = lab.run("run", "--ping", service, "--", "sh", "-c", "exit 2", timeout=60)
    assert result.returncode == 2
    assert time.monotonic() - begun < 10 + 5
    warnings = [line for line in result.stderr.decode().splitlines() if "ping" in line]
    assert warnings
    assert all(line.startswith("runner: ping ") for line in warnings)
    assert SECRET.encode() not in result.stderr
    assert json.loads(lab.log.read_text())["ping_failed"] is True
    if behaviour == "fail":
        assert len(Service.pings) == 6  # three tries each for start and the end


def test_a_slow_service_gets_every_ping_and_adds_only_its_own_time(lab: Lab, service: str) -> None:
    """A service that answers each ping 1.5 s late: both pings arrive, nothing is said,
    and the run is longer by about their time (within the 10 s budget)."""
    Service.behaviour = "slow"
    begun = time.monotonic()
    result = lab.run("run", "--ping", service, "--", "true", timeout=60)
    took = time.monotonic() - begun
    assert (result.returncode, result.stderr) == (0, b"")
    paths = [urllib.parse.urlsplit(path).path for path, _ in Service.pings]
    assert paths == [f"/{SECRET}/start", f"/{SECRET}"]
    assert 3.0 <= took < 10 + 3


def test_a_run_longer_than_the_ping_budget_still_sends_its_end_ping(lab: Lab, service: str) -> None:
    """Regression: every ping of a run shared one 10 s budget counted from the runner's
    start, so a run of more than 10 s sent `/start` and then "ping success failed (no time
    left)": Healthchecks marked a healthy nightly job down. The pings count their own time."""
    result = lab.run("run", "--ping", service, "--", "sleep", "12", timeout=60)
    assert (result.returncode, result.stderr) == (0, b"")
    paths = [urllib.parse.urlsplit(path).path for path, _ in Service.pings]
    assert paths == [f"/{SECRET}/start", f"/{SECRET}"]
    assert "ping_failed" not in json.loads(lab.log.read_text())


def test_a_start_ping_that_hangs_leaves_the_end_ping_its_time(lab: Lab, service: str) -> None:
    """A service frozen during the start ping takes at most half the budget: the end ping is
    still sent, and the run is longer by at most the budget."""
    Service.behaviour = "hang-start"
    begun = time.monotonic()
    result = lab.run("run", "--ping", service, "--", "true", timeout=60)
    assert time.monotonic() - begun < 10 + 3
    assert result.returncode == 0
    assert result.stderr.decode().splitlines() == [
        "runner: ping start failed (timed out); the run goes on"
    ]
    paths = [urllib.parse.urlsplit(path).path for path, _ in Service.pings]
    assert paths[-1] == f"/{SECRET}"
    assert paths[:-1]
    assert set(paths[:-1]) == {f"/{SECRET}/start"}


def test_a_signal_abandons_a_hanging_start_ping_and_ends_the_run_at_once(
    lab: Lab, service: str
) -> None:
    """Regression: a SIGTERM while the start ping hung (a service, or a network that drops
    packets) was acted on once the ping's tries ran out, 10 s later. A signal that ends the
    run abandons the ping in flight; the command never starts."""
    Service.behaviour = "hang"
    runner = lab.start("run", "--ping", service, "--", "echo", "ran")
    wait_for(lambda: len(Service.pings) == 1, what="the start ping")
    begun = time.monotonic()
    runner.send_signal(signal.SIGTERM)
    out, err = runner.communicate(timeout=60)
    assert time.monotonic() - begun < 5  # was 10: the tries of a hanging ping
    assert (runner.returncode, out) == (143, b"")
    assert SECRET.encode() not in err


def test_the_end_ping_of_a_run_a_signal_ended_is_bounded_short(lab: Lab, service: str) -> None:
    """After a SIGTERM (docker stop gives 10 s before SIGKILL) the end ping may take 2 s at
    most: the runner is gone well within any grace, having tried to tell the service."""
    Service.behaviour = "hang-end"
    flag = lab.tmp / "started"
    script = f"touch {flag}; sleep 30"
    runner = lab.start("run", "--ping", service, "--", "sh", "-c", script)
    wait_for(flag.exists, what="the command")
    begun = time.monotonic()
    runner.send_signal(signal.SIGTERM)
    runner.communicate(timeout=60)
    assert time.monotonic() - begun < 5  # was up to 10: the rest of the ping budget
    assert runner.returncode == 143
    assert [urllib.parse.urlsplit(path).path for path, _ in Service.pings][-1] == f"/{SECRET}/143"


def test_the_command_does_not_get_the_ping_url(lab: Lab, service: str) -> None:
    """Regression: RUNNER_PING_URL reached the command: a runner it started for a step of its
    own pinged the same check (its start and end amid the job's, a step's failure marking
    the check down while the job went on), and an environment dump showed the credential."""
    inner = f"{sys.executable} {RUNNER} run -- true; env"
    result = lab.run("run", "--", "sh", "-c", inner, env={"RUNNER_PING_URL": service})
    assert result.returncode == 0, result.stderr
    assert b"RUNNER_PING_URL" not in result.stdout
    assert SECRET.encode() not in result.stdout
    assert [urllib.parse.urlsplit(path).path for path, _ in Service.pings] == [
        f"/{SECRET}/start",
        f"/{SECRET}",
    ]


def test_the_command_does_not_get_the_job_s_name(lab: Lab) -> None:
    """Regression: RUNNER_JOB_NAME reached the command: a runner it started for a step of
    its own logged the step under the job's name, so `stats --by name` counted the step's
    runs, outcomes and durations as the job's. `--name` was never passed on; now neither
    is the variable."""
    inner = f"{sys.executable} {RUNNER} run -- true"
    result = lab.run("run", "--", "sh", "-c", inner, env={"RUNNER_JOB_NAME": "nightly"})
    assert result.returncode == 0, result.stderr
    names = [json.loads(line).get("name") for line in lab.log.read_text().splitlines()]
    assert sorted(names, key=str) == [None, "nightly"]


def test_a_user_and_password_in_the_ping_url_are_sent_as_basic_authentication(
    lab: Lab, service: str
) -> None:
    """Regression: `http://user:pass@host/…` (a service behind an authenticating proxy) was
    taken for a host name, `user:pass@host`, and every ping failed. The credentials go in
    an Authorization header, never in the host, the log or a message."""
    with_user = service.replace("http://", "http://ops:s%40fe@", 1)
    result = lab.run("run", "--ping", with_user, "--", "true")
    assert (result.returncode, result.stderr) == (0, b"")
    expected = "Basic " + base64.b64encode(b"ops:s@fe").decode()
    assert Service.authorizations == [expected, expected]
    assert b"s@fe" not in lab.log.read_bytes()


class Elsewhere(http.server.BaseHTTPRequestHandler):
    """Another host, where a redirect points: records what reached it."""

    reached: ClassVar[list[tuple[str, str | None]]] = []

    def do_POST(self) -> None:
        self.reached.append((self.path, self.headers.get("Authorization")))
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    do_GET = do_POST

    def log_message(self, format: str, *args: object) -> None:
        pass


def test_a_redirect_elsewhere_is_not_followed_and_carries_no_credential(
    lab: Lab, service: str
) -> None:
    """Regression: a `user:pass@` ping URL's Basic credentials went through a 302 to another
    host. A redirect is followed only to the same host and port (and never from https to
    http); elsewhere, the ping fails with one line and nothing reaches the other host."""
    Elsewhere.reached = []
    other = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Elsewhere)
    threading.Thread(target=other.serve_forever, daemon=True).start()
    try:
        Service.behaviour, Service.elsewhere = (
            "redirect",
            f"http://127.0.0.1:{other.server_address[1]}",
        )
        with_user = service.replace("http://", "http://ops:s%40fe@", 1)
        result = lab.run("run", "--ping", with_user, "--", "true", timeout=60)
    finally:
        other.shutdown()
        other.server_close()
    assert result.returncode == 0
    assert Elsewhere.reached == []
    said = result.stderr.decode().splitlines()
    refused = "(redirected to another place (302), not followed); the run goes on"
    assert said == [
        f"runner: ping start failed {refused}",
        f"runner: ping success failed {refused}",
    ]


class Secure(http.server.BaseHTTPRequestHandler):
    """An https service that sends every ping to `target` (its own port put in), and
    records the pings that reach `/moved…`."""

    target: ClassVar[str] = ""
    reached: ClassVar[list[str]] = []

    def do_POST(self) -> None:
        if self.path.startswith("/moved"):
            self.reached.append(self.path)
            self.send_response(200)
        else:
            self.send_response(302)
            port = self.headers.get("Host", "").rpartition(":")[2]
            self.send_header("Location", self.target.format(port=port) + self.path)
        self.send_header("Content-Length", "0")
        self.end_headers()

    do_GET = do_POST

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.mark.skipif(shutil.which("openssl") is None, reason="no openssl to make a certificate")
def test_a_redirect_from_https_to_http_is_not_followed(lab: Lab) -> None:
    """A real TLS service on loopback (a certificate of the test's own, trusted through
    SSL_CERT_FILE): a redirect on the same host and port is followed over https, and
    refused when it would go on over plain http, where the credentials would be read."""
    cert, key = lab.tmp / "cert.pem", lab.tmp / "key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
         "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
         "-keyout", str(key), "-out", str(cert)],
        check=True, capture_output=True, timeout=60,
    )  # fmt: skip
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Secure)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"https://ops:secret@127.0.0.1:{server.server_address[1]}/{SECRET}"
    try:
        said = {}
        for scheme in ("https", "http"):
            Secure.target, Secure.reached = scheme + "://127.0.0.1:{port}/moved", []
            result = lab.run("run", "--ping", url, "--", "true",
                             env={"SSL_CERT_FILE": str(cert)})  # fmt: skip
            assert result.returncode == 0
            said[scheme] = (result.stderr.decode().splitlines(), len(Secure.reached))
    finally:
        server.shutdown()
        server.server_close()
    assert said["https"] == ([], 2)
    refused = "(redirected to another place (302), not followed); the run goes on"
    assert said["http"] == (
        [f"runner: ping start failed {refused}", f"runner: ping success failed {refused}"],
        0,
    )


def test_too_many_requests_is_tried_again(lab: Lab, service: str) -> None:
    """Regression: 429 (and 408) were taken as a refusal and not tried again, though they say
    to try later: each ping is tried again after its pause, and arrives."""
    Service.behaviour = "429-once"
    result = lab.run("run", "--ping", service, "--", "true", timeout=60)
    assert (result.returncode, result.stderr) == (0, b"")
    paths = [urllib.parse.urlsplit(path).path for path, _ in Service.pings]
    assert paths == [f"/{SECRET}/start", f"/{SECRET}/start", f"/{SECRET}", f"/{SECRET}"]


MALFORMED = {
    "not http": b"garbage\r\n\r\n",
    "a 64 KB status line": b"HTTP/1.1 200 " + b"x" * 65536 + b"\r\n\r\n",
    "too many headers": b"HTTP/1.1 200 OK\r\n" + b"X-A: b\r\n" * 150 + b"\r\n",
}


@pytest.mark.parametrize("answer", sorted(MALFORMED))
def test_a_malformed_answer_is_one_line_and_no_traceback(lab: Lab, answer: str) -> None:
    """Regression: a bad status line, a 64 KB one or 100+ headers printed ~220 lines of
    Python's traceback a run, and the warning said "timed out". Any answer, however
    malformed, is one warning line a ping, and the exit code is the command's."""
    import socket

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    listener.settimeout(30)

    def answer_all() -> None:
        for _ in range(8):
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            with conn:
                conn.recv(65536)
                conn.sendall(MALFORMED[answer])

    threading.Thread(target=answer_all, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{listener.getsockname()[1]}/{SECRET}"
        result = lab.run("run", "--ping", url, "--", "sh", "-c", "exit 3", timeout=60)
    finally:
        listener.close()
    assert result.returncode == 3
    said = result.stderr.decode().splitlines()
    assert len(said) == 2, said
    assert all(line.startswith("runner: ping ") for line in said), said
    assert all("malformed" in line or "not HTTP" in line for line in said), said
    assert "Traceback" not in result.stderr.decode()


def test_a_failed_ping_is_silent_under_quiet_and_in_the_log(lab: Lab, service: str) -> None:
    """Regression: a failed ping printed two lines even under -q, so cron mailed every run
    while Healthchecks was down. Under -q it is `ping_failed` in the log alone."""
    Service.behaviour = "fail"
    result = lab.run("run", "-q", "--ping", service, "--", "true", timeout=60)
    assert (result.returncode, result.stderr) == (0, b"")
    assert json.loads(lab.log.read_text())["ping_failed"] is True


def test_runs_whose_ping_failed_are_counted_and_exported(lab: Lab, service: str) -> None:
    """A failed ping says nothing under -q; stats counts the runs it failed in, by job, as
    runner_ping_failures_total (which the RunnerPingsFailing alert watches)."""
    Service.behaviour = "fail"
    assert lab.run("run", "-q", "--name", "job", "--ping", service, "--", "true").returncode == 0
    Service.behaviour = "ok"
    assert lab.run("run", "-q", "--name", "job", "--ping", service, "--", "true").returncode == 0
    result = lab.run("stats", "--by", "name", "--json")
    (group,) = json.loads(result.stdout)["groups"]
    assert (group["runs"], group["ping_failures"]) == (2, 1)
    text = lab.run("stats", "--by", "name", "--prometheus", "-").stdout.decode()
    assert 'runner_ping_failures_total{name="job"} 1\n' in text


def test_ping_fail_after_pings_log_until_the_job_has_failed_so_often_in_a_row(
    lab: Lab, service: str
) -> None:
    """--ping-fail-after 3: the first two failures in a row are `/log` (the check stays up),
    the third is `/<rc>`; a success starts the count again. The count is the log's, so it
    holds across runs (each run is a new process)."""

    def ends(*cmd: str) -> str:
        result = lab.run("run", "--name", "sync", "--ping", service, "--ping-fail-after", "3",
                         "--", *cmd)  # fmt: skip
        assert result.returncode == (0 if cmd == ("true",) else 7), result.stderr
        return Service.pings[-1][0].split("?")[0].rsplit("/", 1)[-1]

    failing = ("sh", "-c", "exit 7")
    assert [ends(*failing), ends(*failing), ends(*failing), ends(*failing)] == [
        "log", "log", "7", "7",
    ]  # fmt: skip
    assert ends("true") == SECRET
    assert ends(*failing) == "log"
    other = lab.run("run", "--ping", service, "--ping-fail-after", "2", "--", "sh", "-c", "exit 7")
    assert other.returncode == 7
    assert Service.pings[-1][0].split("?")[0].endswith("/log")  # another job: a count of its own


def test_ping_fail_after_needs_a_ping(lab: Lab) -> None:
    result = lab.run("run", "--ping-fail-after", "3", "--", "true")
    assert result.returncode == 125
    assert b"--ping-fail-after goes with --ping" in result.stderr


def test_a_sigterm_in_the_backoff_pings_143_with_the_last_attempt_s_output(
    lab: Lab, service: str
) -> None:
    """Regression: after a SIGTERM during the wait before a retry, the `/143` ping's body was
    empty; it carries the output of the attempt that failed."""
    runner = lab.start(
        "run", "-q", "--output-on-failure", "--ping", service, "--retries", "3",
        "--backoff", "30", "--", "sh", "-c", "echo the reason; exit 1",
    )  # fmt: skip
    wait_for(lambda: lab.log.exists() and lab.log.read_text().count("\n") == 1, what="attempt 1")
    runner.send_signal(signal.SIGTERM)
    assert runner.wait(timeout=30) == 143
    path, body = Service.pings[-1]
    assert path.split("?")[0].endswith("/143")
    assert body.endswith(b"the reason\n")
