"""The client against a real Tollwatch server (settings from the environment: support.server_settings).

Lookups here get a generous deadline: what they check is the API's answers, and a loaded machine
should not turn them into timeouts. The deadline itself is tested in test_deadlines.py.
"""

from __future__ import annotations

import unittest
import uuid
from collections.abc import Callable
from typing import Any, ClassVar

from support import ServerSettings, eventually, server_settings
from tollwatch import Feed, IpAddressFeedEntry, OAuthError, Tollwatch, TollwatchError, phone_number_key

PATIENT = 15.0


def event(**overrides: str) -> dict[str, Any]:
    """A valid 13-field event with a fresh uuid."""
    return {
        "app_name": "sentrypeer",
        "app_version": "4.0.6",
        "event_timestamp": "2026-11-21 10:00:00.123456789",
        "event_uuid": str(uuid.uuid4()),
        "created_by_node_id": "732e7f50-637d-4fde-81e0-5c32f1bb5a92",
        "collected_method": "responsive",
        "transport_type": "UDP",
        "source_ip": "198.51.100.77",
        "destination_ip": "198.51.100.2",
        "called_number": "+441632960077",
        "sip_method": "INVITE",
        "sip_user_agent": "friendly-scanner",
        "sip_message": "INVITE sip:+441632960077@198.51.100.2 SIP/2.0\r\n\r\n",
        **overrides,
    }


class ServerTestCase(unittest.TestCase):
    settings: ClassVar[ServerSettings]
    client: ClassVar[Tollwatch]

    @classmethod
    def setUpClass(cls) -> None:
        cls.settings = server_settings()
        cls.client = Tollwatch(cls.settings.url, cls.settings.client_id, cls.settings.client_secret, lookup_deadline=PATIENT)

    @classmethod
    def tearDownClass(cls) -> None:
        cls.client.close()


class CredentialsTest(ServerTestCase):
    def test_a_wrong_secret_is_an_oauth_error_invalid_client(self) -> None:
        with Tollwatch(self.settings.url, self.settings.client_id, "tws_wrong", lookup_deadline=PATIENT) as wrong:
            with self.assertRaises(OAuthError) as raised:
                wrong.lookup_phone_number(self.settings.seen_number)
        self.assertEqual((raised.exception.status, raised.exception.error), (401, "invalid_client"))
        self.assertIsInstance(raised.exception.error_description, str)

    def test_a_client_without_the_permission_is_refused_with_insufficient_scope(self) -> None:
        s = self.settings
        with Tollwatch(s.url, s.limited_client_id, s.limited_client_secret, lookup_deadline=PATIENT) as limited:
            self.assertTrue(limited.lookup_ip_address(s.seen_ip)["found"])
            calls: list[Callable[[], object]] = [lambda: limited.lookup_phone_number(s.seen_number), lambda: limited.submit_event(event())]
            for call in calls:
                with self.assertRaises(TollwatchError) as raised:
                    call()
                error = raised.exception
                self.assertEqual((error.status, error.error), (403, "insufficient_scope"))
                self.assertTrue(error.type and error.type.endswith("/problems#insufficient_scope"), error.type)
                self.assertTrue(error.title and error.detail)


