"""A request tried again on what is worth retrying, within the retry policy and the call's deadline."""

from __future__ import annotations

from typing import Callable
from urllib.parse import urlsplit

from .deadline import Deadline
from .errors import DeadlineExceeded, NetworkError
from .retry import RETRYABLE_STATUSES, RetryPolicy, backoff_delay, parse_retry_after
from .transport import Request, Response, Transport, TransportFailure

Sleep = Callable[[float], None]
"""Waits so many seconds: ``time.sleep``, or a stand-in for tests."""


def send_with_retries(
    transport: Transport,
    request: Request,
    policy: RetryPolicy,
    deadline: Deadline,
    *,
    timeout: float | None = None,
    sleep: Sleep,
    random: Callable[[], float],
) -> Response:
    """Sends ``request``, again on 429, 502, 503, 504 or a network error, at most
    ``policy.max_attempts`` times; each try is given ``timeout`` (the policy's by default) or
    what is left of the deadline, whichever is less.

    Returns the last answer, whatever its status. No wait ever ends past the deadline: a
    ``Retry-After`` longer than ``policy.max_retry_after`` or than the time left, or a backoff
    longer than the time left, ends the tries at once and that answer is returned for the
    caller to raise (with its ``retry_after``). Raises DeadlineExceeded when the deadline ran
    out while waiting for an answer, NetworkError when the last try got none.
    """
    try_timeout = policy.timeout if timeout is None else timeout
    last_failure: BaseException | None = None
    attempt = 0
    while True:
        attempt += 1
        left = deadline.remaining()
        if left <= 0:
            raise DeadlineExceeded(deadline.seconds) from last_failure
        budget = min(try_timeout, left)
        try:
            response = transport.send(request, budget)
        except TransportFailure as failure:
            if failure.timed_out and budget >= left:
                # The deadline, not the try's own timeout, cut it short.
                raise DeadlineExceeded(deadline.seconds) from failure
            error = NetworkError(f"cannot reach {_origin(request.url)}: {failure.reason}")
            error.__cause__ = failure.__cause__ or failure
            delay = backoff_delay(attempt, None, policy, random)
            if attempt >= policy.max_attempts or delay >= deadline.remaining():
                raise error from error.__cause__
            last_failure = error
            sleep(delay)
            continue
        if response.status not in RETRYABLE_STATUSES or attempt >= policy.max_attempts:
            return response
        retry_after = parse_retry_after(response.header("retry-after"))
        if retry_after is not None and retry_after > policy.max_retry_after:
            return response
        delay = backoff_delay(attempt, retry_after, policy, random)
        if delay >= deadline.remaining():
            return response
        sleep(delay)


def _origin(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"
