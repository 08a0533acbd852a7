"""What the CLI prints of text an attacker chose."""

from __future__ import annotations

import json
import unittest

import support  # noqa: F401  (the package from the checkout)
from tollwatch.visible_text import terminal_json, visible_text


class VisibleTextTest(unittest.TestCase):
    def test_escapes_controls_format_characters_and_separators_as_the_node_cli_does(self) -> None:
        self.assertEqual(visible_text("evil\x1b[2Jscanner"), "evil\\x1b[2Jscanner")
        self.assertEqual(visible_text("a\x7fb\x9bc"), "a\\x7fb\\x9bc")
        self.assertEqual(visible_text("resu\u202elanigiro"), "resu\\u202elanigiro")
        self.assertEqual(visible_text("a\u200bb\u2028c"), "a\\u200bb\\u2028c")
        self.assertEqual(visible_text("tag\U000e0041"), "tag\\u{e0041}")
        self.assertEqual(visible_text("lone\ud800"), "lone\\ud800")

    def test_leaves_what_shows_as_itself(self) -> None:
        text = "friendly-scanner \u00e9\u0436\u4e2d \U0001f4de +46 (8)"
        self.assertEqual(visible_text(text), text)


class TerminalJsonTest(unittest.TestCase):
    def test_parses_to_the_same_value_with_nothing_a_terminal_acts_on(self) -> None:
        value = {"user_agent": "evil\x1b[2J\x7f\x9b\u202e\u00e9", "count": 1}
        text = terminal_json(value)
        self.assertEqual(json.loads(text), value)
        self.assertTrue(text.isascii())
        self.assertTrue(all(0x20 <= ord(c) < 0x7F for c in text), text)


if __name__ == "__main__":
    unittest.main()
