"""Text from the server made safe to show on a terminal (the CLI's output)."""

from __future__ import annotations

import json
import unicodedata

# Control characters (Cc: C0, DEL, C1), format characters (Cf: bidirectional overrides,
# zero-width spaces, tag characters), lone surrogates (Cs, which no terminal can be sent) and
# the line and paragraph separators. In text an attacker chose (a User-Agent, a called number)
# they make it display as something else: ESC drives a terminal, U+202E shows text reversed.
_HIDDEN_CATEGORIES = frozenset({"Cc", "Cf", "Cs"})
_SEPARATORS = "\u2028\u2029"


def visible_text(text: str) -> str:
    """The text with every invisible character written as an escape: ``\\x1b`` up to U+00FF,
    ``\\u202e`` in the BMP, ``\\u{e0041}`` beyond, as the server's dashboard and Node CLI do."""
    return "".join(_escape(c) if unicodedata.category(c) in _HIDDEN_CATEGORIES or c in _SEPARATORS else c for c in text)


def terminal_json(value: object) -> str:
    """JSON that parses to ``value`` with nothing a terminal would act on: every character past
    ASCII escaped, and DEL, which ``json.dumps`` leaves as it is."""
    return json.dumps(value, ensure_ascii=True, separators=(",", ":")).replace("\x7f", "\\u007f")


def _escape(c: str) -> str:
    code = ord(c)
    if code <= 0xFF:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\u{{{code:x}}}"
