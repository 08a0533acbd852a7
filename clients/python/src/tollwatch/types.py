"""The shapes of what the API answers (docs/api.md), as the TypedDicts ``json.loads`` gives.

The server's answers are handed back as the dictionaries they were parsed into: the field names
are the API's own, a field the server adds later (changes to ``/api`` are additive) passes
through, and ``json.dumps`` prints an answer exactly as it came. The few values the client makes
itself from headers (RateLimit, Feed) are dataclasses instead.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Generic, Literal, NotRequired, TypedDict, TypeVar

CollectedMethod = Literal["responsive", "passive"]
TransportType = Literal["UDP", "TCP", "TLS"]


class HoneypotEvent(TypedDict):
    """One SIP probe as a honeypot submits it: the 13 fields of docs/api.md §5, all strings."""

    app_name: str
    app_version: str
    event_timestamp: str
    event_uuid: str
    created_by_node_id: str
    collected_method: CollectedMethod
    transport_type: TransportType
    source_ip: str
    destination_ip: str
    called_number: str
    sip_method: str
    sip_user_agent: str
    sip_message: str


class StoredEvent(HoneypotEvent):
    """An event as read back (docs/api.md §8): its fields as stored, and two instants."""

    event_time: str
    """The normalised instant, UTC, with nanoseconds."""
    received_at: str
    """When the service committed it."""


class FieldError(TypedDict):
    """One bad field of a ``validation_failed`` problem, or of a refused event in a batch."""

    field: str
    message: str


class Problem(TypedDict):
    """An RFC 9457 problem document (docs/api.md §4)."""

    type: str
    title: str
    status: int
    detail: str
    error: str
    errors: NotRequired[list[FieldError]]


class PhoneNumberFound(TypedDict):
    """Attackers tried to call this number (docs/api.md §7)."""

    phone_number: str
    found: Literal[True]
    seen_count: int
    first_seen: str
    last_seen: str
    score: int
    reasons: list[str]
    source_ip_count: int
    sip_methods: dict[str, int]
    matched_forms: list[str]
    e164: NotRequired[str]
    country: NotRequired[str | None]
    number_type: NotRequired[str | None]
    message: str


class PhoneNumberNotFound(TypedDict):
    """Never seen in what the caller may see: a normal answer (a 404 with ``found: false``)."""

    phone_number: str
    found: Literal[False]
    message: str


class UserAgentCount(TypedDict):
    user_agent: str
    count: int


class IpAddressFound(TypedDict):
    """This address probed honeypots (docs/api.md §7)."""

    ip_address: str
    found: Literal[True]
    seen_count: int
    first_seen: str
    last_seen: str
    score: int
    reasons: list[str]
    called_number_count: int
    user_agents: list[UserAgentCount]
    # The scanning tools those User-Agents name (docs/scoring.md, "Tags"); servers before tags lack it.
    tags: NotRequired[list[str]]
    transports: dict[str, int]
    message: str


class IpAddressNotFound(TypedDict):
    """Never seen: a normal answer (a 404 with ``found: false``)."""

    ip_address: str
    found: Literal[False]
    message: str


class BulkItemError(TypedDict):
    """A bulk lookup's answer for a value that is not a number (or an address)."""

    input: str | int | float | bool | None
    error: str
    message: str


PhoneNumberLookup = PhoneNumberFound | PhoneNumberNotFound
IpAddressLookup = IpAddressFound | IpAddressNotFound
PhoneNumberBulkResult = PhoneNumberFound | PhoneNumberNotFound | BulkItemError
IpAddressBulkResult = IpAddressFound | IpAddressNotFound | BulkItemError


class RangeLookupFound(TypedDict):
    """A range lookup found the number's hash (docs/api.md §13)."""

    key: str
    """The number key that was hashed, e.g. ``+46812118532``."""
    found: Literal[True]
    seen_count: int
    score: int


class RangeLookupNotFound(TypedDict):
    """A range lookup did not find the number's hash among the range's numbers."""

    key: str
    found: Literal[False]


RangeLookup = RangeLookupFound | RangeLookupNotFound


class EventPage(TypedDict):
    """One page of the caller's events, newest first; ``next_cursor`` is None on the last page."""

    data: list[StoredEvent]
    next_cursor: str | None


class SubmitResult(TypedDict):
    """What a single submission did: ``created``, or ``replayed`` for an identical event already stored."""

    status: Literal["created", "replayed"]
    message: str
    location: str | None
    """Where the event is read back, ``/api/events/{event_uuid}``."""


class BatchItemResult(TypedDict):
    """One event's outcome in a batch (docs/api.md §5); ``index`` is its place in the list given."""

    index: int
    event_uuid: str | None
    status: Literal["created", "replayed", "conflict", "invalid"]
    errors: NotRequired[list[FieldError]]


class SubmitEventsResult(TypedDict):
    """The outcomes of ``submit_events`` over every batch sent, and the counts by status."""

    results: list[BatchItemResult]
    created: int
    replayed: int
    conflict: int
    invalid: int


class IpAddressFeedEntry(TypedDict):
    ip_address: str
    score: int
    seen_count: int
    first_seen: str
    last_seen: str
    tags: NotRequired[list[str]]


class PhoneNumberFeedEntry(TypedDict):
    phone_number: str
    """The number key: E.164 ``+…`` for international forms."""
    score: int
    seen_count: int
    first_seen: str
    last_seen: str


Entry = TypeVar("Entry", IpAddressFeedEntry, PhoneNumberFeedEntry)


@dataclass(frozen=True)
class Feed(Generic[Entry]):
    """A feed's JSON answer (docs/api.md §14) and the ``ETag`` to poll it with next time."""

    kind: str
    scored_at: str
    """The instant the scores were computed at: the start of the hour."""
    entries: list[Entry]
    etag: str | None
    """Pass it back as ``etag=`` to be answered None while nothing has changed."""
