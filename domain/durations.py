"""How a duration is shown to a person: one rule for messages, holders' ages and tables."""

from __future__ import annotations


def human(seconds: float) -> str:
    """`45ms`, `0.25s`, `1.4s`, `12s`, `3m12s`, `2h05m`, `3d04h`: two figures under ten
    seconds, whole seconds under a minute, two units above it."""
    if seconds < 0.1:
        return f"{max(0.0, seconds) * 1000:.0f}ms"
    if seconds < 9.95:
        return f"{seconds:.2g}s"
    if seconds < 59.5:
        return f"{seconds:.0f}s"
    whole = round(seconds)
    minutes, secs = divmod(whole, 60)
    if minutes < 60:
        return f"{minutes}m{secs:02d}s"
    hours, minutes = divmod(minutes, 60)
    if hours < 24:
        return f"{hours}h{minutes:02d}m"
    days, hours = divmod(hours, 24)
    return f"{days}d{hours:02d}h"
