"""The number key and its hash: the server's rules, case for case (test/domain/phone-number.test.ts)."""

from __future__ import annotations

import hashlib
import unittest

import support  # noqa: F401  (the package from the checkout)
from tollwatch import number_key_hash, phone_number_key

# (input, key): the key column of the server's own normaliser tests.
KEYS = [
    # Every called_number value in the SentryPeer fixtures.
    ("100", "100"),
    ("201", "201"),
    ("1000", "1000"),
    ("2001", "2001"),
    ("2564713313", "2564713313"),
    ("0046812118532", "+46812118532"),
    ("00441224928978", "+441224928978"),
    ("0037167890123", "+37167890123"),
    ("00881234567", "+881234567"),
    ("011390662279016", "+390662279016"),
    ("+972597744894", "+972597744894"),
    # 9 is a common "outside line" digit, not an exit code: left as written.
    ("9011442033180000", "9011442033180000"),
    # URI forms.
    ("tel:+46-8-121-185-32", "+46812118532"),
    ("tel:+46812118532;phone-context=example.com", "+46812118532"),
    ("TEL:0046812118532", "+46812118532"),
    ("Tel:100;ext=2", "100"),
    ("sip:0046812118532@192.0.2.1", "+46812118532"),
    ("SIP:100@192.0.2.1:5060", "100"),
    ("sips:+46812118532@example.com;user=phone", "+46812118532"),
    ("sip:+44(20)7946-0000@example.com?subject=hi", "+442079460000"),
    ("sip:100;user=phone@host", "100"),
    ("sip:100", "100"),
    ("sip:100?x=y", "100"),
    # Parameters and headers without a scheme, as a honeypot writes a Request-URI's user part.
    ("+442071838001;phone-context=example.com", "+442071838001"),
    ("0046812118532;npdi;rn=+46812000000", "+46812118532"),
    ("100?x=y", "100"),
    ("46;1", "46"),
    # Separators and surrounding whitespace.
    ("  +1 (800) 555.0199  ", "+18005550199"),
    ("\t0046 8 121 185 32\n", "+46812118532"),
    ("0 0 4 6", "+46"),
    ("01146812118532", "+46812118532"),
    ("011-46-8-121-185-32", "+46812118532"),
    # Letters match case-insensitively; * and # are diallable.
    ("Admin", "admin"),
    ("sip:Alice@example.com", "alice"),
    ("+44ABC", "+44abc"),
    ("*97#", "*97#"),
    ("#31#100", "#31#100"),
    ("1" * 64, "1" * 64),
    ("+" + "4" * 64, "+" + "4" * 64),
    # Bare national digits are not read as international.
    ("46812118532", "46812118532"),
    ("0812118532", "0812118532"),
    ("01", "01"),
    # A bare exit code is what was dialled; a country code cannot begin with 0.
    ("00", "00"),
    ("011", "011"),
    ("0000", "0000"),
    ("000123", "000123"),
    ("0110", "0110"),
    ("+0123", "+0123"),
    ("0044ABC", "0044abc"),
    ("+44*1", "+44*1"),
    # JavaScript's trim(), which the server uses, not Python's strip(): U+FEFF and U+3000 go,
    # U+001C..U+001F and U+0085 stay (and make the value invalid).
    ("\ufeff+46812118532", "+46812118532"),
    ("\u00a0+46 8\u3000", "+468"),
    ("\u2028100\u2029", "100"),
    ("46\n", "46"),
]

REFUSED = [
    "",
    "   ",
    "+",
    "++46",
    "46+",
    "1" * 65,
    "+" + "4" * 65,
    "12@34",
    "ab$c",
    ";46",
    "?46",
    "46,1",
    "46/1",
    "+46\t8",
    "+46\u00a08",
    "46_1",
    "sip:@host",
    "sip:",
    "tel:",
    "tel:;x=y",
    "mailto:100",
    "\u260e123",
    "\u0661\u0662\u0663",
    "+46 8 12/34",
    "%2B46",
    # Whitespace to Python, not to JavaScript.
    "\x1c46",
    "46\x1f",
    "\x85 46",
    "\u180e46",
    # Only ASCII letters spell a scheme: "ſ" (long s) folds to "s" in Python, not in JavaScript.
    "\u017fip:100@x",
    "tel:\u00a0100",
    "+46\u200b8",
    # Python's $ would match before a final newline; the server's pattern does not.
    "46\n\n7",
]


class PhoneNumberKeyTest(unittest.TestCase):
    def test_the_servers_keys(self) -> None:
        for value, key in KEYS:
            with self.subTest(value=value):
                self.assertEqual(phone_number_key(value), key)

    def test_what_the_server_refuses_is_none(self) -> None:
        for value in REFUSED:
            with self.subTest(value=value):
                self.assertIsNone(phone_number_key(value))

    def test_international_forms_share_one_key(self) -> None:
        forms = ["+390662279016", "00390662279016", "011390662279016", "tel:+39 06 622 790 16", "sip:00390662279016@192.0.2.1"]
        self.assertEqual({phone_number_key(f) for f in forms}, {"+390662279016"})


class NumberKeyHashTest(unittest.TestCase):
    def test_the_worked_example_of_docs_api_section_13(self) -> None:
        key = phone_number_key("0046 8 121 185 32")
        self.assertEqual(key, "+46812118532")
        digest = number_key_hash("+46812118532")
        self.assertEqual(digest, "71d8195b791393679230de7ea7087afb150651af83f2ed01b8d1cbcab1b8c532")
        self.assertEqual(digest[:5], "71d81")

    def test_sha256_of_the_utf8_bytes_in_lower_case_hex(self) -> None:
        for key in ["+46812118532", "admin", "*97#", "+44abc"]:
            with self.subTest(key=key):
                self.assertEqual(number_key_hash(key), hashlib.sha256(key.encode()).hexdigest())
                self.assertRegex(number_key_hash(key), r"\A[0-9a-f]{64}\Z")


if __name__ == "__main__":
    unittest.main()
