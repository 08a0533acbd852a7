"""The client against a local server whose answers each test scripts: tokens, retries, errors,
batches, paging and feeds, where the real server cannot be made to misbehave on cue."""

from __future__ import annotations

import math
import unittest
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from urllib.parse import parse_qs, urlsplit

from support import PATIENCE, Answer, FakeClock, RecordingSleep, ScriptedServer, Seen, closed_port_url, eventually, numbered_tokens, problem
from tollwatch import NetworkError, OAuthError, RateLimit, RetryPolicy, Tollwatch, TollwatchError, number_key_hash

NOT_SEEN = {"phone_number": "+15550100", "found": False, "message": "No probes to this number have been seen."}
SEEN_IP = {
    "ip_address": "203.0.113.7",
    "found": True,
    "seen_count": 1,
    "first_seen": "2026-11-21T10:00:00Z",
    "last_seen": "2026-11-21T10:00:00Z",
    "score": 16,
    "reasons": ["sent 1 probe"],
    "called_number_count": 1,
    "user_agents": [{"user_agent": "friendly-scanner", "count": 1}],
    "transports": {"UDP": 1},
    "message": "This address has sent 1 probe.",
}


class ScriptedTestCase(unittest.TestCase):
    """Starts a scripted server per test: ``api`` answers /api requests, ``tokens`` the token endpoint."""

    def serve(self, api: Callable[[Seen], Answer], tokens: Callable[[Seen], Answer] | None = None) -> ScriptedServer:
        token_endpoint = tokens or numbered_tokens()

        def answer(seen: Seen) -> Answer:
            return token_endpoint(seen) if seen.path == "/oauth/token" else api(seen)

        server = ScriptedServer(answer)
        self.addCleanup(server.stop)
        return server

    def client(self, server: ScriptedServer, **options: object) -> Tollwatch:
        options.setdefault("sleep", RecordingSleep())
        # What these tests check is what was sent and answered, not how soon: a loaded machine
        # must not turn a lookup into a timeout (test_deadlines.py tests the deadline).
        options.setdefault("lookup_deadline", PATIENCE)
        client = Tollwatch(server.url, "twc_test", "tws_secret", **options)  # type: ignore[arg-type]
        self.addCleanup(client.close)
        return client

    @staticmethod
    def token_requests(server: ScriptedServer) -> list[Seen]:
        return [s for s in server.requests if s.path == "/oauth/token"]

    @staticmethod
    def api_requests(server: ScriptedServer) -> list[Seen]:
        return [s for s in server.requests if s.path.startswith("/api/")]


def sequence(*answers: Answer) -> Callable[[Seen], Answer]:
    """Answers in turn, the last one again once the others are used."""
    remaining = list(answers)
    return lambda _seen: remaining.pop(0) if len(remaining) > 1 else remaining[0]


