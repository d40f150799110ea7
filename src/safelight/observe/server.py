"""``/metrics`` and ``/healthz`` of a Worker process, on its own event loop.

A small HTTP/1.1 responder on ``asyncio.start_server`` rather than prometheus_client's
own servers: ``start_http_server`` runs a WSGI server on a thread of its own, whose
scrapes would have to reach back into the event loop for the async pool and the
listener's state, and which nothing can supervise or stop with the Workers;
``make_asgi_app`` needs an ASGI server (uvicorn), one more dependency, whose ``serve()``
installs signal handlers over the supervisor's. On the loop, the server is one more
background task under the supervisor (docs/operations.md), reads the database on a
connection of its own, and times out on the injected clock. prometheus_client still does the
exposition (``generate_latest``), served as the text format 0.0.4, which every
Prometheus reads (the names here need nothing newer).

Each request is answered and the connection closed (``Connection: close``): a scraper
every 15 s and a health probe need nothing more. A request whose head does not arrive
within the limits' ``head_seconds``, or is malformed, is dropped; an error while
answering one is logged with its traceback and answered 500, and the server goes on:
one bad scrape must not stop the photos. The server itself ending is the supervisor's
business.

The port is open to every local user, and a Worker's descriptors and connections are
its photos' (issue #27, ``docs/security.md``): the server holds at most
``max_connections`` connections, closing any more as it accepts them, and it answers
from what it last read of the database, read again at most once per
``refresh_seconds`` by one read at a time on a connection of its own
(:class:`~safelight.db.pool.OneConnection`), never the Workers' pool. A flood of
scrapes costs one query a refresh interval, and a database slow to answer holds only
that connection.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from typing import Any

import psycopg
from prometheus_client.exposition import CONTENT_TYPE_PLAIN_0_0_4

from safelight.core.clock import Clock, wait_with_timeout
from safelight.core.connections import ConnectionLimits, beyond_loopback
from safelight.db.pool import Connections
from safelight.logs import RefusalLine, masker
from safelight.observe.fresh import Fresh
from safelight.observe.metrics import Metrics, ping
from safelight.work.errors import describe_briefly

__all__ = ["PROBE_SECONDS", "Health", "MetricsServer", "exposure_warning"]

_log = logging.getLogger(__name__)

# How long a scrape or a health probe waits for the database: well inside Prometheus's
# default scrape timeout (10 s) and a container runtime's health-check timeout.
PROBE_SECONDS = 3.0
_MAX_HEAD_BYTES = 8192
_PHRASES = {
    200: "OK",
    404: "Not Found",
    405: "Method Not Allowed",
    500: "Internal Server Error",
    503: "Service Unavailable",
}


class Health:
    """What ``/healthz`` says: healthy while the database answers and the wake-up
    listener is connected."""

    def __init__(
        self,
        pool: Connections,
        clock: Clock,
        listening: Callable[[], bool],
        *,
        timeout_seconds: float = PROBE_SECONDS,
    ) -> None:
        self._pool = pool
        self._clock = clock
        self._listening = listening
        self._timeout_seconds = timeout_seconds

    async def check(self) -> str | None:
        """None when healthy, else the reason, in one line that names no password."""
        try:
            await wait_with_timeout(self._clock, self._ping(), self._timeout_seconds)
        except TimeoutError:
            return f"the database did not answer within {self._timeout_seconds:g} s"
        except (psycopg.Error, OSError) as exc:
            return masker.mask(f"the database does not answer: {describe_briefly(exc)}")
        if not self._listening():
            return "the wake-up listener is not connected to the database (reconnecting)"
        return None

    async def _ping(self) -> None:
        async with self._pool.connection() as conn:
            await ping(conn)


class MetricsServer:
    """Serves ``/metrics`` and ``/healthz``; :meth:`bind` first, then :meth:`serve`.

    ``health`` and ``metrics.refresh`` read the database through ``connection``, the
    server's own (a pool stand-in of one connection); their results are kept for
    ``refresh_seconds``."""

    def __init__(
        self,
        metrics: Metrics,
        health: Health,
        connection: Any,
        clock: Clock,
        limits: ConnectionLimits,
        *,
        refresh_seconds: float,
    ) -> None:
        self._metrics = metrics
        self._clock = clock
        self._limits = limits
        self._server: asyncio.Server | None = None
        self._connections: set[asyncio.Task[Any]] = set()
        self._scrapes = Fresh(
            clock, refresh_seconds, lambda: metrics.refresh(connection, clock, PROBE_SECONDS)
        )
        self._probes = Fresh(clock, refresh_seconds, health.check)
        self._refusals = RefusalLine(
            _log, "metrics server", "SAFELIGHT_METRICS_MAX_CONNECTIONS", clock.monotonic
        )

    @property
    def refreshes(self) -> int:
        """How many times the server has read the queue (its scrapes' refreshes)."""
        return self._scrapes.runs

    async def bind(self, host: str, port: int) -> tuple[str, int]:
        """Listen on ``host``:``port`` (0: any free port) and return the address bound.
        Raises ``OSError`` (the port is taken, the address is not this host's)."""
        self._server = await asyncio.start_server(
            self._answer, host, port, limit=_MAX_HEAD_BYTES, reuse_address=True
        )
        address = self._server.sockets[0].getsockname()
        return str(address[0]), int(address[1])

    async def serve(self) -> None:
        """Answer requests until cancelled; the connections being answered go with it."""
        server = self._server
        if server is None:
            raise RuntimeError("bind() the metrics server before serving")
        try:
            await server.serve_forever()
        finally:
            server.close()
            for connection in list(self._connections):
                connection.cancel()
            self._scrapes.cancel()
            self._probes.cancel()
            await asyncio.gather(*self._connections, return_exceptions=True)
            await server.wait_closed()

    async def _answer(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if len(self._connections) >= self._limits.max_connections:
            # Closed now, not queued: each connection held is a descriptor of the Worker.
            writer.transport.abort()
            self._refusals.refused(self._limits.max_connections)
            return
        task = asyncio.current_task()
        assert task is not None
        self._connections.add(task)
        try:
            await self._answer_one(reader, writer)
        except asyncio.CancelledError:
            # Only serve() cancels a connection, as it stops. The task ends normally:
            # asyncio's streams (3.11) report a cancelled handler task as an error.
            pass
        finally:
            writer.close()
            with contextlib.suppress(ConnectionError):
                await writer.wait_closed()
            self._connections.discard(task)

    async def _answer_one(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await wait_with_timeout(
                self._clock, reader.readuntil(b"\r\n\r\n"), self._limits.head_seconds
            )
            method, path = _request_line(head)
        except (
            TimeoutError,
            ValueError,  # not an HTTP request line
            ConnectionError,
            asyncio.IncompleteReadError,
            asyncio.LimitOverrunError,  # a head larger than any scraper sends
        ):
            return  # nothing to answer: dropped
        try:
            status, content_type, body = await self._route(method, path)
        except Exception:
            _log.exception("metrics server: answering %s %s failed", method, path)
            status, content_type, body = 500, "text/plain; charset=utf-8", b"internal error\n"
        writer.write(_response(status, content_type, b"" if method == "HEAD" else body, body))
        with contextlib.suppress(ConnectionError):
            await writer.drain()

    async def _route(self, method: str, path: str) -> tuple[int, str, bytes]:
        text = "text/plain; charset=utf-8"
        if path not in ("/metrics", "/healthz"):
            return 404, text, b"not found: try /metrics or /healthz\n"
        if method not in ("GET", "HEAD"):
            return 405, text, b"only GET and HEAD\n"
        if path == "/healthz":
            reason = await self._probes.get()
            if reason is None:
                return 200, text, b"ok\n"
            return 503, text, reason.encode("utf-8", "replace") + b"\n"
        await self._scrapes.get()
        return 200, CONTENT_TYPE_PLAIN_0_0_4, self._metrics.render()


def exposure_warning(host: str) -> str | None:
    """The warning for a metrics port that listens on ``host``, when other machines can
    reach it: it has no authentication, and what it shows (the queue, the configs' ids)
    is the owner's. None on a loopback address."""
    if not beyond_loopback(host):
        return None
    return (
        f"the metrics port listens on {host}, beyond this machine: anyone who can reach it "
        "reads the queue and the configs' ids, without a password; keep it on 127.0.0.1 "
        "(SAFELIGHT_METRICS_HOST) behind a proxy of yours, or firewall it"
    )


def _request_line(head: bytes) -> tuple[str, str]:
    """The method and the path (no query) of a request's head; ValueError if malformed."""
    line = head.split(b"\r\n", 1)[0].decode("ascii")
    method, target, version = line.split(" ")
    if not version.startswith("HTTP/"):
        raise ValueError(f"not an HTTP request line: {line!r}")
    return method, target.split("?", 1)[0]


def _response(status: int, content_type: str, sent: bytes, body: bytes) -> bytes:
    """The whole response; ``Content-Length`` is the body's even when, for HEAD, none is
    sent."""
    head = (
        f"HTTP/1.1 {status} {_PHRASES[status]}\r\n"
        f"Content-Type: {content_type}\r\n"
        f"Content-Length: {len(body)}\r\n"
        "Connection: close\r\n\r\n"
    )
    return head.encode("ascii") + sent
