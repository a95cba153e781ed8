"""How many cores a large read may use: os.cpu_count() counts the host's, where a process
may be bound to fewer (taskset, a cpuset) and its cgroup held to a CPU quota (a
container's --cpus, a Kubernetes CPU limit). More workers than that only share the
quota, each with its own memory: in a pod, an OOM kill."""

from __future__ import annotations

import math
import os

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing at start-up
if TYPE_CHECKING:
    from collections.abc import Callable

CGROUPS = "/sys/fs/cgroup"
MEMBERSHIP = "/proc/self/cgroup"


def usable_cores(root: str = CGROUPS, membership: str = MEMBERSHIP) -> int:
    """The cores of this process's affinity, at most its cgroup's CPU quota rounded up."""
    try:
        count = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        count = os.cpu_count() or 1
    quota = cpu_quota(root, membership)
    return count if quota is None else max(1, min(count, math.ceil(quota)))


def cpu_quota(root: str = CGROUPS, membership: str = MEMBERSHIP) -> float | None:
    """The lowest CPU quota, in cores, of this process's cgroup and of those above it
    (cgroup v2's cpu.max, v1's cfs_quota_us), or None when there is none. A container
    that sees its host's cgroup path has its own cgroup mounted at the root, read too."""
    try:
        with open(membership, encoding="utf-8", errors="replace") as handle:
            lines = handle.read().splitlines()
    except OSError:
        return None
    found: list[float] = []
    for line in lines:
        fields = line.split(":", 2)
        if len(fields) != 3:
            continue
        _, controllers, path = fields
        if not controllers:
            found += _along(root, path, _v2)
        elif "cpu" in controllers.split(","):
            found += _along(os.path.join(root, controllers), path, _v1)
    return min(found, default=None)


def _along(base: str, path: str, read: Callable[[str], float | None]) -> list[float]:
    """The quotas of the folder of `path` under `base` and of every folder above it."""
    parts = [part for part in path.split("/") if part and part not in (".", "..")]
    quotas = (read(os.path.join(base, *parts[:depth])) for depth in range(len(parts) + 1))
    return [quota for quota in quotas if quota is not None]


def _v2(folder: str) -> float | None:
    text = _read(os.path.join(folder, "cpu.max"))
    fields = [] if text is None else text.split()
    if len(fields) != 2 or fields[0] == "max":
        return None
    return _ratio(fields[0], fields[1])


def _v1(folder: str) -> float | None:
    quota = _read(os.path.join(folder, "cpu.cfs_quota_us"))
    period = _read(os.path.join(folder, "cpu.cfs_period_us")) or "100000"
    return None if quota is None else _ratio(quota.strip(), period.strip())


def _ratio(quota: str, period: str) -> float | None:
    try:
        cores = int(quota) / int(period)
    except (ValueError, ZeroDivisionError):
        return None
    return cores if cores > 0 else None


def _read(path: str) -> str | None:
    try:
        with open(path, encoding="ascii", errors="replace") as handle:
            return handle.read(64)
    except OSError:
        return None
