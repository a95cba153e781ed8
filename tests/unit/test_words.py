"""How a command is shown: as shlex.join for printable words, ANSI-C quoted otherwise."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from domain.words import shell_words, visible

BIDI = "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
"""The characters that reorder how a line is displayed (Unicode's bidirectional controls)."""
INVISIBLE = frozenset(BIDI + "\u200b\u200c\u200d\u2028\u2029\ufeff\ufff9\ufffa\ufffb") | frozenset(
    map(chr, range(0x2060, 0x2070))
)
"""... and those that show nothing: zero-width, line separators, and the whole block of
invisible operators and format controls from U+2060 (U+2065 is unassigned, and shown
escaped with its neighbours)."""
PRINTABLE = st.text(
    st.characters(
        blacklist_categories=("Cc", "Cs"), blacklist_characters=INVISIBLE, max_codepoint=0x2FFF
    )
)
TEXT = st.characters(blacklist_characters="\x00", max_codepoint=0x2FFF, blacklist_categories=["Cs"])
UNDECODABLE = st.integers(0x80, 0xFF).map(lambda byte: chr(0xDC00 + byte))
ANYTHING = st.text(st.one_of(TEXT, UNDECODABLE))


@given(st.lists(PRINTABLE, max_size=5))
def test_printable_words_are_shown_as_shlex_join_shows_them(words: list[str]) -> None:
    assert shell_words(words) == shlex.join(words)


@given(st.lists(ANYTHING, max_size=4))
def test_what_is_shown_is_valid_utf8_with_no_control_character(words: list[str]) -> None:
    """Regression: terminal escapes reached the operator's terminal raw through stats and
    applied, and bytes that were not UTF-8 broke the Prometheus export."""
    shown = shell_words(words)
    shown.encode("utf-8")
    assert not any(ord(char) < 0x20 or 0x7F <= ord(char) < 0xA0 for char in shown)
    assert not INVISIBLE.intersection(shown)


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
@settings(max_examples=40, deadline=None)
@given(ANYTHING)
def test_a_shell_reads_back_the_very_bytes(word: str) -> None:
    """What is shown is what a user could paste: bash gives back the argument's bytes."""
    printed = subprocess.run(
        ["bash", "-c", "printf %s " + shell_words([word])], capture_output=True, check=True
    )
    assert printed.stdout == os.fsencode(word)


def test_terminal_escapes_are_shown_as_text() -> None:
    assert shell_words(["true", "\x1b]0;title\x07\x1b[2J"]) == "true $'\\E]0;title\\a\\E[2J'"
    assert shell_words(["printf", "%s", "\udcff"]) == "printf %s $'\\xff'"


@pytest.mark.parametrize("char", sorted(INVISIBLE))
def test_characters_that_reorder_or_hide_text_are_shown_as_escapes(char: str) -> None:
    """Regression: a right-to-left override (U+202E) in a command line reached the table raw,
    where a terminal that honours it displays the rest of the row reversed (its counts
    too); zero-width and line-separator characters hid or split what was shown."""
    escape = f"\\u{ord(char):04x}"
    assert shell_words(["echo", f"a{char}b"]) == f"echo $'a{escape}b'"
    assert visible(f"job{char}") == f"job{escape}"
