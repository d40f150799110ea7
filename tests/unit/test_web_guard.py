"""The dashboard's server against hostile clients (issue #27), without a database: a
small ASGI app behind the real :class:`WebServer` on the loopback, its connections' head
deadlines on the FakeClock. The dashboard itself under the same clients is in
``tests/integration/test_hostile_connections.py``."""

from __future__ import annotations

import asyncio
import logging
import socket
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from typing import Any

import pytest

from safelight.core.connections import ConnectionLimits
from safelight.logs import REFUSALS_LOG_SECONDS
from safelight.testing.fakeclock import FakeClock
from safelight.web import server as web_server
from safelight.web.server import WebServer

pytestmark = pytest.mark.usefixtures("loop_errors", "unwind")

HEAD_SECONDS = 5.0
GUARD_SECONDS = 10  # a bound on a hang, never a tested deadline
Stream = tuple[asyncio.StreamReader, asyncio.StreamWriter]


class App:
    """Answers every request with the client address it was given, without reading a
    request's body; ``/slow`` first waits for :attr:`release`."""

    def __init__(self) -> None:
        self.release = asyncio.Event()
        self.started = asyncio.Event()
        self.scopes: list[str] = []

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        self.scopes.append(scope["type"])
        if scope["type"] != "http":
            return
        if scope["path"] == "/slow":
            self.started.set()
            await self.release.wait()
        body = f"client {scope['client'][0]}\n".encode()
        headers = [(b"content-type", b"text/plain"), (b"content-length", b"%d" % len(body))]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": body})


@asynccontextmanager
async def serving(
    clock: FakeClock, limits: ConnectionLimits, app: App | None = None
) -> AsyncIterator[WebServer]:
    server = WebServer(app or App(), "127.0.0.1", 0, limits, access_log=False, clock=clock)
    task = asyncio.create_task(server.serve())
    try:
        yield server
    finally:
        if app is not None:
            app.release.set()
        server.stop()
        await task


async def connect(server: WebServer) -> Stream:
    return await asyncio.open_connection("127.0.0.1", server.port)


async def closed(stream: Stream) -> bool:
    """Whether the server closes (or resets) ``stream``, after whatever it still sends."""
    reader, writer = stream
    try:
        while await reader.read(65536):
            pass
    except ConnectionResetError:
        pass
    writer.close()
    return True


async def still_open(stream: Stream) -> bool:
    """Whether ``stream`` is still open a moment from now (nothing arrives on it)."""
    reading = asyncio.ensure_future(stream[0].read(1))
    await asyncio.sleep(0.05)
    if reading.done():
        return False
    reading.cancel()
    await asyncio.gather(reading, return_exceptions=True)
    return True


async def answer(stream: Stream) -> bytes:
    """One whole answer of a kept-alive connection (its head and its body)."""
    reader, _ = stream
    head = await reader.readuntil(b"\r\n\r\n")
    length = next(
        int(line.split(b":", 1)[1])
        for line in head.split(b"\r\n")
        if line.lower().startswith(b"content-length:")
    )
    return head + await reader.readexactly(length)


def send(stream: Stream, data: bytes) -> None:
    stream[1].write(data)


async def test_a_client_without_a_whole_head_is_dropped_at_the_head_deadline(
    clock: FakeClock,
) -> None:
    async with serving(clock, ConnectionLimits(8, HEAD_SECONDS)) as server:
        silent = await connect(server)
        slow = await connect(server)
        send(slow, b"GET / HTTP/1.1\r\nHost: x\r\nX-Slow: ")
        await asyncio.sleep(0.05)  # both accepted, the slow head's first bytes read
        await clock.advance(HEAD_SECONDS - 0.001)
        # More bytes of the head do not move its deadline.
        send(slow, b"still coming")
        assert await still_open(silent) and await still_open(slow)
        await clock.advance(0.001)
        assert await asyncio.wait_for(closed(silent), GUARD_SECONDS)
        assert await asyncio.wait_for(closed(slow), GUARD_SECONDS)


async def test_a_whole_head_stops_the_deadline_and_each_answer_starts_it_again(
    clock: FakeClock,
) -> None:
    app = App()
    async with serving(clock, ConnectionLimits(8, HEAD_SECONDS), app) as server:
        kept = await connect(server)
        send(kept, b"GET /slow HTTP/1.1\r\nHost: x\r\n\r\n")
        await asyncio.wait_for(app.started.wait(), GUARD_SECONDS)
        # The app takes its time: the head arrived, the deadline is not the app's.
        await clock.advance(HEAD_SECONDS * 3)
        assert await still_open(kept)
        app.release.set()
        assert (await answer(kept)).startswith(b"HTTP/1.1 200 OK")
        # The next request's head has the same time from the answer, and no more.
        await clock.advance(HEAD_SECONDS - 0.001)
        send(kept, b"GET / HTTP/1.1\r\nHo")
        assert await still_open(kept)
        await clock.advance(0.001)
        assert await asyncio.wait_for(closed(kept), GUARD_SECONDS)


async def test_a_request_body_sent_after_its_answer_leaves_the_next_head_its_deadline(
    clock: FakeClock,
) -> None:
    """The app answers before reading the body; the client sends the body afterwards
    and then nothing more. Its connection is back to waiting for a head, which has the
    deadline like any other: the body's bytes cancelled uvicorn's keep-alive timer."""
    async with serving(clock, ConnectionLimits(8, HEAD_SECONDS)) as server:
        kept = await connect(server)
        send(kept, b"GET / HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\n\r\n")
        assert (await answer(kept)).startswith(b"HTTP/1.1 200 OK")
        send(kept, b"body")
        await asyncio.sleep(0.05)  # the body read: the connection waits for a head
        await clock.advance(HEAD_SECONDS - 0.001)
        assert await still_open(kept)
        await clock.advance(0.001)
        assert await asyncio.wait_for(closed(kept), GUARD_SECONDS)


