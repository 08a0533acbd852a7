"""The number key the server matches on (docs/api.md §7), worked out in the client.

A range lookup (docs/api.md §13) hashes the key without sending it, so the key must be exactly
the server's: this is sdk/src/phone-number.ts written again in Python, and the project's tests
hold it to the server's normaliser on generated numbers (test/clients/python-client.test.ts).
"""

from __future__ import annotations

import hashlib
import re

# What JavaScript's String.prototype.trim() removes, and nothing else: Python's str.strip()
# would also remove U+001C..U+001F and U+0085, and keep U+FEFF, giving another key.
_JS_WHITESPACE = (
    "\t\n\v\f\r \u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
    "\u2028\u2029\u202f\u205f\u3000\ufeff"
)
# ASCII only: with Unicode case folding "ſip:" (long s) would read as a SIP URI, as it does not in JS.
_URI_SCHEME = re.compile(r"(tel|sips?):", re.IGNORECASE | re.ASCII)
_PARAMETERS = re.compile(r"[;?]")
_SEPARATORS = re.compile(r"[ \-.()]")
_DIALLABLE = re.compile(r"\+?[0-9A-Za-z*#]{1,64}")
_INTERNATIONAL_REST = re.compile(r"[1-9][0-9]*")


def phone_number_key(value: str) -> str | None:
    """The key of a number as the server works it out; None when the server would refuse it.

    Trim; reduce ``tel:``/``sip:``/``sips:`` URIs to their user part; drop URI parameters and
    headers (from the first ``;`` or ``?``, with a scheme or without); drop the separators space
    ``-`` ``.`` ``(`` ``)``; then ``+CC…``, ``00CC…`` and ``011CC…`` are one key ``+CC…``, and
    anything else diallable is its own key, lower-cased.
    """
    text = value.strip(_JS_WHITESPACE)
    scheme = _URI_SCHEME.match(text)
    if scheme:
        text = text[scheme.end() :]
        if scheme.group(1).lower() != "tel":
            text = text.split("@", 1)[0]
    text = _PARAMETERS.split(text, 1)[0]
    text = _SEPARATORS.sub("", text)
    if not _DIALLABLE.fullmatch(text):
        return None
    for prefix in ("+", "00", "011"):
        if text.startswith(prefix):
            rest = text[len(prefix) :]
            return f"+{rest}" if _INTERNATIONAL_REST.fullmatch(rest) else text.lower()
    return text.lower()


def number_key_hash(key: str) -> str:
    """SHA-256 of a number key's UTF-8 bytes, as 64 lower-case hex digits."""
    return hashlib.sha256(key.encode("utf-8")).hexdigest()