class TokenTest(ScriptedTestCase):
    def test_one_token_request_serves_every_call_and_says_who_asks(self) -> None:
        server = self.serve(lambda _: Answer(404, NOT_SEEN))
        client = self.client(server)
        for _ in range(3):
            self.assertEqual(client.lookup_phone_number("+15550100"), NOT_SEEN)
        (token,) = self.token_requests(server)
        self.assertEqual(token.method, "POST")
        self.assertEqual(token.headers["content-type"], "application/json")
        self.assertEqual(token.json(), {"grant_type": "client_credentials", "client_id": "twc_test", "client_secret": "tws_secret"})
        self.assertEqual({s.headers["authorization"] for s in self.api_requests(server)}, {"Bearer token-1"})
        self.assertRegex(server.requests[1].headers["user-agent"], r"^tollwatch-python/\d")

    def test_the_audience_when_given_and_a_secret_read_at_every_token_request(self) -> None:
        server = self.serve(lambda _: Answer(401, problem(401, "invalid_token")))
        secrets = iter(["first", "second"])
        client = Tollwatch(server.url, "twc_test", lambda: next(secrets), audience="https://sentrypeer.com/api", sleep=RecordingSleep(), lookup_deadline=PATIENCE)
        self.addCleanup(client.close)
        with self.assertRaises(TollwatchError):
            client.lookup_ip_address("192.0.2.1")
        self.assertEqual([t.json()["client_secret"] for t in self.token_requests(server)], ["first", "second"])
        self.assertEqual({t.json()["audience"] for t in self.token_requests(server)}, {"https://sentrypeer.com/api"})

    def test_a_401_renews_the_token_once_and_sends_the_request_again(self) -> None:
        server = self.serve(sequence(Answer(401, problem(401, "invalid_token")), Answer(200, SEEN_IP)))
        client = self.client(server)
        self.assertEqual(client.lookup_ip_address("203.0.113.7"), SEEN_IP)
        self.assertEqual([s.headers["authorization"] for s in self.api_requests(server)], ["Bearer token-1", "Bearer token-2"])
        self.assertEqual(len(self.token_requests(server)), 2)

    def test_a_second_401_is_the_callers_to_see(self) -> None:
        server = self.serve(lambda _: Answer(401, problem(401, "invalid_token", "the token was revoked")))
        client = self.client(server)
        with self.assertRaises(TollwatchError) as raised:
            client.lookup_ip_address("203.0.113.7")
        self.assertEqual((raised.exception.status, raised.exception.error, raised.exception.detail), (401, "invalid_token", "the token was revoked"))
        self.assertEqual((len(self.token_requests(server)), len(self.api_requests(server))), (2, 2))

    def test_renewed_in_the_background_shortly_before_expiry_the_old_token_serving_meanwhile(self) -> None:
        clock = FakeClock()
        server = self.serve(lambda _: Answer(200, SEEN_IP), tokens=numbered_tokens(expires_in=120))
        client = self.client(server, clock=clock, renew_before=60)
        client.lookup_ip_address("203.0.113.7")
        clock.now += 59  # not yet due
        client.lookup_ip_address("203.0.113.7")
        self.assertEqual(len(self.token_requests(server)), 1)
        clock.now += 2  # due, and valid for another 59 s: used while its successor is fetched
        client.lookup_ip_address("203.0.113.7")
        self.assertEqual(self.api_requests(server)[-1].headers["authorization"], "Bearer token-1")
        eventually("the renewal in the background", lambda: len(self.token_requests(server)), lambda n: n == 2)
        eventually("the renewed token in use", lambda: client.lookup_ip_address("203.0.113.7") and self.api_requests(server)[-1].headers["authorization"], lambda a: a == "Bearer token-2")

    def test_a_token_about_to_expire_is_renewed_before_the_call(self) -> None:
        clock = FakeClock()
        server = self.serve(lambda _: Answer(200, SEEN_IP), tokens=numbered_tokens(expires_in=120))
        client = self.client(server, clock=clock)
        client.lookup_ip_address("203.0.113.7")
        clock.now += 115  # 5 s left: too little to send a request with
        client.lookup_ip_address("203.0.113.7")
        self.assertEqual([s.headers["authorization"] for s in self.api_requests(server)], ["Bearer token-1", "Bearer token-2"])

    def test_refused_credentials_are_an_oauth_error_not_retried(self) -> None:
        server = self.serve(lambda _: Answer(200, SEEN_IP), tokens=lambda _: Answer(401, {"error": "invalid_client", "error_description": "client authentication failed"}))
        client = self.client(server)
        with self.assertRaises(OAuthError) as raised:
            client.lookup_ip_address("203.0.113.7")
        error = raised.exception
        self.assertEqual((error.status, error.error, error.error_description, error.retry_after), (401, "invalid_client", "client authentication failed", None))
        self.assertEqual(len(server.requests), 1)

    def test_a_throttled_token_endpoint_ends_the_call_at_once_with_its_retry_after(self) -> None:
        server = self.serve(lambda _: Answer(200, SEEN_IP), tokens=lambda _: Answer(429, {"error": "rate_limited", "error_description": "too many failures"}, {"retry-after": "900"}))
        sleep = RecordingSleep()
        client = self.client(server, sleep=sleep)
        with self.assertRaises(OAuthError) as raised:
            client.lookup_ip_address("203.0.113.7", deadline=math.inf)
        self.assertEqual((raised.exception.error, raised.exception.retry_after), ("rate_limited", 900))
        self.assertEqual(sleep.waits, [])


