"""What the tests share: the package from the checkout, the real server's settings, local servers.

Imported first by every test module: ``python3 -m unittest discover -s clients/python/tests``
puts this folder on the path, and this puts the package's source beside it.
"""

from __future__ import annotations

import json
import os
import socket
import sys
import threading
import time
import unittest
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, TypeVar

PACKAGE_ROOT = Path(__file__).resolve().parent.parent
SOURCE = PACKAGE_ROOT / "src"
if str(SOURCE) not in sys.path:
    sys.path.insert(0, str(SOURCE))

REQUIRED_FLAG = "TOLLWATCH_TEST_REQUIRED"
"""Set to 1 (as the project's test suite does) to make missing server settings a failure."""

T = TypeVar("T")


@dataclass(frozen=True)
class ServerSettings:
    """A running Tollwatch server, two API clients of one Contributor account, and what is stored.

    The full client has every data permission; the limited one only ``read:ip-addresses``. Before
    the tests run, an event calling ``seen_number`` from ``seen_ip`` was stored under
    ``event_uuid`` by another client of the same account, and folded into the aggregates.
    """

    url: str
    client_id: str
    client_secret: str
    limited_client_id: str
    limited_client_secret: str
    seen_number: str
    seen_ip: str
    event_uuid: str


_SETTINGS = {
    "url": "TOLLWATCH_TEST_URL",
    "client_id": "TOLLWATCH_TEST_CLIENT_ID",
    "client_secret": "TOLLWATCH_TEST_CLIENT_SECRET",
    "limited_client_id": "TOLLWATCH_TEST_LIMITED_CLIENT_ID",
    "limited_client_secret": "TOLLWATCH_TEST_LIMITED_CLIENT_SECRET",
    "seen_number": "TOLLWATCH_TEST_SEEN_NUMBER",
    "seen_ip": "TOLLWATCH_TEST_SEEN_IP",
    "event_uuid": "TOLLWATCH_TEST_EVENT_UUID",
}


def server_settings() -> ServerSettings:
    """The real server's settings from the environment. Missing ones skip the caller's tests,
    or fail them when TOLLWATCH_TEST_REQUIRED=1."""
    missing = [name for name in _SETTINGS.values() if not os.environ.get(name)]
    if missing:
        message = f"needs a running Tollwatch server: set {', '.join(missing)}"
        if os.environ.get(REQUIRED_FLAG) == "1":
            raise AssertionError(f"{message}; {REQUIRED_FLAG}=1 makes that a failure")
        raise unittest.SkipTest(message)
    return ServerSettings(**{attribute: os.environ[name] for attribute, name in _SETTINGS.items()})


PATIENCE = 20.0
"""Seconds a condition that should hold soon may take on a loaded machine (docs/testing.md, "Waiting")."""


def eventually(what: str, probe: Callable[[], T], done: Callable[[T], bool], timeout: float = PATIENCE) -> T:
    """Asks ``probe`` until its answer satisfies ``done``; past ``timeout`` fails, naming ``what``
    and the last answer. Waiting for a condition, never for a fixed time."""
    ends_at = time.monotonic() + timeout
    while True:
        seen = probe()
        if done(seen):
            return seen
        if time.monotonic() >= ends_at:
            raise AssertionError(f"waited {timeout} s for {what}; last saw {seen!r}"[:1000])
        time.sleep(0.025)


@dataclass
class Answer:
    """What the scripted server answers: a status, a JSON body (or raw bytes), headers."""

    status: int
    json: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    raw: bytes | None = None
    hang: bool = False
    """Never answer: hold the request until the server stops."""
    close: bool = False
    """Close the connection after answering, without saying so (as an idle keep-alive timeout does)."""


@dataclass(frozen=True)
class Seen:
    """A request the scripted server received."""

    method: str
    path: str
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


def token_answer(token: str = "token-1", expires_in: int = 86400) -> Answer:
    return Answer(200, {"access_token": token, "token_type": "Bearer", "expires_in": expires_in, "scope": "read:phone-numbers"})


def numbered_tokens(expires_in: int = 86400) -> Callable[[Seen], Answer]:
    """A token endpoint that answers token-1, token-2… in turn."""
    numbers = iter(range(1, 10_000))
    return lambda _seen: token_answer(f"token-{next(numbers)}", expires_in)


def problem(status: int, error: str, detail: str = "something is wrong", **extra: Any) -> dict[str, Any]:
    return {"type": f"http://tollwatch.test/problems#{error}", "title": error.replace("_", " "), "status": status, "detail": detail, "error": error, **extra}


class ScriptedServer:
    """A local HTTP/1.1 server whose answers a test chooses, request by request, recording each.

    ``answer(seen)`` is called for every request (on the server's threads) and returns an Answer.
    """

    def __init__(self, answer: Callable[[Seen], Answer]) -> None:
        self.requests: list[Seen] = []
        self.connections = 0
        self._answer = answer
        self._release = threading.Event()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def setup(self) -> None:
                super().setup()
                # Headers and body go out in two writes: without this, Nagle holds the body
                # back for the client's delayed ACK, 40 ms a request.
                self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                server.connections += 1

            def handle_one(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                seen = Seen(self.command, self.path, {k.lower(): v for k, v in self.headers.items()}, self.rfile.read(length))
                server.requests.append(seen)
                answer = server._answer(seen)
                if answer.hang:
                    server._release.wait()
                    self.close_connection = True
                    return
                body = answer.raw if answer.raw is not None else (b"" if answer.json is None else json.dumps(answer.json).encode())
                self.send_response(answer.status)
                for name, value in answer.headers.items():
                    self.send_header(name, value)
                if answer.json is not None and "content-type" not in {k.lower() for k in answer.headers}:
                    self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
                if answer.close:
                    self.close_connection = True

            do_GET = do_POST = handle_one

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
        self._thread.start()

    def paths(self) -> list[str]:
        return [seen.path for seen in self.requests]

    def stop(self) -> None:
        self._release.set()
        self._server.shutdown()
        self._server.server_close()


class SocketServer:
    """A TCP server that accepts connections and then does only what ``serve(connection)`` does:
    nothing at all (a server that never answers), or dribbling bytes."""

    def __init__(self, serve: Callable[[socket.socket, threading.Event], None] | None = None) -> None:
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._listener.settimeout(0.1)
        self._stopped = threading.Event()
        self._serve = serve
        self._connections: list[socket.socket] = []
        self.url = f"http://127.0.0.1:{self._listener.getsockname()[1]}"
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()

    def _accept(self) -> None:
        while not self._stopped.is_set():
            try:
                connection, _ = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            self._connections.append(connection)
            if self._serve is not None:
                threading.Thread(target=self._serve, args=(connection, self._stopped), daemon=True).start()

    def stop(self) -> None:
        self._stopped.set()
        self._thread.join()
        self._listener.close()
        for connection in self._connections:
            connection.close()


def dribble(connection: socket.socket, stopped: threading.Event) -> None:
    """Answers a byte of a status line every 50 ms, forever: each read succeeds, none completes."""
    try:
        while not stopped.wait(0.05):
            connection.sendall(b"H")
    except OSError:
        pass


def closed_port_url() -> str:
    """The URL of a local port nothing listens on."""
    with socket.create_server(("127.0.0.1", 0)) as probe:
        port = probe.getsockname()[1]
    return f"http://127.0.0.1:{port}"


class RecordingSleep:
    """A stand-in for time.sleep that records each wait and does not wait."""

    def __init__(self) -> None:
        self.waits: list[float] = []

    def __call__(self, seconds: float) -> None:
        self.waits.append(seconds)


class FakeClock:
    """A monotonic clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now
