"""The allowance left, from the RateLimit fields every limited answer carries (docs/api.md §9)."""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class RateLimit:
    """``RateLimit: "lookups";r=3597;t=1184`` with ``RateLimit-Policy: "lookups";q=3600;w=3600``.

    The fields of draft-ietf-httpapi-ratelimit-headers-10, as the server sends them.
    """

    policy: str
    """The policy's name: the route group, ``lookups``, ``submissions`` or ``event_reads``."""
    remaining: int
    """Units left in the current window."""
    reset_seconds: int
    """Seconds until the window resets."""
    quota: int | None = None
    """The policy's quota per window, when ``RateLimit-Policy`` names it."""
    window_seconds: int | None = None
    """The policy's window in seconds, when ``RateLimit-Policy`` names it."""


# One list member of a structured field (RFC 9651): a string or a token, then ;key=value
# parameters. Members of other shapes are skipped: the client reads only what this service sends.
_MEMBER = re.compile(
    r'\s*(?:"((?:[^"\\]|\\.)*)"|([A-Za-z*][\w:./*%!#$&\'+^`|~-]*))'
    r"((?:\s*;\s*[a-z*][a-z0-9_.*-]*(?:=[^;,]*)?)*)\s*",
    re.ASCII,
)
_INTEGER = re.compile(r"-?[0-9]+")


def parse_rate_limit(ratelimit: str | None, policy: str | None) -> RateLimit | None:
    """Reads the two fields' values; None when ``RateLimit`` is absent or lacks ``r`` or ``t``."""
    members = _members(ratelimit)
    if not members:
        return None
    name, params = members[0]
    if "r" not in params or "t" not in params:
        return None
    named: dict[str, int] = next((p for n, p in _members(policy) if n == name), {})
    return RateLimit(
        policy=name,
        remaining=params["r"],
        reset_seconds=params["t"],
        quota=named.get("q"),
        window_seconds=named.get("w"),
    )


def _members(field: str | None) -> list[tuple[str, dict[str, int]]]:
    if not field:
        return []
    members: list[tuple[str, dict[str, int]]] = []
    # A comma inside a quoted name would split wrongly; policy names here are plain words.
    for text in field.split(","):
        match = _MEMBER.fullmatch(text)
        if not match:
            continue
        params: dict[str, int] = {}
        for param in (match.group(3) or "").split(";")[1:]:
            key, sep, value = param.strip().partition("=")
            if key and sep and _INTEGER.fullmatch(value.strip()):
                params[key] = int(value.strip())
        quoted, token = match.group(1), match.group(2)
        name = re.sub(r"\\(.)", r"\1", quoted) if quoted is not None else token
        members.append((name, params))
    return members