class RetryTest(ScriptedTestCase):
    def test_503_and_502_are_tried_again_after_a_jittered_wait(self) -> None:
        server = self.serve(sequence(Answer(503, problem(503, "unavailable")), Answer(502, raw=b"<html>bad gateway</html>"), Answer(200, SEEN_IP)))
        sleep = RecordingSleep()
        client = self.client(server, sleep=sleep, retry=RetryPolicy(base_delay=0.5))
        self.assertEqual(client.lookup_ip_address("203.0.113.7", deadline=math.inf), SEEN_IP)
        self.assertEqual(len(self.api_requests(server)), 3)
        self.assertEqual(len(sleep.waits), 2)
        self.assertTrue(0 <= sleep.waits[0] < 0.5 and 0 <= sleep.waits[1] < 1.0, sleep.waits)

    def test_retry_after_is_waited_for_when_it_is_short(self) -> None:
        server = self.serve(sequence(Answer(429, problem(429, "rate_limited"), {"retry-after": "2"}), Answer(200, SEEN_IP)))
        sleep = RecordingSleep()
        client = self.client(server, sleep=sleep)
        client.lookup_ip_address("203.0.113.7", deadline=math.inf)
        self.assertEqual(len(sleep.waits), 1)
        self.assertTrue(2 <= sleep.waits[0] < 3, sleep.waits)

    def test_tries_end_after_max_attempts_with_the_last_answer(self) -> None:
        server = self.serve(lambda _: Answer(503, problem(503, "unavailable", "the store cannot be reached"), {"retry-after": "1"}))
        sleep = RecordingSleep()
        client = self.client(server, sleep=sleep)
        with self.assertRaises(TollwatchError) as raised:
            client.events_page()
        self.assertEqual((raised.exception.status, raised.exception.error, raised.exception.retry_after), (503, "unavailable", 1))
        self.assertEqual((len(self.api_requests(server)), len(sleep.waits)), (5, 4))

    def test_a_retry_after_beyond_max_retry_after_ends_the_call_at_once(self) -> None:
        server = self.serve(lambda _: Answer(429, problem(429, "rate_limited", "the plan's allowance is spent"), {"retry-after": "3600"}))
        sleep = RecordingSleep()
        client = self.client(server, sleep=sleep)
        with self.assertRaises(TollwatchError) as raised:
            client.submit_event({"event_uuid": "x"})
        self.assertEqual((raised.exception.status, raised.exception.retry_after), (429, 3600))
        self.assertEqual((len(self.api_requests(server)), sleep.waits), (1, []))

    def test_other_errors_are_raised_at_once_with_every_member_of_the_problem(self) -> None:
        errors = [{"field": "event_uuid", "message": "must be a UUID"}, {"field": "transport_type", "message": "must be UDP, TCP or TLS"}]
        server = self.serve(lambda _: Answer(422, problem(422, "validation_failed", "2 fields are invalid", errors=errors), {"content-type": "application/problem+json"}))
        client = self.client(server)
        with self.assertRaises(TollwatchError) as raised:
            client.submit_event({"event_uuid": "x"})
        error = raised.exception
        self.assertEqual(
            (error.status, error.error, error.type, error.title, error.detail, error.errors),
            (422, "validation_failed", "http://tollwatch.test/problems#validation_failed", "validation failed", "2 fields are invalid", errors),
        )
        self.assertEqual(len(self.api_requests(server)), 1)

    def test_an_answer_that_is_no_problem_document_is_unexpected_response(self) -> None:
        server = self.serve(lambda _: Answer(502, raw=b"<html>bad gateway</html>", headers={"content-type": "text/html"}))
        client = self.client(server, retry=RetryPolicy(max_attempts=2))
        with self.assertRaises(TollwatchError) as raised:
            client.lookup_phone_number("+15550100")
        self.assertEqual((raised.exception.status, raised.exception.error, raised.exception.problem), (502, "unexpected_response", None))

    def test_network_errors_are_tried_again_then_raised_as_network_error(self) -> None:
        sleep = RecordingSleep()
        client = Tollwatch(closed_port_url(), "twc_test", "tws_secret", sleep=sleep)
        self.addCleanup(client.close)
        with self.assertRaises(NetworkError) as raised:
            client.events_page()
        self.assertIsInstance(raised.exception.__cause__, ConnectionRefusedError)
        self.assertIn("Connection refused", str(raised.exception))
        self.assertEqual(len(sleep.waits), 4)


