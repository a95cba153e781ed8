"""How many cores a large read uses: the affinity, and the cgroup's CPU quota."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from adapters.cores import cpu_quota, usable_cores


def cgroups(tmp_path: Path, membership: str, files: dict[str, str]) -> tuple[str, str]:
    """A cgroup tree under tmp_path (files by their path below it), and /proc/self/cgroup."""
    root = tmp_path / "cgroup"
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    root.mkdir(exist_ok=True)
    proc = tmp_path / "proc-self-cgroup"
    proc.write_text(membership)
    return str(root), str(proc)


@pytest.mark.parametrize(
    ("membership", "files", "quota"),
    [
        ("0::/\n", {}, None),
        ("0::/\n", {"cpu.max": "max 100000\n"}, None),
        ("0::/\n", {"cpu.max": "150000 100000\n"}, 1.5),
        (  # a pod's limit is set above the container's cgroup: the lowest one counts
            "0::/kubepods/pod1/ctr\n",
            {
                "kubepods/pod1/cpu.max": "100000 100000\n",
                "kubepods/pod1/ctr/cpu.max": "max 100000\n",
            },
            1.0,
        ),
        (  # a container that sees the host's path, its own cgroup mounted as the root
            "0::/docker/abc\n",
            {"cpu.max": "50000 100000\n"},
            0.5,
        ),
        ("1:cpu,cpuacct:/\n", {"cpu,cpuacct/cpu.cfs_quota_us": "-1\n"}, None),
        (
            "4:memory:/x\n1:cpu,cpuacct:/job\n",
            {
                "cpu,cpuacct/job/cpu.cfs_quota_us": "200000\n",
                "cpu,cpuacct/job/cpu.cfs_period_us": "100000\n",
            },
            2.0,
        ),
        (
            "1:cpu:/\n",
            {"cpu/cpu.cfs_quota_us": "25000\n", "cpu/cpu.cfs_period_us": "100000\n"},
            0.25,
        ),
        ("0::/\n", {"cpu.max": "garbage\n"}, None),
        ("0::/\n", {"cpu.max": "100 0\n"}, None),
        ("not a cgroup line\n", {}, None),
    ],
)
def test_the_cpu_quota_is_read_as_the_kernel_applies_it(
    tmp_path: Path, membership: str, files: dict[str, str], quota: float | None
) -> None:
    root, proc = cgroups(tmp_path, membership, files)
    assert cpu_quota(root, proc) == quota


def test_a_quota_caps_the_cores_and_rounds_up(tmp_path: Path) -> None:
    """Regression: os.cpu_count() counts the host's cores, so stats in a container limited
    to one CPU on a 64-core host forked 32 workers: slower than one, and 32 times the
    memory (an OOM kill in a pod's limit)."""
    root, proc = cgroups(tmp_path, "0::/\n", {"cpu.max": "150000 100000\n"})
    assert usable_cores(root, proc) == min(2, len(os.sched_getaffinity(0)))
    root, proc = cgroups(tmp_path / "b", "0::/\n", {"cpu.max": "1000 100000\n"})
    assert usable_cores(root, proc) == 1


def test_without_a_quota_the_affinity_counts(tmp_path: Path) -> None:
    root, proc = cgroups(tmp_path, "0::/\n", {})
    assert usable_cores(root, proc) == len(os.sched_getaffinity(0))
    assert usable_cores(str(tmp_path / "none"), str(tmp_path / "none")) >= 1
