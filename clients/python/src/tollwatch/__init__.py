"""tollwatch: a client of the Tollwatch API (docs/api.md), on the standard library alone.

    from tollwatch import Tollwatch
    client = Tollwatch("https://tollwatch.example.com", client_id, client_secret)
    answer = client.lookup_phone_number("+46812118532")   # 1 s at most, retries included
    if answer["found"]:
        print(answer["score"], answer["reasons"])
"""

from ._version import __version__
from .client import DEFAULT_LOOKUP_DEADLINE, Instant, Tollwatch
from .errors import DeadlineExceeded, Error, NetworkError, OAuthError, TollwatchError
from .phone_number import number_key_hash, phone_number_key
from .rate_limit import RateLimit, parse_rate_limit
from .retry import DEFAULT_RETRY_POLICY, RetryPolicy, parse_retry_after
from .tokens import SecretSource
from .types import (
    BatchItemResult,
    BulkItemError,
    EventPage,
    Feed,
    FieldError,
    HoneypotEvent,
    IpAddressBulkResult,
    IpAddressFeedEntry,
    IpAddressFound,
    IpAddressLookup,
    IpAddressNotFound,
    PhoneNumberBulkResult,
    PhoneNumberFeedEntry,
    PhoneNumberFound,
    PhoneNumberLookup,
    PhoneNumberNotFound,
    Problem,
    RangeLookup,
    RangeLookupFound,
    RangeLookupNotFound,
    StoredEvent,
    SubmitEventsResult,
    SubmitResult,
    UserAgentCount,
)

__all__ = [
    "DEFAULT_LOOKUP_DEADLINE",
    "DEFAULT_RETRY_POLICY",
    "BatchItemResult",
    "BulkItemError",
    "DeadlineExceeded",
    "Error",
    "EventPage",
    "Feed",
    "FieldError",
    "HoneypotEvent",
    "Instant",
    "IpAddressBulkResult",
    "IpAddressFeedEntry",
    "IpAddressFound",
    "IpAddressLookup",
    "IpAddressNotFound",
    "NetworkError",
    "OAuthError",
    "PhoneNumberBulkResult",
    "PhoneNumberFeedEntry",
    "PhoneNumberFound",
    "PhoneNumberLookup",
    "PhoneNumberNotFound",
    "Problem",
    "RangeLookup",
    "RangeLookupFound",
    "RangeLookupNotFound",
    "RateLimit",
    "RetryPolicy",
    "SecretSource",
    "StoredEvent",
    "SubmitEventsResult",
    "SubmitResult",
    "Tollwatch",
    "TollwatchError",
    "UserAgentCount",
    "__version__",
    "number_key_hash",
    "parse_rate_limit",
    "parse_retry_after",
    "phone_number_key",
]