class EventsTest(ServerTestCase):
    def test_an_event_is_created_then_replayed_and_read_back(self) -> None:
        e = event()
        first = self.client.submit_event(e)
        self.assertEqual((first["status"], first["location"]), ("created", f"/api/events/{e['event_uuid']}"))
        self.assertTrue(first["message"])
        self.assertEqual(self.client.submit_event(e)["status"], "replayed")
        stored = self.client.get_event(e["event_uuid"].upper())
        assert stored is not None
        self.assertEqual((stored["event_uuid"], stored["called_number"]), (e["event_uuid"], e["called_number"]))
        self.assertTrue(stored["event_time"] and stored["received_at"])
        limit = self.client.rate_limit("submissions")
        assert limit is not None
        self.assertEqual((limit.quota, limit.window_seconds), (100_000, 3600))

    def test_another_event_under_a_taken_uuid_is_a_conflict_and_a_bad_one_names_every_field(self) -> None:
        e = event()
        self.client.submit_event(e)
        with self.assertRaises(TollwatchError) as conflict:
            self.client.submit_event({**e, "sip_method": "OPTIONS"})
        self.assertEqual((conflict.exception.status, conflict.exception.error), (409, "duplicate_event"))
        with self.assertRaises(TollwatchError) as invalid:
            self.client.submit_event({**event(), "transport_type": "SCTP", "event_uuid": "nope"})
        self.assertEqual((invalid.exception.status, invalid.exception.error), (422, "validation_failed"))
        self.assertEqual({f["field"] for f in invalid.exception.errors or []}, {"transport_type", "event_uuid"})

    def test_many_events_go_in_batches_each_stored_or_refused_on_its_own(self) -> None:
        events = [event() for _ in range(1203)]
        taken = events[5]
        events[1100] = {**events[1100], "transport_type": "SCTP"}
        events[1200] = {**taken, "sip_message": "different"}
        total = self.client.submit_events(events)
        self.assertEqual((total["created"], total["replayed"], total["conflict"], total["invalid"]), (1201, 0, 1, 1))
        self.assertEqual([r["index"] for r in total["results"]], list(range(1203)))
        self.assertEqual(total["results"][1100]["status"], "invalid")
        self.assertEqual([e["field"] for e in total["results"][1100].get("errors", [])], ["transport_type"])
        self.assertEqual((total["results"][1200]["status"], total["results"][1200]["event_uuid"]), ("conflict", taken["event_uuid"]))

    def test_events_are_listed_newest_first_filtered_page_after_page(self) -> None:
        node = str(uuid.uuid4())
        stamps = [f"2026-11-20 0{i}:00:00" for i in range(5)]
        for stamp in stamps:
            self.client.submit_event(event(created_by_node_id=node, event_timestamp=stamp))
        listed = list(self.client.list_events(node_id=node, limit=2))
        self.assertEqual([e["event_timestamp"] for e in listed], list(reversed(stamps)))
        page = self.client.events_page(node_id=node, limit=2)
        self.assertEqual(len(page["data"]), 2)
        self.assertIsNotNone(page["next_cursor"])
        rest = list(self.client.list_events(node_id=node, limit=2, cursor=page["next_cursor"]))
        self.assertEqual([e["event_timestamp"] for e in rest], list(reversed(stamps))[2:])
        self.assertEqual(list(self.client.list_events(node_id=node, until="2026-11-20 01:00:00")), listed[-1:])
        limit = self.client.rate_limit("event_reads")
        assert limit is not None
        self.assertEqual(limit.policy, "event_reads")

    def test_an_event_another_client_of_the_account_stored_and_one_that_is_not_there(self) -> None:
        stored = self.client.get_event(self.settings.event_uuid)
        assert stored is not None
        self.assertEqual((stored["source_ip"], phone_number_key(stored["called_number"])), (self.settings.seen_ip, self.settings.seen_number))
        self.assertIsNone(self.client.get_event(str(uuid.uuid4())))

    def test_a_bad_filter_is_validation_failed(self) -> None:
        with self.assertRaises(TollwatchError) as raised:
            self.client.events_page(limit=5000)
        self.assertEqual((raised.exception.status, raised.exception.error), (422, "validation_failed"))
        self.assertEqual([f["field"] for f in raised.exception.errors or []], ["limit"])