class OperationsTest(ScriptedTestCase):
    def test_bulk_lookups_go_1000_values_a_request_answered_in_order(self) -> None:
        def api(seen: Seen) -> Answer:
            values = seen.json()["phone_numbers"]
            return Answer(200, {"results": [{"phone_number": v, "found": False, "message": "not seen"} for v in values]})

        server = self.serve(api)
        client = self.client(server)
        numbers = [f"+4681211{i:04d}" for i in range(2500)]
        results = client.lookup_phone_numbers(numbers)
        self.assertEqual([r["phone_number"] for r in results], numbers)  # type: ignore[typeddict-item]
        self.assertEqual([len(s.json()["phone_numbers"]) for s in self.api_requests(server)], [1000, 1000, 500])
        self.assertEqual({s.path for s in self.api_requests(server)}, {"/api/phone-numbers/lookup"})

    def test_submit_events_in_batches_of_1000_indexes_counting_from_the_list_given(self) -> None:
        def api(seen: Seen) -> Answer:
            batch = seen.json()
            results = [{"index": i, "event_uuid": e["event_uuid"], "status": "created"} for i, e in enumerate(batch)]
            return Answer(200, {"results": results, "created": len(batch), "replayed": 0, "conflict": 0, "invalid": 0})

        server = self.serve(api)
        client = self.client(server)
        events = [{"event_uuid": f"uuid-{i}"} for i in range(1500)]
        total = client.submit_events(events)
        self.assertEqual([len(s.json()) for s in self.api_requests(server)], [1000, 500])
        self.assertEqual([r["index"] for r in total["results"]], list(range(1500)))
        self.assertEqual(total["results"][1200]["event_uuid"], "uuid-1200")
        self.assertEqual((total["created"], total["replayed"], total["conflict"], total["invalid"]), (1500, 0, 0, 0))

    def test_a_lookup_404_is_an_answer_unless_it_is_a_problem(self) -> None:
        server = self.serve(lambda s: Answer(404, NOT_SEEN) if "phone-numbers" in s.path else Answer(404, problem(404, "not_found")))
        client = self.client(server)
        self.assertEqual(client.lookup_phone_number("tel:+1-555-0100"), NOT_SEEN)
        self.assertEqual(self.api_requests(server)[0].path, "/api/phone-numbers/tel%3A%2B1-555-0100")
        with self.assertRaises(TollwatchError) as raised:
            client.lookup_ip_address("203.0.113.7")
        self.assertEqual(raised.exception.error, "not_found")
        self.assertIsNone(client.get_event("0f1e2d3c-4b5a-4978-8695-a4b3c2d1e0f9"))

    def test_a_range_lookup_sends_5_hex_digits_and_ignores_padding(self) -> None:
        digest = number_key_hash("+46812118532")
        entries = [{"suffix": digest[5:], "seen_count": 0, "score": 0}, {"suffix": "0" * 59, "seen_count": 2, "score": 30}]
        server = self.serve(sequence(Answer(200, {"prefix": digest[:5], "entries": entries}), Answer(200, {"prefix": digest[:5], "entries": [{"suffix": digest[5:], "seen_count": 4, "score": 41}]})))
        client = self.client(server)
        self.assertEqual(client.range_lookup("0046 8 121 185 32"), {"key": "+46812118532", "found": False})
        self.assertEqual(client.range_lookup("+46812118532"), {"key": "+46812118532", "found": True, "seen_count": 4, "score": 41})
        self.assertEqual({s.path for s in self.api_requests(server)}, {"/api/phone-numbers/range/71d81"})
        with self.assertRaises(ValueError):
            client.range_lookup("not a number!")
        self.assertEqual(len(self.api_requests(server)), 2)

    def test_events_are_listed_page_after_page_by_cursor_with_the_filters_on_each(self) -> None:
        pages: dict[str | None, tuple[list[str], str | None]] = {None: (["e1", "e2"], "c1"), "c1": (["e3", "e4"], "c2"), "c2": (["e5"], None)}

        def api(seen: Seen) -> Answer:
            query = parse_qs(urlsplit(seen.path).query)
            cursor = query["cursor"][0] if "cursor" in query else None
            data, next_cursor = pages[cursor]
            return Answer(200, {"data": [{"event_uuid": u} for u in data], "next_cursor": next_cursor}, {"ratelimit": '"event_reads";r=57;t=100', "ratelimit-policy": '"event_reads";q=60;w=3600'})

        server = self.serve(api)
        client = self.client(server)
        since = datetime(2026, 11, 21, 11, 0, tzinfo=timezone(timedelta(hours=1)))
        events = client.list_events(since=since, called_number="+46812118532", limit=2)
        self.assertEqual([e["event_uuid"] for e in events], ["e1", "e2", "e3", "e4", "e5"])
        queries = [parse_qs(urlsplit(s.path).query) for s in self.api_requests(server)]
        self.assertEqual([q.get("cursor") for q in queries], [None, ["c1"], ["c2"]])
        for query in queries:
            self.assertEqual((query["since"], query["called_number"], query["limit"]), (["2026-11-21 10:00:00.000000"], ["+46812118532"], ["2"]))
        self.assertEqual(client.rate_limit("event_reads"), RateLimit("event_reads", 57, 100, 60, 3600))

    def test_a_feed_polled_with_its_etag_is_none_while_unchanged(self) -> None:
        feed = {"kind": "ip-addresses", "scored_at": "2026-11-21T10:00:00.000Z", "entries": [{"ip_address": "203.0.113.7", "score": 60, "seen_count": 9, "first_seen": "x", "last_seen": "y"}]}
        server = self.serve(lambda s: Answer(304) if s.headers.get("if-none-match") == '"v1"' else Answer(200, feed, {"etag": '"v1"'}))
        client = self.client(server)
        first = client.ip_address_feed(min_score=60)
        assert first is not None
        self.assertEqual((first.kind, first.entries, first.etag), ("ip-addresses", feed["entries"], '"v1"'))
        self.assertIsNone(client.ip_address_feed(min_score=60, etag=first.etag))
        self.assertEqual(parse_qs(urlsplit(self.api_requests(server)[0].path).query), {"min_score": ["60"], "format": ["json"]})

    def test_connections_are_kept_between_calls_and_replaced_when_the_server_closed_them(self) -> None:
        server = self.serve(lambda _: Answer(200, SEEN_IP))
        client = self.client(server)
        for _ in range(3):
            client.lookup_ip_address("203.0.113.7")
        self.assertEqual(server.connections, 1)
        client.close()
        closing = self.serve(lambda _: Answer(200, SEEN_IP, close=True), tokens=lambda _: Answer(200, {"access_token": "t", "expires_in": 60}, close=True))
        other = self.client(closing)
        for _ in range(2):
            self.assertEqual(other.lookup_ip_address("203.0.113.7"), SEEN_IP)
        self.assertEqual(closing.connections, 3)


if __name__ == "__main__":
    unittest.main()
