"""The client of one Tollwatch server for one API client."""

from __future__ import annotations

import json
import math
import random as random_module
import ssl
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from datetime import datetime, timezone
from typing import Any, Literal, cast
from urllib.parse import quote, urlencode, urlsplit

from ._version import __version__
from .batches import json_bytes_of, split_into_batches, to_json
from .deadline import Deadline
from .errors import TollwatchError
from .phone_number import number_key_hash, phone_number_key
from .rate_limit import RateLimit, parse_rate_limit
from .retry import DEFAULT_RETRY_POLICY, RetryPolicy, parse_retry_after
from .retrying import Sleep, send_with_retries
from .tokens import SecretSource, TokenSource
from .transport import Request, Resolver, Response, Transport, system_resolver
from .types import (
    BatchItemResult,
    EventPage,
    Feed,
    IpAddressBulkResult,
    IpAddressFeedEntry,
    IpAddressLookup,
    PhoneNumberBulkResult,
    PhoneNumberFeedEntry,
    PhoneNumberLookup,
    Problem,
    RangeLookup,
    StoredEvent,
    SubmitEventsResult,
    SubmitResult,
)

DEFAULT_LOOKUP_DEADLINE = 1.0
"""Seconds a lookup may take, token request and retries included, unless told otherwise."""

RANGE_PREFIX_LENGTH = 5
"""Hex digits of the hash a range lookup sends (docs/api.md §13)."""

# Bounds of one request (docs/api.md §5, §7): items, and bytes of body.
BATCH_EVENTS = 1000
BATCH_BYTES = 16 * 1024 * 1024
BULK_VALUES = 1000
BULK_BYTES = 128 * 1024 - 64  # less room for the `{"phone_numbers":…}` around the array

Instant = str | datetime
"""An instant for ``since`` and ``until``: text in the forms of ``event_timestamp`` (docs/api.md
§5), or a datetime (a naive one is read as UTC, as the server reads a timestamp without zone)."""

