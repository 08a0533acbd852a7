"""Splitting a long list into the requests the server takes (docs/api.md §5, §7)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass


@dataclass(frozen=True)
class Batch:
    """A run of consecutive items, serialised, with the index of its first item in the input."""

    start: int
    """Index in the whole input of the batch's first item."""
    json: list[str]
    """The items' JSON texts, in order."""

    def array(self) -> bytes:
        """The batch as one JSON array in UTF-8, as it is sent."""
        return json_bytes_of(f"[{','.join(self.json)}]")


def to_json(value: object) -> str:
    """Compact JSON, non-ASCII kept as itself: a 60 KiB SIP message in Cyrillic stays 60 KiB of
    UTF-8 on the wire, where escapes would double it past the server's bound."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def json_bytes_of(text: str) -> bytes:
    """UTF-8 of a JSON text. A lone surrogate cannot be UTF-8: it is sent as a JSON escape,
    for the server to refuse in its own words (docs/api.md §5)."""
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        return json.dumps(json.loads(text), ensure_ascii=True, separators=(",", ":")).encode("ascii")


def split_into_batches(items: Iterable[object], max_items: int, max_bytes: int) -> Iterator[Batch]:
    """Consecutive batches of at most ``max_items`` whose JSON array stays within ``max_bytes``.

    An item too large on its own goes alone, for the server to refuse with its own problem.
    """
    current: list[str] = []
    start = 0
    size = 1  # the opening bracket
    for index, item in enumerate(items):
        text = to_json(item)
        length = len(json_bytes_of(text)) + 1  # its comma or closing bracket
        if current and (len(current) >= max_items or size + length > max_bytes):
            yield Batch(start, current)
            current, start, size = [], index, 1
        current.append(text)
        size += length
    if current:
        yield Batch(start, current)
