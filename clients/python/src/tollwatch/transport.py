"""One HTTP exchange, bounded in time as a whole: resolving, connecting, TLS, sending, reading.

``urllib.request`` bounds each socket operation, not an exchange: a server that trickles its
answer a byte at a time, or a resolver that hangs, would hold a call on a dial plan far past its
budget. So the exchange is made here with ``http.client``: the name is resolved on a helper
thread that is given up on when the time is up, every socket operation is bounded by what is
left, and a watchdog shuts the socket down at the end of the budget whatever it is doing.
Connections are kept open between calls (the server keeps them 72 s), so a call need not pay
for a new TCP and TLS handshake; one the server has closed meanwhile is replaced at once.
"""

from __future__ import annotations

import http.client
import selectors
import socket
import ssl
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from email.message import Message
from typing import Any
from urllib.parse import urlsplit

Resolver = Callable[[str, int, int, int], Sequence[tuple[Any, ...]]]
"""``socket.getaddrinfo(host, port, family, type)``, or a stand-in for tests."""


def system_resolver(host: str, port: int, family: int, kind: int) -> Sequence[tuple[Any, ...]]:
    """The system's resolver (``/etc/hosts``, DNS…), through ``socket.getaddrinfo``."""
    return socket.getaddrinfo(host, port, family, kind)

_IDLE_PER_ORIGIN = 8
# Errors that on a kept connection mean only that the server closed it while it was idle.
_STALE = (http.client.RemoteDisconnected, ConnectionResetError, ConnectionAbortedError, BrokenPipeError)


@dataclass(frozen=True)
class Request:
    method: str
    url: str
    headers: Mapping[str, str]
    body: bytes | None = None


@dataclass(frozen=True)
class Response:
    status: int
    headers: Message
    body: bytes

    def header(self, name: str) -> str | None:
        """A header's value, several fields of the name joined by commas; None when absent."""
        values = self.headers.get_all(name)
        return ", ".join(values) if values else None


class TransportFailure(Exception):
    """No answer to one try: ``timed_out`` when its time ran out, otherwise the cause is chained."""

    def __init__(self, reason: str, timed_out: bool = False) -> None:
        super().__init__(reason)
        self.reason = reason
        self.timed_out = timed_out


