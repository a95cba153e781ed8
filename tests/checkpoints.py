"""A checkpoint header as stats writes one (without its keys), for tests that plant one."""

from __future__ import annotations

HEADER: dict[str, object] = {
    "by": "cmd",
    "position": {"dev": 1, "ino": 2, "head": None, "offset": 0},
    "lines": 0,
    "malformed": 0,
    "series": [],
    "newest": 0.0,
    "open": {},
    "export": None,
}
