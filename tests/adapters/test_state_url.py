"""State URLs in messages: the password is never shown, nor given away by where it is hidden."""

from __future__ import annotations

import pytest

from adapters.postgres.url import StateUrl

REFUSED = (
    'connection to server at "127.0.0.1", port 1 failed: Connection refused\n'
    "\tIs the server running on that host and accepting TCP/IP connections?\n"
)


def test_a_message_is_one_line_after_the_url_shown() -> None:
    url = StateUrl("postgresql://u:Zq8vK2mW7xR4@127.0.0.1:1/db")
    said = url.explain(f"cannot connect to {url.shown}", REFUSED)
    assert said == (
        "cannot connect to postgresql://u@127.0.0.1:1/db: connection to server at "
        '"127.0.0.1", port 1 failed: Connection refused; Is the server running on that '
        "host and accepting TCP/IP connections?"
    )


@pytest.mark.parametrize("password", ["p", "host", "server", "Connection", "127"])
def test_a_password_the_message_merely_holds_is_not_given_away(password: str) -> None:
    """Regression: every occurrence of the password was replaced by ***, the URL shown
    included, so that a short or common one could be read off the gaps
    (`***ostgresql://u@…, ***ort 1 failed, acce***ting`)."""
    url = StateUrl(f"postgresql://u:{password}@127.0.0.1:1/db")
    said = url.explain(f"cannot connect to {url.shown}", REFUSED)
    assert said.startswith("cannot connect to postgresql://u@127.0.0.1:1/db ")
    assert "***" not in said
    assert "Connection refused" not in said
    assert "not shown" in said


@pytest.mark.parametrize(
    ("url", "echoed"),
    [
        ("postgresql://u@h/db?password=S3cret%zz", 'invalid percent-encoded token: "S3cret%zz"'),
        ("postgresql://u@h/db?pass%77ord=S3cret", 'invalid value "S3cret"'),
        ("postgresql://u@h/db?sslpassword=S3%63ret", 'could not use "S3cret"'),
        ("postgresql://u:S3%63ret@h/db", 'password "S3cret" rejected'),
    ],
)
def test_a_message_that_echoes_any_form_of_a_secret_is_not_shown(url: str, echoed: str) -> None:
    state = StateUrl(url)
    said = state.explain(f"invalid --state URL {state.shown}", echoed)
    assert "S3cret" not in said
    assert "S3%63ret" not in said
    assert said.startswith("invalid --state URL postgresql://u@h/db")
    assert "not shown" in said


def test_the_url_shown_holds_no_secret() -> None:
    url = StateUrl(
        "postgresql://u:S3cret@h/db?application_name=a@b&password=S3cret&sslmode=require"
    )
    assert url.shown == "postgresql://u@h/db?application_name=a@b&sslmode=require"
    assert url.password == "S3cret"
