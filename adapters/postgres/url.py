"""State URLs: read the way an operator writes them, and never shown with a password."""

from __future__ import annotations

from urllib.parse import quote, unquote

from domain.errors import UsageError

SCHEMES = ("postgresql://", "postgres://")


class StateUrl:
    """A postgresql:// URL, with its password kept apart.

    The user information runs to the last `@` before the hosts, so a password
    with an unencoded `/`, `?`, `#` or `@` is read whole instead of leaking
    into the host or database name. `conninfo` is what libpq is given, `shown`
    is what messages and the command's environment may carry (no password in
    any form), `secrets` are the strings no message may contain.
    """

    def __init__(self, url: str) -> None:
        scheme = next((s for s in SCHEMES if url.startswith(s)), None)
        if scheme is None:
            raise UsageError("--state: expected a postgresql://user@host:port/db URL")
        rest = url[len(scheme) :]
        userinfo, at, place = rest.rpartition("@")
        user, colon, password = userinfo.partition(":") if at else ("", "", "")
        self.password = unquote(password) if colon else None
        clean_place = _without_password(place)
        who = f"{quote(unquote(user), safe='')}@" if at else ""
        self.conninfo = f"{scheme}{who}{place}"
        self.shown = f"{scheme}{who}{clean_place}"
        self.secrets = [text for text in (password, self.password) if text]
        query_password = _query_password(place)
        if query_password:
            self.secrets += [query_password, unquote(query_password)]

    def scrub(self, text: str) -> str:
        """`text` with every form of the password replaced by ***."""
        for secret in sorted(self.secrets, key=len, reverse=True):
            text = text.replace(secret, "***")
        return " ".join(text.split())


def _query_parts(place: str) -> tuple[str, list[str]]:
    path, question, query = place.partition("?")
    return path, query.split("&") if question else []


def _query_password(place: str) -> str | None:
    for part in _query_parts(place)[1]:
        key, _, value = part.partition("=")
        if key == "password":
            return value
    return None


def _without_password(place: str) -> str:
    path, parts = _query_parts(place)
    kept = [part for part in parts if part.partition("=")[0] != "password"]
    return path + ("?" + "&".join(kept) if kept else "")
