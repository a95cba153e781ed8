"""Opening a connection that a signal or --connect-timeout always ends, name lookup included.

libpq resolves host names with a blocking getaddrinfo before its non-blocking
part begins; a silent DNS server would hold the runner for its own timeouts,
deaf to signals. Names are therefore looked up here, in a helper thread waited
for with the runner's signals and the deadline, and handed to libpq as
`hostaddr` beside `host` (which TLS still checks against).
"""

from __future__ import annotations

import os
import select
import time

from adapters.signals import ending
from domain.errors import Interrupted, StateError

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing at start-up
if TYPE_CHECKING:
    from collections.abc import Mapping

    from psycopg.pq.abc import PGconn

    from adapters.postgres.url import StateUrl
    from adapters.signals import SignalWatch

INSTALL_HINT = (
    "install it with your system's package (Debian/Ubuntu: apt install python3-psycopg), "
    "pipx inject pyops-runner 'psycopg[binary]', or pip install 'psycopg[binary]'"
)


class Unreachable(StateError):
    """No connection could be made (refused, full, starting, or silent): worth another try."""


PASSING = (
    "refused",
    "timeout",
    "timed out",
    "too many clients",
    "remaining connection slots",
    "starting up",
    "shutting down",
    "in recovery",
    "not yet accepting connections",
    "reset by peer",
    "closed the connection",
    "no route to host",
    "network is unreachable",
)
"""What libpq says of a server that may answer a moment later (not of a wrong password)."""


def load_pq() -> None:
    """Make sure psycopg 3 can be imported; a clear error with how to install it, if not."""
    try:
        import psycopg.pq  # noqa: F401
    except ImportError:
        raise StateError(f"the postgresql state backend needs psycopg 3: {INSTALL_HINT}") from None


def connect(
    url: StateUrl, watch: SignalWatch | None, deadline: float, connect_timeout: float
) -> PGconn:
    """A connection in non-blocking pipeline mode, made before `deadline` (monotonic)."""
    load_pq()
    from psycopg import ProgrammingError, pq
    from psycopg.conninfo import conninfo_to_dict, make_conninfo

    try:
        params = conninfo_to_dict(url.conninfo)
        addresses = _addresses(params, watch, deadline, url, connect_timeout)
        conninfo = make_conninfo(
            url.conninfo,
            password=url.password,
            application_name="runner.py",
            keepalives=1,
            keepalives_idle=5,
            keepalives_interval=2,
            keepalives_count=3,
            **({"hostaddr": addresses} if addresses else {}),
        )
    except ProgrammingError as exc:
        raise StateError(url.explain(f"invalid --state URL {url.shown}", str(exc))) from None
    pgconn = pq.PGconn.connect_start(conninfo.encode())
    try:
        poll: int = pq.PollingStatus.WRITING
        while True:
            if pgconn.status == pq.ConnStatus.BAD or poll == pq.PollingStatus.FAILED:
                reason = _text(pgconn.error_message) or "connection failed"
                passing = any(word in reason.lower() for word in PASSING)
                failure = Unreachable if passing else StateError
                raise failure(url.explain(f"cannot connect to {url.shown}", reason))
            if poll == pq.PollingStatus.OK:
                pgconn.nonblocking = 1
                pgconn.enter_pipeline_mode()
                return pgconn
            if time.monotonic() >= deadline:
                raise _silent(url, connect_timeout)
            wait_on(watch, pgconn.socket, deadline, poll == pq.PollingStatus.WRITING)
            poll = pgconn.connect_poll()
    except BaseException:
        pgconn.finish()
        raise


def _addresses(
    params: Mapping[str, object],
    watch: SignalWatch | None,
    deadline: float,
    url: StateUrl,
    connect_timeout: float,
) -> str | None:
    """`hostaddr` for the URL's hosts, looked up within the deadline; None when libpq needs none."""
    hosts = str(params.get("host") or "").split(",")
    if params.get("hostaddr") or not any(_is_name(host) for host in hosts):
        return None
    import socket
    import threading

    found: dict[str, str] = {}
    failed: list[str] = []
    done_read, done_write = os.pipe()

    def look_up() -> None:
        try:
            for host in {h for h in hosts if _is_name(h)}:
                try:
                    found[host] = str(
                        socket.getaddrinfo(host, None, type=socket.SOCK_STREAM)[0][4][0]
                    )
                except OSError as exc:
                    failed.append(f"{host}: {exc.strerror or exc}")
                    return
        finally:
            try:
                os.write(done_write, b"!")
            except OSError:  # the runner stopped waiting and closed its end
                pass
            os.close(done_write)

    threading.Thread(target=look_up, daemon=True).start()
    try:
        while not select.select([done_read], [], [], 0)[0]:
            if time.monotonic() >= deadline:
                raise _silent(url, connect_timeout, "looking up the host name")
            wait_on(watch, done_read, deadline, write=False)
    finally:
        os.close(done_read)
    if failed:
        raise Unreachable(url.explain(f"cannot connect to {url.shown}", failed[0]))
    return ",".join(found.get(host, "") if _is_name(host) else _literal(host) for host in hosts)


def wait_on(watch: SignalWatch | None, socket: int, deadline: float, write: bool) -> None:
    """Wait for `socket` (to read, or to write), a signal, or the deadline; a signal raises.

    One wait lasts an hour at most; callers loop until their own deadline.
    """
    remaining = min(max(0.0, deadline - time.monotonic()), 3600.0)
    reads = [] if write else [socket]
    if watch is not None:
        reads.append(watch.fileno())
    select.select(reads, [socket] if write else [], [], remaining)
    if watch is not None:
        signum = ending(watch.pending())
        if signum is not None:
            raise Interrupted(signum)


def _is_name(host: str) -> bool:
    """A DNS name, as opposed to an address, a socket folder, or nothing."""
    if not host or host.startswith("/") or host.startswith("@") or ":" in host:
        return False
    return not host.replace(".", "").isdigit()


def _literal(host: str) -> str:
    """hostaddr's entry for a host that needs no lookup (empty: libpq uses `host` itself)."""
    return host if host and not host.startswith(("/", "@")) else ""


def _silent(url: StateUrl, connect_timeout: float, doing: str = "") -> Unreachable:
    how = f" ({doing})" if doing else ""
    return Unreachable(
        f"cannot connect to {url.shown}: no answer within {connect_timeout:.3g}s"
        f" (--connect-timeout){how}"
    )


def _text(value: bytes | None) -> str | None:
    return None if value is None else value.decode("utf-8", "replace").strip()