class LookupTest(ServerTestCase):
    def test_a_seen_number_in_any_written_form(self) -> None:
        for written in [self.settings.seen_number, "tel:" + self.settings.seen_number, "00" + self.settings.seen_number[1:]]:
            with self.subTest(written=written):
                answer = self.client.lookup_phone_number(written)
                assert answer["found"]
                self.assertEqual(answer["phone_number"].lstrip("0+"), self.settings.seen_number.lstrip("+"))
                self.assertGreaterEqual(answer["seen_count"], 1)
                self.assertTrue(0 <= answer["score"] <= 100 and answer["reasons"] and answer["matched_forms"])
        limit = self.client.rate_limit("lookups")
        assert limit is not None
        self.assertEqual((limit.policy, limit.quota, limit.window_seconds), ("lookups", 3600, 3600))
        self.assertLess(limit.remaining, 3600)

    def test_not_seen_is_an_answer_and_not_a_number_is_an_error(self) -> None:
        self.assertEqual(self.client.lookup_phone_number("+15550100999")["found"], False)
        self.assertEqual(self.client.lookup_ip_address("192.0.2.254")["found"], False)
        with self.assertRaises(TollwatchError) as number:
            self.client.lookup_phone_number("not a number!")
        self.assertEqual((number.exception.status, number.exception.error), (400, "invalid_phone_number"))
        with self.assertRaises(TollwatchError) as address:
            self.client.lookup_ip_address("999.1.1.1")
        self.assertEqual((address.exception.status, address.exception.error), (400, "invalid_ip_address"))

    def test_a_seen_address(self) -> None:
        answer = self.client.lookup_ip_address(self.settings.seen_ip)
        assert answer["found"]
        self.assertEqual(answer["ip_address"], self.settings.seen_ip)
        self.assertGreaterEqual(answer["called_number_count"], 1)

    def test_bulk_lookups_of_more_than_1000_values_answer_each_in_order(self) -> None:
        numbers = [self.settings.seen_number] + [f"+1555{i:07d}" for i in range(999)] + ["not a number!"]
        results = self.client.lookup_phone_numbers(numbers)
        self.assertEqual(len(results), 1001)
        self.assertEqual(results[0].get("found"), True)
        self.assertEqual({r.get("found") for r in results[1:1000]}, {False})
        self.assertEqual((results[1000].get("input"), results[1000].get("error")), ("not a number!", "invalid_phone_number"))
        addresses = self.client.lookup_ip_addresses([self.settings.seen_ip, "192.0.2.254", "nope"])
        self.assertEqual([a.get("found") for a in addresses], [True, False, None])

    def test_a_range_lookup_finds_a_seen_number_without_sending_it(self) -> None:
        found = self.client.range_lookup("tel:" + self.settings.seen_number)
        assert found["found"]
        self.assertEqual(found["key"], self.settings.seen_number)
        self.assertGreaterEqual(found["seen_count"], 1)
        self.assertEqual(self.client.range_lookup("+15550100999"), {"key": "+15550100999", "found": False})


class FeedTest(ServerTestCase):
    def test_the_address_feed_holds_the_seen_address_and_answers_none_while_unchanged(self) -> None:
        feed = self.client.ip_address_feed(min_score=0)
        assert feed is not None
        self.assertEqual(feed.kind, "ip-addresses")
        self.assertIn(self.settings.seen_ip, [e["ip_address"] for e in feed.entries])
        self.assertTrue(feed.etag)

        # Another test's events folded in between the two requests change the tag: poll until
        # two requests in a row see the same one.
        def poll() -> tuple[str | None, Feed[IpAddressFeedEntry] | None]:
            first = self.client.ip_address_feed(min_score=0)
            assert first is not None
            return first.etag, self.client.ip_address_feed(min_score=0, etag=first.etag)

        def unchanged(seen: tuple[str | None, Feed[IpAddressFeedEntry] | None]) -> bool:
            return seen[1] is None

        eventually("an unchanged feed answered None", poll, unchanged)

    def test_the_number_feed_holds_the_seen_number_key(self) -> None:
        feed = self.client.phone_number_feed(min_score=0)
        assert feed is not None
        self.assertEqual(feed.kind, "phone-numbers")
        self.assertIn(self.settings.seen_number, [e["phone_number"] for e in feed.entries])
        stale = self.client.phone_number_feed(min_score=0, etag='"not-the-tag"')
        self.assertIsNotNone(stale)


if __name__ == "__main__":
    unittest.main()
