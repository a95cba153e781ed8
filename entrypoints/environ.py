"""The environment a command is given: the runner's own, less what is the runner's alone."""

from __future__ import annotations

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing at start-up
if TYPE_CHECKING:
    from collections.abc import Mapping

SCRUBBED = ("RUNNER_STATE_URL", "RUNNER_PING_URL", "RUNNER_JOB_NAME")
"""What the command is not given as the runner got it (see scrubbed_environ)."""


def scrubbed_environ(environ: Mapping[str, str]) -> dict[str, str]:
    """The environment a command may see: RUNNER_STATE_URL without any form of password
    (left out whole when it is no state URL at all), no RUNNER_PING_URL (a credential, and
    a runner the command starts for a step of its own must not ping the job's check), and
    no RUNNER_JOB_NAME (nor log that step's runs under the job's name)."""
    given = {name: value for name, value in environ.items() if name not in SCRUBBED}
    url = environ.get("RUNNER_STATE_URL")
    if url is not None:
        from adapters.postgres.url import StateUrl  # noqa: PLC0415 - only with a state URL
        from domain.errors import UsageError  # noqa: PLC0415

        try:
            given["RUNNER_STATE_URL"] = StateUrl(url).shown
        except UsageError:
            pass
    return given
