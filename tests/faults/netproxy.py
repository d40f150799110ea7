"""A TCP proxy between one Worker process and PostgreSQL that can cut the link.

``cut()`` stops forwarding in both directions while every socket stays open: the Worker
sees no error and no close, only silence, as behind a dead switch or a partitioned
network. Bytes already read are held and delivered after ``heal()``. A connection
opened while the link is cut is accepted but not forwarded (the client's connect
timeout runs out, as it would). A close from either side is forwarded once healed, so a
PostgreSQL restart during a cut reaches the Worker only when the link comes back.

Plain threads: two per connection, blocked in ``recv``, so the proxy adds no latency of
its own while healed.
"""

from __future__ import annotations

import contextlib
import socket
import threading


class TcpProxy:
    """``upstream_host`` is a host name or address, or a folder of PostgreSQL's Unix
    sockets (an absolute path, as libpq takes it): then the proxy reaches
    ``<folder>/.s.PGSQL.<port>``, and TCP clients can reach an embedded server."""

    def __init__(self, upstream_host: str, upstream_port: int) -> None:
        self._upstream = (upstream_host, upstream_port)
        self._healed = threading.Event()
        self._healed.set()
        self._closed = False
        self._lock = threading.Lock()
        self._sockets: set[socket.socket] = set()
        self._listener = socket.create_server(("127.0.0.1", 0))
        # accept() is not woken by close() from another thread: poll for the close.
        self._listener.settimeout(0.2)
        self.port: int = self._listener.getsockname()[1]
        self.cuts = 0
        self._acceptor = threading.Thread(target=self._accept, name="proxy-accept", daemon=True)
        self._acceptor.start()

    @property
    def is_cut(self) -> bool:
        return not self._healed.is_set()

    def cut(self) -> None:
        self._healed.clear()
        self.cuts += 1

    def heal(self) -> None:
        self._healed.set()

    def close(self) -> None:
        """Close the listener and every connection (heals first, so no thread stays parked)."""
        self._closed = True
        self._healed.set()
        with contextlib.suppress(OSError):
            self._listener.close()
        with self._lock:
            sockets = list(self._sockets)
        for sock in sockets:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            with contextlib.suppress(OSError):
                sock.close()
        self._acceptor.join(timeout=5)

    # --- threads ---------------------------------------------------------------------

    def _track(self, sock: socket.socket) -> None:
        with self._lock:
            self._sockets.add(sock)

    def _forget(self, sock: socket.socket) -> None:
        with self._lock:
            self._sockets.discard(sock)
        with contextlib.suppress(OSError):
            sock.close()

    def _accept(self) -> None:
        while not self._closed:
            try:
                client, _ = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            client.settimeout(None)
            self._track(client)
            threading.Thread(target=self._connect, args=(client,), daemon=True).start()

    def _connect(self, client: socket.socket) -> None:
        self._healed.wait()
        if self._closed:
            self._forget(client)
            return
        try:
            server = self._open_upstream()
            server.settimeout(None)
        except OSError:
            self._forget(client)
            return
        self._track(server)
        for src, dst in ((client, server), (server, client)):
            threading.Thread(target=self._pump, args=(src, dst), daemon=True).start()

    def _open_upstream(self) -> socket.socket:
        host, port = self._upstream
        if not host.startswith("/"):
            return socket.create_connection(self._upstream, timeout=10)
        server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        server.settimeout(10)
        try:
            server.connect(f"{host}/.s.PGSQL.{port}")
        except OSError:
            server.close()
            raise
        return server

    def _pump(self, src: socket.socket, dst: socket.socket) -> None:
        try:
            while True:
                self._healed.wait()
                data = src.recv(65536)
                # Held while cut: nothing passes, in either direction, EOF included.
                self._healed.wait()
                if not data:
                    break
                dst.sendall(data)
        except OSError:
            pass
        finally:
            # One side ended: end the other too, as a real connection would.
            with contextlib.suppress(OSError):
                dst.shutdown(socket.SHUT_RDWR)
            with contextlib.suppress(OSError):
                src.shutdown(socket.SHUT_RDWR)
            self._forget(src)
            self._forget(dst)
