"""Serving the dashboard with uvicorn, on a socket bound before it starts.

:class:`WebServer` binds first (port 0: any free one), so its :attr:`~WebServer.url` is
known, and connections queue, before :meth:`~WebServer.serve` runs: a caller that prints
the URL, or a test that has it, may connect at once. ``serve`` returns after
:meth:`~WebServer.stop`, or, inside :meth:`~WebServer.stopped_by_signals`, on SIGINT or
SIGTERM: unlike uvicorn's own signal handling, that one is in place before the URL is
printed, and does not raise the signal again on the way out, so ``safelight serve``
closes its database and exits 0.

Every connection is a descriptor of the process, and the port is open to every local
user at least (issue #27, ``docs/security.md``). uvicorn's h11 protocol holds a
connection that never sends a request forever (its keep-alive timer starts only after a
first answer), and its ``limit_concurrency`` answers 503 only once a request's head has
arrived. :class:`_GuardedH11` closes a connection past the limits' ``max_connections`` as
it is accepted, and one whose request head has not arrived ``head_seconds`` after it
opened or after its last answer.

With a TLS context it serves HTTPS on that same socket (uvicorn wraps the connections it
accepts). Given trusted proxies, uvicorn's proxy headers middleware, outside the app,
takes a request's scheme from ``X-Forwarded-Proto`` and its client from
``X-Forwarded-For``, only when the connection comes from one of them (ADR 0042); from
any other peer they are ignored, and without trusted proxies they always are.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import logging
import signal
import socket
import ssl
from collections.abc import Iterator
from functools import partial
from typing import Any

import h11
import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol

from safelight.core.clock import Clock, SystemClock, TimerHandle
from safelight.core.connections import ConnectionLimits
from safelight.core.hostnames import ANY_ADDRESS, LOOPBACK_ADDRESS, url_of
from safelight.logs import RefusalLine

_log = logging.getLogger(__name__)

BACKLOG = 128
# Requests still running when the server stops get this long to finish.
GRACEFUL_SECONDS = 5


def bind(host: str, port: int) -> socket.socket:
    """A listening TCP socket on ``host``:``port`` (port 0: any free one)."""
    family, kind, proto, _, address = socket.getaddrinfo(
        host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
    )[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(BACKLOG)
    except BaseException:
        sock.close()
        raise
    return sock


class _Guard:
    """What every connection of one server shares: the limits, the clock of their head
    deadlines, and the throttle of the line that says connections are being refused."""

    def __init__(self, limits: ConnectionLimits, clock: Clock) -> None:
        self.limits = limits
        self.clock = clock
        self._refusals = RefusalLine(
            _log, "dashboard", "SAFELIGHT_WEB_MAX_CONNECTIONS", clock.monotonic
        )

    def refused(self) -> None:
        self._refusals.refused(self.limits.max_connections)


class _GuardedH11(H11Protocol):
    """uvicorn's h11 protocol, with the connection cap and the request-head deadline."""

    def __init__(self, *args: Any, guard: _Guard, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._guard = guard
        self._head_timer: TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        # self.connections holds this one too now, and every other open one.
        if len(self.connections) > self._guard.limits.max_connections:
            transport.abort()  # at once: no answer, no lingering descriptor
            self._guard.refused()
            return
        self._arm_head_timer()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm_head_timer()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        if self.conn.their_state is not h11.IDLE:
            self._disarm_head_timer()  # a whole head arrived: the app's business now
        elif self._head_timer is None and not self.transport.is_closing():
            # Back to waiting for a head with no answer just completed: the end of a body
            # the app answered before reading it. Its bytes stopped uvicorn's keep-alive
            # timer, and no other would close the connection.
            self._arm_head_timer()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        # The next request's head has the same time to arrive; uvicorn's keep-alive
        # timer stops at its first byte.
        if not self.transport.is_closing() and self.conn.their_state is h11.IDLE:
            self._arm_head_timer()

    def _arm_head_timer(self) -> None:
        self._disarm_head_timer()
        self._head_timer = self._guard.clock.call_later(
            self._guard.limits.head_seconds, self._head_late
        )

    def _disarm_head_timer(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None

    def _head_late(self) -> None:
        self._head_timer = None
        if self.conn.their_state is h11.IDLE and not self.transport.is_closing():
            self.transport.abort()


class _Server(uvicorn.Server):
    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        # Signals are the caller's (WebServer.stopped_by_signals), from before the URL
        # is printed; uvicorn's own would start only in serve(), and raise the signal
        # again on the way out.
        yield


def trusted_peers(proxies: tuple[str, ...]) -> list[str]:
    """The peers uvicorn trusts for proxy headers: ``proxies`` (addresses, networks),
    each IPv4 one also as the IPv6-mapped address a dual-stack socket (bound to ``::``)
    reports it as."""
    peers: list[str] = []
    for proxy in proxies:
        peers.append(proxy)
        network = ipaddress.ip_network(proxy, strict=False)
        if isinstance(network, ipaddress.IPv4Network):
            mapped = ipaddress.IPv6Address(f"::ffff:{network.network_address}")
            peers.append(f"{mapped}/{96 + network.prefixlen}")
    return peers


class WebServer:
    """uvicorn serving ``app`` on ``host``:``port``; bound when made, serving once
    :meth:`serve` runs. ``clock`` times the connections' head deadlines (tests pass a
    fake one). ``tls``: serve HTTPS with it (``safelight.web.tls``). ``trusted_proxies``:
    the addresses (or networks) whose forwarded scheme and client are believed."""

    def __init__(
        self,
        app: Any,
        host: str,
        port: int,
        limits: ConnectionLimits,
        *,
        access_log: bool = True,
        clock: Clock | None = None,
        tls: ssl.SSLContext | None = None,
        trusted_proxies: tuple[str, ...] = (),
    ) -> None:
        self.host = host
        self.scheme = "http" if tls is None else "https"
        config = uvicorn.Config(
            app,
            log_config=None,  # safelight's logging (masked, its format) is already set up
            access_log=access_log,
            lifespan="off",
            server_header=False,
            proxy_headers=bool(trusted_proxies),
            forwarded_allow_ips=trusted_peers(trusted_proxies),
            # uvicorn's own certificate loading would fail inside serve(); the context
            # is made, and checked, before (safelight.web.tls).
            ssl_context_factory=None if tls is None else (lambda _config, _default: tls),
            timeout_graceful_shutdown=GRACEFUL_SECONDS,
            http=partial(_GuardedH11, guard=_Guard(limits, clock or SystemClock())),  # type: ignore[arg-type]
        )
        self._server = _Server(config)
        self.socket = bind(host, port)
        self.port: int = self.socket.getsockname()[1]

    @property
    def url(self) -> str:
        """Where a client on this machine connects: the loopback address for a server
        bound to every address."""
        host = LOOPBACK_ADDRESS if self.host.strip("[]") in ANY_ADDRESS else self.host
        return url_of(self.scheme, host, self.port)

    @contextlib.contextmanager
    def stopped_by_signals(self) -> Iterator[None]:
        """From here on, SIGINT or SIGTERM stops the server (before :meth:`serve` too:
        it then returns at once); a second SIGINT stops it without waiting for the
        requests in flight. The main thread only."""
        handlers = {
            sig: signal.signal(sig, self._server.handle_exit)
            for sig in (signal.SIGINT, signal.SIGTERM)
        }
        try:
            yield
        finally:
            for sig, handler in handlers.items():
                signal.signal(sig, handler)

    async def serve(self) -> None:
        """Serve until :meth:`stop` or a signal; the socket is closed on the way out."""
        try:
            await self._server.serve(sockets=[self.socket])
        finally:
            self.socket.close()

    def stop(self) -> None:
        self._server.should_exit = True
