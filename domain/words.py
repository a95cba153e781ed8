"""Small rules about words: what a NAME may be, and how a command is shown to a person."""

from __future__ import annotations

from domain.errors import UsageError

_NAME_FIRST = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789")
_NAME_REST = _NAME_FIRST | frozenset("._-")
NAME_MAX = 128


def check_name(name: str) -> str:
    """Return `name` if it matches [A-Za-z0-9][A-Za-z0-9._-]{0,127}, else raise UsageError."""
    if (
        not 0 < len(name) <= NAME_MAX
        or name[0] not in _NAME_FIRST
        or not _NAME_REST.issuperset(name)
    ):
        shown = name if len(name) <= 40 else name[:37] + "..."
        raise UsageError(
            f"invalid apply name {shown!r}: use 1 to {NAME_MAX} letters, digits, '.', '_' "
            "or '-', starting with a letter or digit"
        )
    return name


_SAFE = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789@%+=:,./-_")
_C_ESCAPES = {
    "\\": "\\\\",
    "'": "\\'",
    "\a": "\\a",
    "\b": "\\b",
    "\t": "\\t",
    "\n": "\\n",
    "\v": "\\v",
    "\f": "\\f",
    "\r": "\\r",
    "\x1b": "\\E",
}


def shell_words(cmd: list[str]) -> str:
    """The command as a shell user would type it (for messages only; never executed).

    As shlex.join for printable words; a word with a control character, a character
    that reorders or hides text (a right-to-left override, a zero-width space), or bytes
    that were not UTF-8 (surrogate escapes), is written in ANSI-C quoting, `$'\\E[2J'`,
    so that nothing shown can act on a terminal or disguise a row, and every text is
    valid UTF-8.
    """
    return " ".join(_word(arg) for arg in cmd)


def visible(text: str) -> str:
    """`text` with each control character, character that reorders or hides text, and
    undecodable byte written as an escape (`\\x1b`, `\\u202e`), for a name or host read
    from a file that anyone could have written."""
    if not any(_unprintable(char) for char in text):
        return text
    return "".join(_c_escape(char) if _unprintable(char) else char for char in text)


KEY_MAX = 1000
"""Characters of a command line or name kept as its key: a longer one (an inline script)
is cut there, with the CRC-32 of the whole after it, so that the checkpoint's size
does not grow with the lines' length, and lines that differ past the cut stay apart."""


def bounded(key: str) -> str:
    """`key`, or its first KEY_MAX characters and the CRC-32 of the whole (see KEY_MAX)."""
    if len(key) <= KEY_MAX:
        return key
    from binascii import crc32  # noqa: PLC0415 - only for a line this long

    return f"{key[:KEY_MAX]}...[crc32 {crc32(key.encode('utf-8', 'surrogatepass')):08x}]"


def _word(arg: str) -> str:
    if arg and _SAFE.issuperset(arg):
        return arg
    if not any(_unprintable(char) for char in arg):
        return "'" + arg.replace("'", "'\"'\"'") + "'"
    return "$'" + "".join(_c_escape(char) for char in arg) + "'"


_INVISIBLE_RANGES = (
    (0x061C, 0x061C),
    (0x200B, 0x200F),
    (0x2028, 0x202E),
    (0x2060, 0x206F),
    (0xFEFF, 0xFEFF),
    (0xFFF9, 0xFFFB),
)
_INVISIBLE = frozenset(
    chr(code) for first, last in _INVISIBLE_RANGES for code in range(first, last + 1)
)
"""Characters that reorder the text around them (bidirectional controls: a right-to-left
override turns the rest of a table's row round, its figures too), or that show nothing
or break a line: a fixed list, so that a command is shown, and keyed, the same on every
Python."""


def _unprintable(char: str) -> bool:
    code = ord(char)
    return (
        code < 0x20
        or 0x7F <= code < 0xA0
        or 0xD800 <= code <= 0xDFFF  # a byte that was not UTF-8, or a lone surrogate
        or (code >= 0x61C and char in _INVISIBLE)
    )


def _c_escape(char: str) -> str:
    if char in _C_ESCAPES:
        return _C_ESCAPES[char]
    code = ord(char)
    if 0xDC80 <= code <= 0xDCFF:  # a byte that was not UTF-8
        return f"\\x{code - 0xDC00:02x}"
    if _unprintable(char):
        return f"\\x{code:02x}" if code < 0x80 else f"\\u{code:04x}"
    return char


def holder_line(what: str, host: str, pid: int, seconds: float) -> str:
    """Who holds a lock, for LockBusy: `apply db-migrate on web-3 (pid 4242) for 3m12s`.
    `what` and `host` are the holder's word, which anyone who can open the lock can write:
    shown with what could act on a terminal escaped."""
    from domain.durations import human  # noqa: PLC0415 - only a busy lock says it

    return f"{visible(what)} on {visible(host)} (pid {pid}) for {human(max(0.0, seconds))}"