async def test_connections_past_the_cap_are_closed_as_they_come_and_said_once_a_minute(
    clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="safelight.web.server")
    # A deadline far beyond the minute this test moves on, so that only the cap acts.
    async with serving(clock, ConnectionLimits(2, REFUSALS_LOG_SECONDS * 10)) as server:
        held = [await connect(server) for _ in range(2)]
        for stream in held:
            send(stream, b"GET / HTTP/1.1\r\nHost: x\r\n")  # and stall
        refused = [await connect(server) for _ in range(3)]
        for stream in refused:
            send(stream, b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
            assert await asyncio.wait_for(closed(stream), GUARD_SECONDS)
        assert all([await still_open(stream) for stream in held])
        await clock.advance(REFUSALS_LOG_SECONDS - 0.001)
        assert await asyncio.wait_for(closed(await connect(server)), GUARD_SECONDS)
        await clock.advance(0.001)
        assert await asyncio.wait_for(closed(await connect(server)), GUARD_SECONDS)
        lines = [r.getMessage() for r in caplog.records if r.name == "safelight.web.server"]
        assert lines == [
            "dashboard: a connection refused, 2 held already (SAFELIGHT_WEB_MAX_CONNECTIONS)",
            "dashboard: a connection refused, 2 held already (SAFELIGHT_WEB_MAX_CONNECTIONS)"
            " (3 more since the last such line)",
        ]
        # One let go: the next one is served.
        held[0][1].close()
        await asyncio.sleep(0.05)
        fresh = await connect(server)
        send(fresh, b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        assert (await asyncio.wait_for(answer(fresh), GUARD_SECONDS)).startswith(b"HTTP/1.1 200")
        fresh[1].close()
        held[1][1].close()


async def test_the_server_names_no_software_and_trusts_no_forwarded_header(
    clock: FakeClock,
) -> None:
    async with serving(clock, ConnectionLimits(8, HEAD_SECONDS)) as server:
        stream = await connect(server)
        send(
            stream,
            b"GET / HTTP/1.1\r\nHost: x\r\nX-Forwarded-For: 203.0.113.9\r\n"
            b"X-Forwarded-Proto: https\r\n\r\n",
        )
        whole = await asyncio.wait_for(answer(stream), GUARD_SECONDS)
        head, _, body = whole.partition(b"\r\n\r\n")
        assert body == b"client 127.0.0.1\n"
        assert b"\r\nserver:" not in head.lower()
        stream[1].close()


async def test_stopping_gives_a_request_in_flight_the_grace_period_and_no_more(
    clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """uvicorn's own (real-time) grace period, shortened: a request that never ends does
    not hold the server's stop forever."""
    monkeypatch.setattr(web_server, "GRACEFUL_SECONDS", 0.05)
    app = App()
    server = WebServer(app, "127.0.0.1", 0, ConnectionLimits(8, HEAD_SECONDS), clock=clock)
    task = asyncio.create_task(server.serve())
    stream = await connect(server)
    send(stream, b"GET /slow HTTP/1.1\r\nHost: x\r\n\r\n")
    await asyncio.wait_for(app.started.wait(), GUARD_SECONDS)
    server.stop()
    await asyncio.wait_for(task, GUARD_SECONDS)
    assert server.socket.fileno() == -1  # closed on the way out
    stream[1].close()
    app.release.set()


@pytest.fixture
def access_logger() -> Iterator[logging.Logger]:
    """uvicorn's access logger as a fresh process has it (a server made with
    ``access_log=False`` turns it off for the whole process)."""
    logger = logging.getLogger("uvicorn.access")
    handlers, propagate = list(logger.handlers), logger.propagate
    logger.handlers, logger.propagate = [], True
    yield logger
    logger.handlers, logger.propagate = handlers, propagate


@pytest.mark.parametrize("access_log", [True, False, None])
async def test_uvicorn_serves_as_configured_here_with_its_access_log_as_asked(
    clock: FakeClock,
    caplog: pytest.LogCaptureFixture,
    access_logger: logging.Logger,
    access_log: bool | None,
) -> None:
    caplog.set_level(logging.INFO, logger="uvicorn.access")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    app = App()
    options: dict[str, Any] = {} if access_log is None else {"access_log": access_log}
    server = WebServer(
        app, "127.0.0.1", port, ConnectionLimits(8, HEAD_SECONDS), clock=clock, **options
    )
    # Its own port and address; no logging of uvicorn's own (safelight's is set up).
    assert server.socket.getsockname() == ("127.0.0.1", port) and server.port == port
    assert logging.getLogger("uvicorn").handlers == []
    task = asyncio.create_task(server.serve())
    try:
        stream = await connect(server)
        send(stream, b"GET /photo HTTP/1.1\r\nHost: x\r\n\r\n")
        assert (await asyncio.wait_for(answer(stream), GUARD_SECONDS)).startswith(b"HTTP/1.1 200")
        stream[1].close()
    finally:
        server.stop()
        await task
    assert app.scopes == ["http"]  # no lifespan: the app has none
    accesses = [r for r in caplog.records if r.name == "uvicorn.access"]
    assert len(accesses) == (0 if access_log is False else 1)  # on unless asked off
