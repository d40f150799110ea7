"""A PostgreSQL that is still starting, in front of one that is up.

:class:`StartingUpProxy` answers its first ``refusals`` connections as a starting
PostgreSQL answers them: it declines SSL and GSS encryption, reads the startup
message, and sends the server's own ``FATAL 57P03 the database system is starting up``
before closing. Later connections are forwarded to the real server (``TcpProxy``). So
a client meets the start-up exactly as it is on the wire, as often as the test asks,
without a real server having to be caught in its few moments of starting.
"""

from __future__ import annotations

import socket
import struct
import threading

from tests.faults.netproxy import TcpProxy

STARTING_UP = "the database system is starting up"
# The protocol's request codes that come before the startup message.
_SSL_REQUEST = 80877103
_GSSENC_REQUEST = 80877104


class StartingUpProxy(TcpProxy):
    def __init__(self, upstream_host: str, upstream_port: int, refusals: int) -> None:
        self._refusals_left = refusals
        self._count = threading.Lock()
        self.refused = 0
        """Connections answered as a starting server so far."""
        super().__init__(upstream_host, upstream_port)

    def _connect(self, client: socket.socket) -> None:
        with self._count:
            refuse = self._refusals_left > 0
            if refuse:
                self._refusals_left -= 1
        if not refuse:
            super()._connect(client)
            return
        try:
            _answer_starting_up(client)
        except OSError:
            pass
        finally:
            with self._count:
                self.refused += 1
            self._forget(client)


def _answer_starting_up(client: socket.socket) -> None:
    while True:
        (length,) = struct.unpack("!I", _read(client, 4))
        (code,) = struct.unpack("!I", _read(client, length - 4)[:4])
        if code not in (_SSL_REQUEST, _GSSENC_REQUEST):
            break  # the startup message
        client.sendall(b"N")  # no encryption: the client goes on in the clear
    fields = b"".join(
        f"{tag}{value}\0".encode()
        for tag, value in (("S", "FATAL"), ("V", "FATAL"), ("C", "57P03"), ("M", STARTING_UP))
    )
    body = fields + b"\0"
    client.sendall(b"E" + struct.pack("!I", len(body) + 4) + body)


def _read(sock: socket.socket, size: int) -> bytes:
    data = b""
    while len(data) < size:
        chunk = sock.recv(size - len(data))
        if not chunk:
            raise ConnectionResetError("the client closed the connection")
        data += chunk
    return data
