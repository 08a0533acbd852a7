"""The failures the client raises: one base class, then one class per way a call can fail."""

from __future__ import annotations

from typing import Any

from .types import FieldError, Problem


class Error(Exception):
    """Every failure this package raises: ``except tollwatch.Error`` catches them all."""


class TollwatchError(Error):
    """An ``/api`` answer that is an error (docs/api.md §4).

    Carries the RFC 9457 problem document's members and the HTTP status. An answer that was not
    a problem document (a proxy's error page, say) has ``error == "unexpected_response"``.
    """

    status: int
    """The HTTP status of the answer."""
    error: str
    """The stable machine code, such as ``validation_failed`` or ``rate_limited``."""
    type: str | None
    """The problem type URI: the section of the server's ``/problems`` page that explains the code."""
    title: str | None
    """A short human title of the code."""
    detail: str | None
    """What went wrong with this request, safe to show."""
    errors: list[FieldError] | None
    """For ``validation_failed``: every bad field."""
    retry_after: int | None
    """Seconds the server asked to wait (``Retry-After``), on 429 and 503."""
    problem: Problem | None
    """The problem document as received, when the answer was one."""

    def __init__(self, status: int, problem: Problem | None, retry_after: int | None = None) -> None:
        message = f"{problem['error']}: {problem.get('detail', '')}" if problem else f"unexpected answer: HTTP {status}"
        super().__init__(message)
        self.status = status
        self.problem = problem
        self.error = problem["error"] if problem else "unexpected_response"
        self.type = _text(problem, "type")
        self.title = _text(problem, "title")
        self.detail = _text(problem, "detail")
        self.errors = list(problem["errors"]) if problem and isinstance(problem.get("errors"), list) else None
        self.retry_after = retry_after


class OAuthError(Error):
    """The token endpoint refused the client (docs/api.md §2).

    ``error`` is the RFC 6749 §5.2 code (``invalid_client`` for a wrong id or secret), or
    ``unexpected_response`` for an answer that was not one.
    """

    status: int
    error: str
    error_description: str | None
    """The server's description of the error, safe to show."""
    retry_after: int | None
    """Seconds the server asked to wait (``Retry-After``), on 429 and 503."""

    def __init__(self, status: int, error: str, error_description: str | None, retry_after: int | None = None) -> None:
        super().__init__(f"{error}: {error_description}" if error_description else error)
        self.status = status
        self.error = error
        self.error_description = error_description
        self.retry_after = retry_after


class NetworkError(Error):
    """No answer came: the server could not be reached, the connection broke, or a try timed out.

    The underlying error, when there was one, is ``__cause__``.
    """


class DeadlineExceeded(NetworkError, TimeoutError):
    """The call's deadline passed before an answer came (also a ``TimeoutError``).

    ``__cause__`` is the last failure seen before it, when there was one.
    """

    deadline: float
    """The budget the call had, in seconds."""

    def __init__(self, deadline: float) -> None:
        super().__init__(f"no answer within the call's deadline of {deadline:g} s")
        self.deadline = deadline


def _text(problem: Problem | None, member: str) -> str | None:
    value: Any = problem.get(member) if problem else None
    return value if isinstance(value, str) else None
