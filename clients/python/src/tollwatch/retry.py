"""When and how long to wait before trying a request again."""

from __future__ import annotations

import math
import re
import time
from dataclasses import dataclass
from datetime import timezone
from email.utils import parsedate_to_datetime
from typing import Callable


@dataclass(frozen=True)
class RetryPolicy:
    """How requests are retried on 429, 502, 503, 504 and network errors. Durations in seconds."""

    max_attempts: int = 5
    """Tries in all, the first included."""
    base_delay: float = 0.5
    """The first backoff step, doubled each try."""
    max_delay: float = 30.0
    """The largest backoff step."""
    max_retry_after: float = 60.0
    """The longest ``Retry-After`` worth waiting for. A longer one (a plan's hourly allowance
    spent, say) is not slept through: the error is raised at once, carrying it."""
    timeout: float = 30.0
    """How long one try may take before it counts as a network error."""

    def __post_init__(self) -> None:
        if self.max_attempts < 1:
            raise ValueError("max_attempts must be at least 1")
        for name in ("base_delay", "max_delay", "max_retry_after", "timeout"):
            value = getattr(self, name)
            if not value >= 0 or (name == "timeout" and value == 0):
                raise ValueError(f"{name} must be a positive number of seconds")


DEFAULT_RETRY_POLICY = RetryPolicy()
"""Five tries over roughly half a minute at most, unless the server asks to wait."""

RETRYABLE_STATUSES = frozenset({429, 502, 503, 504})
"""Answers worth trying again: the allowance spent, the store briefly down, and the 502 and 504
a proxy in front sends while the server restarts. Every request the client makes is safe to
repeat: reads, lookups and submissions alike (an event resent is a 200 replay, docs/api.md §5)."""


def backoff_delay(attempt: int, retry_after: float | None, policy: RetryPolicy, random: Callable[[], float]) -> float:
    """The wait in seconds before try ``attempt + 1`` (``attempt`` counts from 1).

    "Full jitter" exponential backoff, so that many clients refused together do not return
    together; never shorter than the server's ``Retry-After``, to which a little jitter is added
    for the same reason. ``random`` returns a float in [0, 1).
    """
    step = min(policy.max_delay, policy.base_delay * 2.0 ** (attempt - 1))
    if retry_after is None:
        return random() * step
    return retry_after + random() * min(step, 1.0)


_DELAY_SECONDS = re.compile(r"[0-9]+")


def parse_retry_after(value: str | None, now: float | None = None) -> int | None:
    """Reads ``Retry-After``: delay seconds or an HTTP date, as whole seconds from ``now``.

    None when absent or unreadable. ``now`` is seconds since the epoch (the wall clock, which an
    HTTP date is written in).
    """
    if value is None:
        return None
    text = value.strip(" \t")
    if _DELAY_SECONDS.fullmatch(text):
        return int(text)
    try:
        when = parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:
        # An HTTP date is always GMT (RFC 9110 §5.6.7); "-0000" parses without a zone.
        when = when.replace(tzinfo=timezone.utc)
    seconds = when.timestamp() - (time.time() if now is None else now)
    return max(0, math.ceil(seconds))
