"""The `ts` of a log line, read the same on every Python.

Python 3.11's datetime.fromisoformat reads the forms other writers put in a log: a `Z`
(JavaScript's toISOString), an offset without its colon (`date +%FT%T%z`), a fraction
of any length (Go's RFC3339Nano). Python 3.10's reads none of them, so the same log
gave two counts. On 3.10 those forms are read here as 3.11 reads them.
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing at start-up
if TYPE_CHECKING:
    from collections.abc import Callable
    from datetime import datetime
else:
    try:  # the C class `datetime` exports: before 3.12 it first defines its own in Python
        from _datetime import datetime
    except ImportError:  # an interpreter without the C module
        from datetime import datetime


def as_311(text: str) -> datetime:
    """fromisoformat, and, where it fails, the forms 3.11 reads that 3.10 does not: a `Z`,
    `+HHMM` or `+HH`, a fraction of 1 to 9 digits (cut to microseconds), a `,` for `.`."""
    try:
        return datetime.fromisoformat(text)
    except ValueError:
        pass
    import re  # noqa: PLC0415 - only for a line in another writer's form on 3.10

    found = re.fullmatch(
        r"(\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2})?)(?:[.,](\d{1,9}))?"
        r"(Z|[+-]\d{2}(?::?\d{2})?)?",
        text,
    )
    if found is None:
        raise ValueError(f"not an ISO 8601 time: {text!r}")
    moment, fraction, zone = found.groups()
    if fraction:
        moment += "." + fraction[:6].ljust(6, "0")
    if zone == "Z":
        zone = "+00:00"
    elif zone:
        zone = f"{zone[:3]}:{zone[-2:] if len(zone) > 3 else '00'}"
    return datetime.fromisoformat(moment + (zone or ""))


parse: Callable[[str], datetime] = datetime.fromisoformat if sys.version_info >= (3, 11) else as_311
"""A `ts` as a datetime (naive when it has no offset); ValueError when it is none."""