class Transport:
    """Sends requests over kept connections; safe to share between threads."""

    def __init__(self, ssl_context: ssl.SSLContext | None = None, resolver: Resolver = system_resolver) -> None:
        self._ssl_context = ssl_context
        self._resolver = resolver
        self._idle: dict[tuple[str, str, int], list[http.client.HTTPConnection]] = {}
        self._lock = threading.Lock()

    def send(self, request: Request, budget: float) -> Response:
        """One try of ``request`` within ``budget`` seconds: its answer, whatever the status.

        Raises TransportFailure when no answer came.
        """
        ends_at = time.monotonic() + budget
        parts = urlsplit(request.url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"not an http or https URL: {request.url}")
        origin = (parts.scheme, parts.hostname, parts.port or (443 if parts.scheme == "https" else 80))
        target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        kept = self._take(origin)
        if kept is not None:
            try:
                return self._exchange(kept, origin, target, request, ends_at, reused=True)
            except _StaleConnection:
                pass
        connection = self._connect(origin, ends_at)
        return self._exchange(connection, origin, target, request, ends_at, reused=False)

    def close(self) -> None:
        """Closes the kept connections."""
        with self._lock:
            idle, self._idle = self._idle, {}
        for connections in idle.values():
            for connection in connections:
                connection.close()

    def _take(self, origin: tuple[str, str, int]) -> http.client.HTTPConnection | None:
        while True:
            with self._lock:
                connections = self._idle.get(origin)
                connection = connections.pop() if connections else None
            if connection is None or not _closed_by_peer(connection):
                return connection
            connection.close()

    def _keep(self, origin: tuple[str, str, int], connection: http.client.HTTPConnection) -> None:
        with self._lock:
            connections = self._idle.setdefault(origin, [])
            if len(connections) < _IDLE_PER_ORIGIN:
                connections.append(connection)
                return
        connection.close()

    def _connect(self, origin: tuple[str, str, int], ends_at: float) -> http.client.HTTPConnection:
        scheme, host, port = origin
        addresses = self._resolve(host, port, ends_at)
        watchdog = _Watchdog(ends_at)
        sock: socket.socket | None = None
        try:
            sock = self._open_socket(addresses, watchdog, ends_at)
            if scheme == "https":
                context = self._ssl_context or _default_ssl_context()
                sock = context.wrap_socket(sock, server_hostname=host, do_handshake_on_connect=False)
                # The wrapped socket is the one to shut down should the handshake outlast the budget.
                watchdog.watch(sock)
                sock.settimeout(max(0.001, ends_at - time.monotonic()))
                sock.do_handshake()
        except OSError as err:
            if sock is not None:
                sock.close()
            if watchdog.fired or time.monotonic() >= ends_at or isinstance(err, TimeoutError):
                raise TransportFailure("no connection in time", timed_out=True) from err
            raise TransportFailure(_reason(err)) from err
        finally:
            watchdog.cancel()
        connection: http.client.HTTPConnection
        if scheme == "https":
            connection = http.client.HTTPSConnection(host, port, context=self._ssl_context or _default_ssl_context())
        else:
            connection = http.client.HTTPConnection(host, port)
        # The socket is made here, within the budget; http.client only uses it.
        connection.sock = sock
        return connection

    def _resolve(self, host: str, port: int, ends_at: float) -> Sequence[tuple[Any, ...]]:
        try:
            return socket.getaddrinfo(host, port, 0, socket.SOCK_STREAM, 0, socket.AI_NUMERICHOST)
        except socket.gaierror:
            pass  # a name, not an address: the resolver is asked, below
        outcome: list[Sequence[tuple[Any, ...]] | OSError] = []

        def resolve() -> None:
            try:
                outcome.append(self._resolver(host, port, 0, socket.SOCK_STREAM))
            except OSError as err:
                outcome.append(err)

        # getaddrinfo cannot be interrupted: it runs on a thread of its own, left behind if slow.
        thread = threading.Thread(target=resolve, name="tollwatch-resolve", daemon=True)
        thread.start()
        thread.join(max(0.0, ends_at - time.monotonic()))
        if not outcome:
            raise TransportFailure(f"{host} not resolved in time", timed_out=True)
        result = outcome[0]
        if isinstance(result, OSError):
            raise TransportFailure(f"cannot resolve {host}: {_reason(result)}") from result
        return result

    @staticmethod
    def _open_socket(addresses: Sequence[tuple[Any, ...]], watchdog: _Watchdog, ends_at: float) -> socket.socket:
        last: OSError | None = None
        for family, kind, proto, _name, address in addresses:
            left = ends_at - time.monotonic()
            if left <= 0:
                raise TimeoutError("no time left to connect")
            sock = socket.socket(family, kind, proto)
            watchdog.watch(sock)
            try:
                sock.settimeout(left)
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                sock.connect(address)
                return sock
            except TimeoutError:
                sock.close()
                raise
            except OSError as err:
                sock.close()
                last = err
        raise last or OSError("no address to connect to")

    def _exchange(
        self,
        connection: http.client.HTTPConnection,
        origin: tuple[str, str, int],
        target: str,
        request: Request,
        ends_at: float,
        reused: bool,
    ) -> Response:
        sock = connection.sock
        left = ends_at - time.monotonic()
        if sock is None or left <= 0:
            connection.close()
            raise TransportFailure("no time left for the request", timed_out=True)
        watchdog = _Watchdog(ends_at)
        watchdog.watch(sock)
        answered = False
        try:
            sock.settimeout(left)
            connection.request(request.method, target, body=request.body, headers=dict(request.headers))
            response = connection.getresponse()
            answered = True
            body = response.read()
        except (OSError, http.client.HTTPException) as err:
            connection.close()
            if watchdog.fired or time.monotonic() >= ends_at or isinstance(err, TimeoutError):
                raise TransportFailure("no answer in time", timed_out=True) from err
            if reused and not answered and isinstance(err, _STALE):
                raise _StaleConnection() from err
            raise TransportFailure(_reason(err)) from err
        finally:
            watchdog.cancel()
        if response.will_close or watchdog.fired:
            connection.close()
        else:
            self._keep(origin, connection)
        return Response(response.status, response.headers, body)


class _StaleConnection(Exception):
    """A kept connection the server had closed: the request is sent again on a new one."""


class _Watchdog:
    """Shuts a socket down when its time is up, ending whatever read or write blocks on it."""

    def __init__(self, ends_at: float) -> None:
        self.fired = False
        self._sock: socket.socket | None = None
        self._timer = threading.Timer(max(0.0, ends_at - time.monotonic()), self._fire)
        self._timer.daemon = True
        self._timer.start()

    def watch(self, sock: socket.socket) -> None:
        self._sock = sock

    def cancel(self) -> None:
        self._timer.cancel()

    def _fire(self) -> None:
        self.fired = True
        sock = self._sock
        if sock is None:
            return
        try:
            # socket.socket's own shutdown, under an SSLSocket's: the TLS layer then reads an end
            # of stream and fails, instead of losing its state under a read in progress.
            socket.socket.shutdown(sock, socket.SHUT_RDWR)
        except OSError:
            pass


def _closed_by_peer(connection: http.client.HTTPConnection) -> bool:
    """Whether an idle connection has anything to read: the server's close (or stray bytes), so
    it must not carry another request."""
    sock = connection.sock
    if sock is None:
        return True
    try:
        # A selector rather than select(), which fails on descriptors past 1024.
        with selectors.DefaultSelector() as selector:
            selector.register(sock, selectors.EVENT_READ)
            return bool(selector.select(0))
    except (OSError, ValueError):
        return True


_ssl_context: ssl.SSLContext | None = None


def _default_ssl_context() -> ssl.SSLContext:
    # Loading the system's CA certificates takes milliseconds: once per process, not per call.
    global _ssl_context
    if _ssl_context is None:
        context = ssl.create_default_context()
        context.set_alpn_protocols(["http/1.1"])
        _ssl_context = context
    return _ssl_context


def _reason(err: BaseException) -> str:
    if isinstance(err, OSError) and err.strerror:
        return err.strerror
    return str(err) or type(err).__name__
