"""A call fails within its deadline, whatever the server does, and never waits past it.

Each test shows which mechanism ended the call (the error's type, the deadline it names, what the
server saw) and that it took at least the budget where the budget decided; the upper bounds are
far above a loaded machine's noise and far below the waits avoided, so they say "at once", not
how fast.
"""

from __future__ import annotations

import math
import socket
import threading
import time
import unittest
from collections.abc import Callable
from typing import Any

from support import PATIENCE, Answer, RecordingSleep, ScriptedServer, Seen, SocketServer, dribble, problem, token_answer
from tollwatch import DEFAULT_LOOKUP_DEADLINE, DeadlineExceeded, NetworkError, RetryPolicy, Tollwatch, TollwatchError

AT_ONCE = 5.0
"""Seconds within which "at once" must happen even on a loaded machine (the waits avoided are 90 s and more)."""


class DeadlineTest(unittest.TestCase):
    def client(self, url: str, **options: Any) -> Tollwatch:
        client = Tollwatch(url, "twc_test", "tws_secret", **options)
        self.addCleanup(client.close)
        return client

    def socket_server(self, serve: Callable[[socket.socket, threading.Event], None] | None = None) -> SocketServer:
        server = SocketServer(serve)
        self.addCleanup(server.stop)
        return server

    def scripted(self, api: Callable[[Seen], Answer]) -> ScriptedServer:
        server = ScriptedServer(lambda seen: token_answer() if seen.path == "/oauth/token" else api(seen))
        self.addCleanup(server.stop)
        return server

    def assert_deadline(self, call: Any, deadline: float) -> DeadlineExceeded:
        started = time.monotonic()
        with self.assertRaises(DeadlineExceeded) as raised:
            call()
        elapsed = time.monotonic() - started
        self.assertEqual(raised.exception.deadline, deadline)
        self.assertIsInstance(raised.exception, TimeoutError)
        self.assertIsInstance(raised.exception, NetworkError)
        self.assertGreaterEqual(elapsed, deadline - 0.01)
        self.assertLess(elapsed, AT_ONCE)
        return raised.exception

    def test_a_server_that_accepts_and_never_answers_fails_the_call_at_its_deadline(self) -> None:
        server = self.socket_server()
        client = self.client(server.url)
        self.assert_deadline(lambda: client.lookup_phone_number("+46812118532", deadline=0.3), 0.3)

    def test_lookups_have_a_one_second_deadline_unless_told_otherwise(self) -> None:
        self.assertEqual(DEFAULT_LOOKUP_DEADLINE, 1.0)
        server = self.socket_server()
        client = self.client(server.url)
        self.assert_deadline(lambda: client.lookup_ip_address("203.0.113.7"), 1.0)
        short = self.client(server.url, lookup_deadline=0.2)
        self.assert_deadline(lambda: short.range_lookup("+46812118532"), 0.2)

    def test_tries_that_time_out_are_tried_again_within_the_deadline(self) -> None:
        # Numbers answer, addresses hang; a number looked up first brings the token, so that the
        # deadline below is the tries' alone.
        server = self.scripted(lambda seen: Answer(404, {"phone_number": "+1", "found": False, "message": "-"}) if "phone" in seen.path else Answer(200, hang=True))
        client = self.client(server.url, random=lambda: 0.0, retry=RetryPolicy(max_attempts=50))
        client.lookup_phone_number("+1", deadline=PATIENCE)
        error = self.assert_deadline(lambda: client.lookup_ip_address("203.0.113.7", deadline=1.0, timeout=0.2), 1.0)
        tries = [s for s in server.requests if s.path.startswith("/api/ip-addresses/")]
        self.assertGreaterEqual(len(tries), 2, "each try's own timeout should have left time for another")
        self.assertIsNotNone(error.__cause__)

    def test_a_server_dribbling_its_answer_cannot_hold_the_call_past_its_deadline(self) -> None:
        # Every read gets a byte within 50 ms, so no read times out: the watchdog ends the try.
        server = self.socket_server(dribble)
        client = self.client(server.url)
        self.assert_deadline(lambda: client.lookup_phone_number("+46812118532", deadline=0.4), 0.4)

    def test_a_tls_handshake_that_never_completes_ends_at_the_deadline(self) -> None:
        server = self.socket_server()
        client = self.client(server.url.replace("http:", "https:"))
        self.assert_deadline(lambda: client.lookup_phone_number("+46812118532", deadline=0.3), 0.3)

    def test_a_resolver_that_hangs_ends_at_the_deadline(self) -> None:
        released = threading.Event()
        self.addCleanup(released.set)

        def hanging_resolver(host: str, port: int, family: int, kind: int) -> list[tuple[Any, ...]]:
            released.wait()
            raise OSError("released")

        client = self.client("http://tollwatch.invalid", resolver=hanging_resolver)
        self.assert_deadline(lambda: client.lookup_phone_number("+46812118532", deadline=0.3), 0.3)

    def test_a_retry_after_longer_than_the_time_left_fails_at_once_carrying_it(self) -> None:
        server = self.scripted(lambda _seen: Answer(503, problem(503, "unavailable", "the store cannot be reached"), {"retry-after": "120"}))
        sleep = RecordingSleep()
        # A policy that would wait 120 s: only the deadline stands in the way.
        client = self.client(server.url, sleep=sleep, retry=RetryPolicy(max_retry_after=300))
        for deadline in [10.0, DEFAULT_LOOKUP_DEADLINE]:
            started = time.monotonic()
            with self.assertRaises(TollwatchError) as raised:
                client.lookup_phone_number("+46812118532", deadline=deadline)
            self.assertLess(time.monotonic() - started, AT_ONCE)
            self.assertEqual((raised.exception.status, raised.exception.error, raised.exception.retry_after), (503, "unavailable", 120))
        self.assertEqual(sleep.waits, [])
        self.assertEqual(len([s for s in server.requests if s.path.startswith("/api/")]), 2)

    def test_a_retry_after_longer_than_the_policy_allows_fails_at_once_without_a_deadline(self) -> None:
        server = self.scripted(lambda _seen: Answer(503, problem(503, "unavailable"), {"retry-after": "120"}))
        sleep = RecordingSleep()
        client = self.client(server.url, sleep=sleep)
        with self.assertRaises(TollwatchError) as raised:
            client.events_page(deadline=math.inf)
        self.assertEqual(raised.exception.retry_after, 120)
        self.assertEqual(sleep.waits, [])

    def test_a_backoff_longer_than_the_time_left_is_not_begun(self) -> None:
        server = self.scripted(lambda _seen: Answer(503, problem(503, "unavailable")))
        sleep = RecordingSleep()
        client = self.client(server.url, sleep=sleep, random=lambda: 0.9, retry=RetryPolicy(base_delay=100.0, max_delay=100.0))
        with self.assertRaises(TollwatchError) as raised:
            client.lookup_phone_number("+46812118532", deadline=10.0)
        self.assertEqual((raised.exception.status, raised.exception.retry_after), (503, None))
        self.assertEqual(sleep.waits, [])

    def test_a_wait_that_fits_is_waited_and_every_wait_ends_before_the_deadline(self) -> None:
        answers: list[Seen] = []

        def api(seen: Seen) -> Answer:
            answers.append(seen)
            return Answer(429, problem(429, "rate_limited"), {"retry-after": "0"})

        server = self.scripted(api)
        waits: list[float] = []

        def sleep(seconds: float) -> None:
            waits.append(seconds)
            time.sleep(seconds)

        client = self.client(server.url, sleep=sleep, retry=RetryPolicy(max_attempts=50, base_delay=0.2, max_delay=0.2))
        started = time.monotonic()
        with self.assertRaises((TollwatchError, DeadlineExceeded)):
            client.lookup_phone_number("+46812118532", deadline=1.5)
        self.assertGreater(len(waits), 0)
        self.assertLess(time.monotonic() - started, 1.5 + AT_ONCE)
        self.assertLess(sum(waits), 1.5)


if __name__ == "__main__":
    unittest.main()
