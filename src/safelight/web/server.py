"""Serving the dashboard with uvicorn, on a socket bound before it starts.

:class:`WebServer` binds first (port 0: any free one), so its :attr:`~WebServer.url` is
known, and connections queue, before :meth:`~WebServer.serve` runs: a caller that prints
the URL, or a test that has it, may connect at once. ``serve`` returns after
:meth:`~WebServer.stop`, or, inside :meth:`~WebServer.stopped_by_signals`, on SIGINT or
SIGTERM: unlike uvicorn's own signal handling, that one is in place before the URL is
printed, and does not raise the signal again on the way out, so ``safelight serve``
closes its database and exits 0.
"""

from __future__ import annotations

import contextlib
import signal
import socket
from collections.abc import Iterator
from typing import Any

import uvicorn

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


class _Server(uvicorn.Server):
    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        # Signals are the caller's (WebServer.stopped_by_signals), from before the URL
        # is printed; uvicorn's own would start only in serve(), and raise the signal
        # again on the way out.
        yield


class WebServer:
    """uvicorn serving ``app`` on ``host``:``port``; bound when made, serving once
    :meth:`serve` runs."""

    def __init__(self, app: Any, host: str, port: int, *, access_log: bool = True) -> None:
        self.socket = bind(host, port)
        self.host = host
        self.port: int = self.socket.getsockname()[1]
        config = uvicorn.Config(
            app,
            log_config=None,  # safelight's logging (masked, its format) is already set up
            access_log=access_log,
            lifespan="off",
            server_header=False,
            proxy_headers=False,
            timeout_graceful_shutdown=GRACEFUL_SECONDS,
        )
        self._server = _Server(config)

    @property
    def url(self) -> str:
        shown = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{shown}:{self.port}/"

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
