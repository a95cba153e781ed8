"""State URLs: read the way an operator writes them, and never shown with a password."""

from __future__ import annotations

from urllib.parse import quote, unquote

from domain.errors import UsageError

SCHEMES = ("postgresql://", "postgres://")
SECRET_KEYS = frozenset({"password", "sslpassword"})
"""Query parameters libpq reads as secrets (their names percent-decoded, as libpq does)."""
_HOST_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-_:,[]")


class StateUrl:
    """A postgresql:// URL, with its password kept apart.

    The user information ends at the `@` after which a host list and a database path
    follow, so a password with an unencoded `/`, `?`, `#` or `@` is read whole
    instead of leaking into the host or database name, and an `@` in the query
    string is not taken for it. `conninfo` is what libpq is given, `shown` is what
    messages and the command's environment may carry (no password in any form),
    `secrets` are the strings no message may contain.
    """

    def __init__(self, url: str) -> None:
        scheme = next((s for s in SCHEMES if url.startswith(s)), None)
        if scheme is None:
            raise UsageError("--state: expected a postgresql://user@host:port/db URL")
        rest = url[len(scheme) :]
        at = _userinfo_end(rest)
        userinfo, place = (rest[:at], rest[at + 1 :]) if at >= 0 else ("", rest)
        user, colon, password = userinfo.partition(":")
        self.password = unquote(password) if colon else None
        who = f"{quote(unquote(user), safe='')}@" if at >= 0 else ""
        self.conninfo = f"{scheme}{who}{place}"
        self.shown = f"{scheme}{who}{_without_secrets(place)}"
        self.secrets = [text for text in (password, self.password) if text]
        for value in _query_secrets(place):
            self.secrets += [value, unquote(value)]

    def explain(self, what: str, detail: str) -> str:
        """`what` (which may show `shown`), then `detail`, a message of libpq's or the
        server's, on one line (its sentences on several lines joined with "; "). A detail
        that holds any form of the password is left out whole: hiding the password where
        it stands would give it away whenever the message merely holds the same word."""
        if any(secret in detail for secret in self.secrets):
            return f"{what} (the message is not shown: it holds the password)"
        lines = (" ".join(line.split()) for line in detail.splitlines())
        return f"{what}: " + "; ".join(line for line in lines if line)


def _userinfo_end(rest: str) -> int:
    """The index of the `@` that ends the user information, or -1 when there is none.

    The last `@` followed by a host list and a `/` (the database) wins; failing that,
    the last one followed by a host list and nothing more.
    """
    fallback = -1
    for index in range(len(rest) - 1, -1, -1):
        if rest[index] != "@":
            continue
        after = rest[index + 1 :]
        end = min((i for i in (after.find("/"), after.find("?")) if i >= 0), default=len(after))
        if not _HOST_CHARS.issuperset(after[:end]):
            continue
        if after[end : end + 1] == "/":
            return index
        if end == len(after) and fallback < 0:
            fallback = index
    return fallback


def _query_parts(place: str) -> tuple[str, list[str]]:
    path, question, query = place.partition("?")
    return path, query.split("&") if question else []


def _is_secret(part: str) -> bool:
    return unquote(part.partition("=")[0]) in SECRET_KEYS


def _query_secrets(place: str) -> list[str]:
    return [part.partition("=")[2] for part in _query_parts(place)[1] if _is_secret(part)]


def _without_secrets(place: str) -> str:
    path, parts = _query_parts(place)
    kept = [part for part in parts if not _is_secret(part)]
    return path + ("?" + "&".join(kept) if kept else "")
