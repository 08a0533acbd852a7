"""Access tokens by the client-credentials grant (docs/api.md §2), cached until shortly before expiry."""

from __future__ import annotations

import json
import math
import threading
from collections.abc import Callable
from dataclasses import dataclass

from .batches import to_json
from .deadline import Deadline
from .errors import DeadlineExceeded, Error, OAuthError
from .retry import RetryPolicy, parse_retry_after
from .retrying import Sleep, send_with_retries
from .transport import Request, Transport

SecretSource = str | Callable[[], str]
"""The client secret, or a function that reads the current one (from a vault, after a rotation)."""

STILL_VALID = 10.0
"""Seconds a token must still be valid to be used while its successor is fetched: a slow request's worth."""
RENEW_PAUSE = 5.0
"""Seconds after a failed renewal in the background before the next is tried."""


@dataclass(frozen=True)
class _Token:
    value: str
    renew_at: float
    expires_at: float


class TokenSource:
    """Tokens for one API client, shared by every call and thread of a Tollwatch client.

    Calls that need a new token together share one token request. A token due for renewal but
    still valid is used while its successor is fetched on a thread of its own, so that a call on
    a call path does not wait for a token request it could have done without.
    """

    def __init__(
        self,
        *,
        token_url: str,
        client_id: str,
        client_secret: SecretSource,
        audience: str | None,
        renew_before: float,
        transport: Transport,
        policy: RetryPolicy,
        user_agent: str,
        clock: Callable[[], float],
        sleep: Sleep,
        random: Callable[[], float],
    ) -> None:
        self._token_url = token_url
        self._client_id = client_id
        self._client_secret = client_secret
        self._audience = audience
        self._renew_before = renew_before
        self._transport = transport
        self._policy = policy
        self._user_agent = user_agent
        self._clock = clock
        self._sleep = sleep
        self._random = random
        self._cached: _Token | None = None
        # Held by whoever is asking the token endpoint, so that one request serves everyone.
        self._requesting = threading.Lock()
        self._quiet_until = -math.inf

    def get(self, deadline: Deadline, timeout: float | None = None) -> str:
        """A token valid for a while yet: the cached one, or a new one fetched within ``deadline``."""
        now = self._clock()
        cached = self._cached
        if cached and now < cached.renew_at:
            return cached.value
        if cached and now < cached.expires_at - STILL_VALID:
            if now >= self._quiet_until:
                self._renew_in_background()
            return cached.value
        left = deadline.remaining()
        if not self._requesting.acquire(timeout=-1 if math.isinf(left) else left):
            raise DeadlineExceeded(deadline.seconds)
        try:
            cached = self._cached
            # Another call may have fetched one while this one waited for the lock.
            if cached and self._clock() < cached.renew_at:
                return cached.value
            return self._request(deadline, timeout)
        finally:
            self._requesting.release()

    def invalidate(self, token: str) -> None:
        """Forgets ``token`` after the API refused it (revoked, or expired early by a clock that
        disagrees), so that the next get() asks for a new one. A token already replaced is left
        alone: calls refused together renew once."""
        cached = self._cached
        if cached and cached.value == token:
            self._cached = None

    def _renew_in_background(self) -> None:
        if not self._requesting.acquire(blocking=False):
            return  # a request is under way already

        def renew() -> None:
            try:
                self._request(Deadline(math.inf, self._clock), None)
            except Error:
                # The token in hand is still good; the next call that finds it due tries again.
                self._quiet_until = self._clock() + RENEW_PAUSE
            finally:
                self._requesting.release()

        threading.Thread(target=renew, name="tollwatch-token-renewal", daemon=True).start()

    def _request(self, deadline: Deadline, timeout: float | None) -> str:
        secret = self._client_secret if isinstance(self._client_secret, str) else self._client_secret()
        body: dict[str, str] = {"grant_type": "client_credentials", "client_id": self._client_id, "client_secret": secret}
        if self._audience:
            body["audience"] = self._audience
        request = Request(
            "POST",
            self._token_url,
            {"content-type": "application/json", "accept": "application/json", "user-agent": self._user_agent},
            to_json(body).encode("utf-8"),
        )
        requested_at = self._clock()
        response = send_with_retries(
            self._transport, request, self._policy, deadline, timeout=timeout, sleep=self._sleep, random=self._random
        )
        try:
            answer = json.loads(response.body)
        except ValueError:
            answer = None
        if not isinstance(answer, dict):
            answer = {}
        token = answer.get("access_token")
        if response.status != 200 or not isinstance(token, str):
            error = answer.get("error")
            description = answer.get("error_description")
            raise OAuthError(
                response.status,
                error if isinstance(error, str) else "unexpected_response",
                description if isinstance(description, str) else None,
                parse_retry_after(response.header("retry-after")),
            )
        lifetime = answer.get("expires_in")
        lifetime = float(lifetime) if isinstance(lifetime, (int, float)) and not isinstance(lifetime, bool) else 0.0
        # From when the request was sent, so that a slow answer cannot make the token look younger than it is.
        margin = min(self._renew_before, lifetime / 2)
        self._cached = _Token(token, requested_at + lifetime - margin, requested_at + lifetime)
        return token