class Tollwatch:
    """A client of one Tollwatch server for one API client.

    It gets and renews access tokens itself, retries what is safe to retry, and raises
    TollwatchError (an API problem), OAuthError (the token endpoint refused the credentials),
    NetworkError (no answer) or DeadlineExceeded (no answer in time). Every call takes
    ``deadline`` (seconds for the whole request: token request, tries and waits between them)
    and ``timeout`` (seconds for one try). Lookups have a deadline of ``lookup_deadline``
    (1 s) unless given one; other calls have none unless given one, and are bounded by the retry
    policy alone. A call that makes several requests (bulk lookups of more than 1,000 values,
    ``submit_events`` of more than 1,000 events, ``list_events``) bounds each request so.

    One client may be shared by threads; ``close()`` (or ``with``) closes its kept connections.
    """

    def __init__(
        self,
        base_url: str,
        client_id: str,
        client_secret: SecretSource,
        *,
        audience: str | None = None,
        token_url: str | None = None,
        retry: RetryPolicy = DEFAULT_RETRY_POLICY,
        lookup_deadline: float = DEFAULT_LOOKUP_DEADLINE,
        renew_before: float = 60.0,
        ssl_context: ssl.SSLContext | None = None,
        clock: Callable[[], float] = time.monotonic,
        sleep: Sleep = time.sleep,
        random: Callable[[], float] = random_module.random,
        resolver: Resolver | None = None,
    ) -> None:
        """
        :param base_url: the server's address, e.g. ``https://tollwatch.example.com``: the API is
            under ``/api``, tokens come from ``/oauth/token``.
        :param client_id: the API client's id, from the account owner.
        :param client_secret: its secret, or a function that returns the current one (called at
            every token request).
        :param audience: the audience to ask tokens for; the server's own API when None.
        :param token_url: the token endpoint, when it is not ``<base_url>/oauth/token``.
        :param retry: how to retry on 429, 502, 503, 504 and network errors.
        :param lookup_deadline: seconds every lookup may take unless a call gives its own
            ``deadline``; ``math.inf`` leaves lookups to the retry policy alone.
        :param renew_before: renew a token this many seconds before it expires (at most half
            its lifetime).
        :param ssl_context: an ``ssl.SSLContext`` for https (the system's CAs by default).
        :param clock: monotonic seconds (for tests).
        :param sleep: how to wait between tries (for tests).
        :param random: floats in [0, 1) for the backoff's jitter (for tests).
        :param resolver: ``socket.getaddrinfo`` or a stand-in (for tests).
        """
        parts = urlsplit(base_url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"base_url must be an http or https URL, e.g. https://tollwatch.example.com: {base_url!r}")
        if not lookup_deadline > 0:
            raise ValueError("lookup_deadline must be a positive number of seconds (math.inf for none)")
        # The root, whether given as the server's address or as its API's (`…/api`, docs/api.md §1).
        root = base_url.rstrip("/")
        if root.endswith("/api"):
            root = root[: -len("/api")]
        self._api = f"{root}/api"
        self._retry = retry
        self._lookup_deadline = lookup_deadline
        self._clock = clock
        self._sleep = sleep
        self._random = random
        self._user_agent = f"tollwatch-python/{__version__}"
        self._transport = Transport(ssl_context, resolver or system_resolver)
        self._tokens = TokenSource(
            token_url=token_url or f"{root}/oauth/token",
            client_id=client_id,
            client_secret=client_secret,
            audience=audience,
            renew_before=renew_before,
            transport=self._transport,
            policy=retry,
            user_agent=self._user_agent,
            clock=clock,
            sleep=sleep,
            random=random,
        )
        self._rate_limits: dict[str, RateLimit] = {}
        self._rate_limits_lock = threading.Lock()

    def __enter__(self) -> Tollwatch:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Closes the connections kept open for the next call; the client stays usable."""
        self._transport.close()

    @property
    def rate_limits(self) -> dict[str, RateLimit]:
        """The latest allowance the server reported, by policy: ``lookups``, ``submissions``,
        ``event_reads`` (docs/api.md §9). The allowance is the account's, not one answer's."""
        with self._rate_limits_lock:
            return dict(self._rate_limits)

    def rate_limit(self, policy: str) -> RateLimit | None:
        """The latest allowance reported for one policy, or None if no answer named it yet."""
        with self._rate_limits_lock:
            return self._rate_limits.get(policy)

    # Events (docs/api.md §5, §8)

    def submit_event(self, event: Mapping[str, object], *, deadline: float | None = None, timeout: float | None = None) -> SubmitResult:
        """Submits one event (a HoneypotEvent): ``created``, or ``replayed`` when the same event was already stored."""
        response = self._call("POST", "/events", to_json(event).encode("utf-8"), deadline, timeout)
        if response.status not in (200, 201):
            raise _failure(response)
        answer = _json(response)
        message = answer.get("message") if isinstance(answer, dict) else None
        return {
            "status": "created" if response.status == 201 else "replayed",
            "message": message if isinstance(message, str) else "",
            "location": response.header("location"),
        }

    def submit_events(
        self, events: Iterable[Mapping[str, object]], *, deadline: float | None = None, timeout: float | None = None
    ) -> SubmitEventsResult:
        """Submits events in batches of up to 1,000 (and 16 MiB), one batch after another.

        Each event is stored or refused on its own; the results keep the order of ``events``,
        ``index`` counting from its start. An error raised may follow batches already stored:
        submitting the same events again is safe, since stored ones answer ``replayed``.
        """
        total: SubmitEventsResult = {"results": [], "created": 0, "replayed": 0, "conflict": 0, "invalid": 0}
        for batch in split_into_batches(events, BATCH_EVENTS, BATCH_BYTES):
            response = self._call("POST", "/events/batch", batch.array(), deadline, timeout)
            if response.status != 200:
                raise _failure(response)
            page = cast(dict[str, Any], _json(response))
            for item in cast(list[BatchItemResult], page["results"]):
                result = item.copy()
                result["index"] += batch.start
                total["results"].append(result)
            total["created"] += int(page["created"])
            total["replayed"] += int(page["replayed"])
            total["conflict"] += int(page["conflict"])
            total["invalid"] += int(page["invalid"])
        return total

    def list_events(
        self,
        *,
        since: Instant | None = None,
        until: Instant | None = None,
        called_number: str | None = None,
        source_ip: str | None = None,
        sip_method: str | None = None,
        node_id: str | None = None,
        collected_method: str | None = None,
        transport_type: str | None = None,
        limit: int | None = None,
        cursor: str | None = None,
        deadline: float | None = None,
        timeout: float | None = None,
    ) -> Iterator[StoredEvent]:
        """The caller's events matching the filters, newest first, one page after another as the
        loop reaches them (docs/api.md §8). ``limit`` is the page size (at most 1,000); starts at
        ``cursor`` when given. Each page is one request, bounded by ``deadline`` on its own."""
        while True:
            page = self.events_page(
                since=since,
                until=until,
                called_number=called_number,
                source_ip=source_ip,
                sip_method=sip_method,
                node_id=node_id,
                collected_method=collected_method,
                transport_type=transport_type,
                limit=limit,
                cursor=cursor,
                deadline=deadline,
                timeout=timeout,
            )
            yield from page["data"]
            cursor = page["next_cursor"]
            if cursor is None:
                return

    def events_page(
        self,
        *,
        since: Instant | None = None,
        until: Instant | None = None,
        called_number: str | None = None,
        source_ip: str | None = None,
        sip_method: str | None = None,
        node_id: str | None = None,
        collected_method: str | None = None,
        transport_type: str | None = None,
        limit: int | None = None,
        cursor: str | None = None,
        deadline: float | None = None,
        timeout: float | None = None,
    ) -> EventPage:
        """One page of the caller's events (docs/api.md §8); pass its ``next_cursor`` as ``cursor``
        for the next. Filters combine with AND."""
        query = _query(
            since=_instant(since),
            until=_instant(until),
            called_number=called_number,
            source_ip=source_ip,
            sip_method=sip_method,
            node_id=node_id,
            collected_method=collected_method,
            transport_type=transport_type,
            limit=limit,
            cursor=cursor,
        )
        response = self._call("GET", f"/events{query}", None, deadline, timeout)
        if response.status != 200:
            raise _failure(response)
        return cast(EventPage, _json(response))

    def get_event(self, event_uuid: str, *, deadline: float | None = None, timeout: float | None = None) -> StoredEvent | None:
        """One of the caller's events by its uuid, or None when the account has none such."""
        response = self._call("GET", f"/events/{_path(event_uuid)}", None, deadline, timeout)
        if response.status == 404:
            return None
        if response.status != 200:
            raise _failure(response)
        return cast(StoredEvent, _json(response))

    # Lookups (docs/api.md §7, §13)

    def lookup_phone_number(self, phone_number: str, *, deadline: float | None = None, timeout: float | None = None) -> PhoneNumberLookup:
        """What is known of a number; one never seen is ``found: False``, not an error."""
        return cast(PhoneNumberLookup, self._lookup(f"/phone-numbers/{_path(phone_number)}", deadline, timeout))

    def lookup_ip_address(self, ip_address: str, *, deadline: float | None = None, timeout: float | None = None) -> IpAddressLookup:
        """What is known of a source address; one never seen is ``found: False``, not an error."""
        return cast(IpAddressLookup, self._lookup(f"/ip-addresses/{_path(ip_address)}", deadline, timeout))

    def lookup_phone_numbers(
        self, phone_numbers: Iterable[str], *, deadline: float | None = None, timeout: float | None = None
    ) -> list[PhoneNumberBulkResult]:
        """Looks numbers up in bulk, 1,000 per request: one result per value, in order, an invalid
        value answered with its error (``{"input","error","message"}``)."""
        return cast(list[PhoneNumberBulkResult], self._bulk("/phone-numbers/lookup", "phone_numbers", phone_numbers, deadline, timeout))

    def lookup_ip_addresses(
        self, ip_addresses: Iterable[str], *, deadline: float | None = None, timeout: float | None = None
    ) -> list[IpAddressBulkResult]:
        """Looks addresses up in bulk, 1,000 per request: one result per value, in order, an
        invalid value answered with its error."""
        return cast(list[IpAddressBulkResult], self._bulk("/ip-addresses/lookup", "ip_addresses", ip_addresses, deadline, timeout))

    def range_lookup(self, phone_number: str, *, deadline: float | None = None, timeout: float | None = None) -> RangeLookup:
        """Whether a number was seen, without sending it (docs/api.md §13).

        The number's key is worked out and hashed here, only the first 5 hex digits of its
        SHA-256 are sent, and the answer's range is searched here for the rest; padding
        (``seen_count`` 0) is ignored. Raises ValueError, before anything is sent, for a value
        that is no phone number.
        """
        key = phone_number_key(phone_number)
        if key is None:
            raise ValueError(
                "not a phone number: up to 64 digits, letters, * or #, optionally after + (tel: and sip: URIs and separators are accepted)"
            )
        digest = number_key_hash(key)
        prefix, suffix = digest[:RANGE_PREFIX_LENGTH], digest[RANGE_PREFIX_LENGTH:]
        response = self._call("GET", f"/phone-numbers/range/{prefix}", None, self._lookup_bound(deadline), timeout)
        if response.status != 200:
            raise _failure(response)
        entries = cast(dict[str, Any], _json(response))["entries"]
        for entry in entries:
            if entry["seen_count"] > 0 and entry["suffix"] == suffix:
                return {"key": key, "found": True, "seen_count": entry["seen_count"], "score": entry["score"]}
        return {"key": key, "found": False}

    # Feeds (docs/api.md §14)

    def ip_address_feed(
        self,
        *,
        min_score: int | None = None,
        since: Instant | None = None,
        etag: str | None = None,
        deadline: float | None = None,
        timeout: float | None = None,
    ) -> Feed[IpAddressFeedEntry] | None:
        """The addresses scoring at least ``min_score`` (server default 50), most recently seen
        first. With the ``etag`` of an earlier answer: None while nothing has changed (a 304)."""
        return cast(Feed[IpAddressFeedEntry] | None, self._feed("/feeds/ip-addresses", min_score, since, etag, deadline, timeout))

    def phone_number_feed(
        self,
        *,
        min_score: int | None = None,
        since: Instant | None = None,
        etag: str | None = None,
        deadline: float | None = None,
        timeout: float | None = None,
    ) -> Feed[PhoneNumberFeedEntry] | None:
        """The number keys scoring at least ``min_score`` (server default 50), most recently seen
        first. With the ``etag`` of an earlier answer: None while nothing has changed (a 304)."""
        return cast(Feed[PhoneNumberFeedEntry] | None, self._feed("/feeds/phone-numbers", min_score, since, etag, deadline, timeout))

    # The requests

    def _lookup(self, path: str, deadline: float | None, timeout: float | None) -> dict[str, Any]:
        response = self._call("GET", path, None, self._lookup_bound(deadline), timeout)
        answer = _json(response)
        # 404 with `found: false` is the contract's "never seen" (docs/api.md §7), not a problem.
        if response.status == 200 or (response.status == 404 and isinstance(answer, dict) and answer.get("found") is False):
            return cast(dict[str, Any], answer)
        raise _failure(response)

    def _bulk(self, path: str, member: str, values: Iterable[str], deadline: float | None, timeout: float | None) -> list[Any]:
        results: list[Any] = []
        for batch in split_into_batches(values, BULK_VALUES, BULK_BYTES):
            body = f"{{{json.dumps(member)}:[{','.join(batch.json)}]}}"
            response = self._call("POST", path, json_bytes_of(body), self._lookup_bound(deadline), timeout)
            if response.status != 200:
                raise _failure(response)
            results.extend(cast(dict[str, Any], _json(response))["results"])
        return results

    def _feed(
        self, path: str, min_score: int | None, since: Instant | None, etag: str | None, deadline: float | None, timeout: float | None
    ) -> Feed[Any] | None:
        query = _query(min_score=min_score, since=_instant(since), format="json")
        headers = {"if-none-match": etag} if etag else {}
        response = self._call("GET", f"{path}{query}", None, deadline, timeout, headers)
        if response.status == 304:
            return None
        if response.status != 200:
            raise _failure(response)
        answer = cast(dict[str, Any], _json(response))
        return Feed(kind=answer["kind"], scored_at=answer["scored_at"], entries=answer["entries"], etag=response.header("etag"))

    def _lookup_bound(self, deadline: float | None) -> float:
        return self._lookup_deadline if deadline is None else deadline

    def _call(
        self,
        method: Literal["GET", "POST"],
        path: str,
        body: bytes | None,
        deadline: float | None,
        timeout: float | None,
        extra_headers: Mapping[str, str] | None = None,
    ) -> Response:
        """One API request with a bearer token, retried by the retry policy, within one deadline.

        A 401 means the token was revoked or expired early: it is dropped, a new one fetched, and
        the request sent once more; a second 401 is the caller's to see.
        """
        bound = Deadline(math.inf if deadline is None else deadline, self._clock)
        headers = {"accept": "application/json", "user-agent": self._user_agent, **(extra_headers or {})}
        if body is not None:
            headers["content-type"] = "application/json"

        def send(token: str) -> Response:
            request = Request(method, f"{self._api}{path}", {**headers, "authorization": f"Bearer {token}"}, body)
            return send_with_retries(
                self._transport, request, self._retry, bound, timeout=timeout, sleep=self._sleep, random=self._random
            )

        token = self._tokens.get(bound, timeout)
        response = send(token)
        if response.status == 401:
            self._tokens.invalidate(token)
            response = send(self._tokens.get(bound, timeout))
        limit = parse_rate_limit(response.header("ratelimit"), response.header("ratelimit-policy"))
        if limit is not None:
            with self._rate_limits_lock:
                self._rate_limits[limit.policy] = limit
        return response


def _failure(response: Response) -> TollwatchError:
    """The error an unsuccessful answer stands for."""
    answer = _json(response)
    problem = cast(Problem, answer) if isinstance(answer, dict) and isinstance(answer.get("error"), str) else None
    return TollwatchError(response.status, problem, parse_retry_after(response.header("retry-after")))


def _json(response: Response) -> Any:
    if not response.body:
        return None
    try:
        return json.loads(response.body)
    except ValueError:
        return None


def _path(value: str) -> str:
    """A value as one path segment: every character but the unreserved ones percent-encoded."""
    return quote(value, safe="", errors="surrogatepass")


def _query(**params: object) -> str:
    present = {name: str(value) for name, value in params.items() if value is not None}
    return f"?{urlencode(present)}" if present else ""


def _instant(value: Instant | None) -> str | None:
    if value is None or isinstance(value, str):
        return value
    if value.tzinfo is not None:
        value = value.astimezone(timezone.utc)
    return value.strftime("%Y-%m-%d %H:%M:%S.%f")
