"""Reading the RateLimit and RateLimit-Policy fields (docs/api.md §9)."""

from __future__ import annotations

import unittest

import support  # noqa: F401  (the package from the checkout)
from tollwatch import RateLimit, parse_rate_limit


class ParseRateLimitTest(unittest.TestCase):
    def test_the_fields_the_server_sends(self) -> None:
        self.assertEqual(
            parse_rate_limit('"lookups";r=3597;t=1184', '"lookups";q=3600;w=3600'),
            RateLimit(policy="lookups", remaining=3597, reset_seconds=1184, quota=3600, window_seconds=3600),
        )

    def test_without_a_policy_field_the_quota_and_window_are_unknown(self) -> None:
        self.assertEqual(parse_rate_limit('"submissions";r=0;t=60', None), RateLimit("submissions", 0, 60))

    def test_the_policy_is_the_one_of_the_same_name(self) -> None:
        limit = parse_rate_limit('"event_reads";r=59;t=30', '"lookups";q=3600;w=3600, "event_reads";q=60;w=60')
        self.assertEqual(limit, RateLimit("event_reads", 59, 30, 60, 60))
        other = parse_rate_limit('"event_reads";r=59;t=30', '"lookups";q=3600;w=3600')
        self.assertEqual(other, RateLimit("event_reads", 59, 30))

    def test_token_names_spaces_and_escapes(self) -> None:
        self.assertEqual(parse_rate_limit("lookups ; r=1 ; t=2", "lookups;w=10;q=5"), RateLimit("lookups", 1, 2, 5, 10))
        self.assertEqual(parse_rate_limit(r'"a\"b";r=1;t=2', None), RateLimit('a"b', 1, 2))

    def test_the_first_member_is_the_one_read(self) -> None:
        self.assertEqual(parse_rate_limit('"lookups";r=5;t=6, "other";r=1;t=1', None), RateLimit("lookups", 5, 6))

    def test_unknown_parameters_are_ignored_and_values_must_be_integers(self) -> None:
        self.assertEqual(parse_rate_limit('"lookups";r=5;t=6;pk=:abc=:', None), RateLimit("lookups", 5, 6))
        self.assertIsNone(parse_rate_limit('"lookups";r=5.5;t=6', None))
        self.assertIsNone(parse_rate_limit('"lookups";r=five;t=6', None))

    def test_nothing_to_read_is_none(self) -> None:
        for value in [None, "", "garbage here", '"lookups";r=1', '"lookups";t=1', '"unterminated;r=1;t=2']:
            with self.subTest(value=value):
                self.assertIsNone(parse_rate_limit(value, '"lookups";q=1;w=1'))


if __name__ == "__main__":
    unittest.main()
