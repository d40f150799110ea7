"""What a server of safelight's allows its clients: how many connections at once, and
how long one may take to send its request's head (``docs/security.md``, "Descriptors
and connections"); and whether a listening address reaches beyond this machine."""

from __future__ import annotations

import ipaddress
import socket
from dataclasses import dataclass

__all__ = ["ConnectionLimits", "beyond_loopback"]


@dataclass(frozen=True, slots=True)
class ConnectionLimits:
    """A connection past ``max_connections`` is closed as it is accepted, never queued:
    each one held is a descriptor of the process. One that has not sent a whole request
    head within ``head_seconds`` of its start (or of its previous answer) is closed."""

    max_connections: int
    head_seconds: float

    def __post_init__(self) -> None:
        if self.max_connections < 1:
            raise ValueError(f"max_connections must be at least 1, not {self.max_connections}")
        if not self.head_seconds > 0:
            raise ValueError(f"head_seconds must be greater than 0, not {self.head_seconds}")


def beyond_loopback(host: str) -> bool:
    """Whether listening on ``host`` opens a port to other machines: any address that is
    not a loopback one (0.0.0.0 and :: are every address). A name is resolved; one that
    does not resolve counts as beyond (binding it will fail anyway)."""
    try:
        addresses = {ipaddress.ip_address(host.strip("[]"))}
    except ValueError:
        try:
            infos = socket.getaddrinfo(host, None, type=socket.SOCK_STREAM)
        except OSError:
            return True
        # A link-local address comes with its scope ("fe80::1%eth0"), which ipaddress reads.
        addresses = {ipaddress.ip_address(str(info[4][0])) for info in infos}
    return not addresses or not all(address.is_loopback for address in addresses)
