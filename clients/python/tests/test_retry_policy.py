"""Retry-After, backoff bounds and the policy's own checks."""

from __future__ import annotations

import random
import unittest

import support  # noqa: F401  (the package from the checkout)
from tollwatch import DEFAULT_RETRY_POLICY, RetryPolicy, parse_retry_after
from tollwatch.retry import backoff_delay

NOW = 1_795_000_000.0  # seconds since the epoch, for HTTP dates


class ParseRetryAfterTest(unittest.TestCase):
    def test_delay_seconds(self) -> None:
        self.assertEqual(parse_retry_after("120"), 120)
        self.assertEqual(parse_retry_after(" 7 "), 7)
        self.assertEqual(parse_retry_after("0"), 0)

    def test_http_dates_as_whole_seconds_from_now_never_negative(self) -> None:
        from email.utils import formatdate

        self.assertEqual(parse_retry_after(formatdate(NOW + 90, usegmt=True), now=NOW), 90)
        self.assertEqual(parse_retry_after(formatdate(NOW + 90, usegmt=True), now=NOW + 0.5), 90)
        self.assertEqual(parse_retry_after(formatdate(NOW - 30, usegmt=True), now=NOW), 0)
        # Without a zone (RFC 2822's -0000), read as GMT.
        self.assertEqual(parse_retry_after(formatdate(NOW + 60).replace("+0000", "-0000"), now=NOW), 60)

    def test_absent_or_unreadable_is_none(self) -> None:
        for value in [None, "", "soon", "-1", "1.5", "\u0661\u0662", "12 seconds"]:
            with self.subTest(value=value):
                self.assertIsNone(parse_retry_after(value, now=NOW))


class BackoffDelayTest(unittest.TestCase):
    def test_full_jitter_within_the_doubling_step_capped_at_max_delay(self) -> None:
        policy = RetryPolicy(base_delay=0.5, max_delay=4.0)
        rng = random.Random(7)
        for attempt in range(1, 12):
            step = min(4.0, 0.5 * 2 ** (attempt - 1))
            for _ in range(200):
                delay = backoff_delay(attempt, None, policy, rng.random)
                self.assertGreaterEqual(delay, 0)
                self.assertLess(delay, step)
            # The extremes of random(): 0 waits not at all, just under 1 nearly the whole step.
            self.assertEqual(backoff_delay(attempt, None, policy, lambda: 0.0), 0)
            self.assertAlmostEqual(backoff_delay(attempt, None, policy, lambda: 0.999999), step, delta=step * 1e-5)

    def test_never_shorter_than_retry_after_plus_at_most_a_second_of_jitter(self) -> None:
        rng = random.Random(11)
        for attempt in range(1, 8):
            step = min(DEFAULT_RETRY_POLICY.max_delay, DEFAULT_RETRY_POLICY.base_delay * 2 ** (attempt - 1))
            for retry_after in [0, 1, 2, 120]:
                for _ in range(100):
                    delay = backoff_delay(attempt, retry_after, DEFAULT_RETRY_POLICY, rng.random)
                    self.assertGreaterEqual(delay, retry_after)
                    self.assertLess(delay, retry_after + min(step, 1.0))

    def test_spreads_clients_out_rather_than_sending_them_back_together(self) -> None:
        rng = random.Random(3)
        delays = {round(backoff_delay(4, None, DEFAULT_RETRY_POLICY, rng.random), 3) for _ in range(50)}
        self.assertGreater(len(delays), 40)


class RetryPolicyTest(unittest.TestCase):
    def test_defaults_as_the_typescript_sdk(self) -> None:
        self.assertEqual(DEFAULT_RETRY_POLICY, RetryPolicy(max_attempts=5, base_delay=0.5, max_delay=30.0, max_retry_after=60.0, timeout=30.0))

    def test_refuses_values_that_make_no_sense(self) -> None:
        for bad in [{"max_attempts": 0}, {"timeout": 0}, {"timeout": -1}, {"base_delay": -0.1}, {"max_retry_after": float("nan")}]:
            with self.subTest(bad=bad), self.assertRaises(ValueError):
                RetryPolicy(**bad)  # type: ignore[arg-type]


if __name__ == "__main__":
    unittest.main()
