"""Splitting long lists into the requests the server takes."""

from __future__ import annotations

import json
import unittest

import support  # noqa: F401  (the package from the checkout)
from tollwatch.batches import split_into_batches


class SplitIntoBatchesTest(unittest.TestCase):
    def test_at_most_max_items_each_with_the_index_of_its_first_item(self) -> None:
        batches = list(split_into_batches([f"+4681211{i:04d}" for i in range(2500)], 1000, 10**9))
        self.assertEqual([(b.start, len(b.json)) for b in batches], [(0, 1000), (1000, 1000), (2000, 500)])
        self.assertEqual(json.loads(batches[2].array())[0], "+46812112000")

    def test_the_json_array_stays_within_max_bytes(self) -> None:
        items = ["x" * 100] * 10  # 102 bytes each as JSON, 103 with the comma
        batches = list(split_into_batches(items, 1000, 400))
        self.assertEqual([len(b.json) for b in batches], [3, 3, 3, 1])
        for batch in batches:
            self.assertLessEqual(len(batch.array()), 400)

    def test_bytes_are_counted_in_utf8_as_sent(self) -> None:
        items = ["\u0436" * 100] * 4  # 200 bytes of UTF-8 each, 100 characters
        batches = list(split_into_batches(items, 1000, 450))
        self.assertEqual([len(b.json) for b in batches], [2, 2])
        self.assertIn("\u0436".encode(), batches[0].array())

    def test_an_item_too_large_on_its_own_goes_alone(self) -> None:
        batches = list(split_into_batches(["a", "b" * 500, "c"], 1000, 100))
        self.assertEqual([b.json for b in batches], [['"a"'], [json.dumps("b" * 500)], ['"c"']])

    def test_nothing_to_send_is_no_batch(self) -> None:
        self.assertEqual(list(split_into_batches([], 1000, 1000)), [])

    def test_a_lone_surrogate_is_sent_escaped_for_the_server_to_refuse(self) -> None:
        (batch,) = split_into_batches([{"sip_message": "a\ud800b"}], 1000, 1000)
        self.assertEqual(batch.array(), b'[{"sip_message":"a\\ud800b"}]')


if __name__ == "__main__":
    unittest.main()
