"""The names a server of safelight's answers to, and the addresses it trusts, as a
person writes them in a setting: what makes one valid, one spelling of each, and the
URL that names one (ADR 0042).

A host name here is what a browser sends in ``Host`` once a person typed it: a DNS name
(``nas.local``, ``photos.example.org``) or an IP literal (``192.168.1.5``, ``fe80::1``,
``[fe80::1]``); never a scheme, a port, a path or a wildcard.
"""

from __future__ import annotations

import ipaddress
import re

__all__ = [
    "ANY_ADDRESS",
    "LOOPBACK_ADDRESS",
    "LOOPBACK_NAMES",
    "canonical_host",
    "host_name_problem",
    "is_ip_literal",
    "proxy_address_problem",
    "url_of",
]

LOOPBACK_NAMES = frozenset({"127.0.0.1", "localhost", "::1"})
"""Names every browser on this machine may use for a server on its loopback."""
LOOPBACK_ADDRESS = "127.0.0.1"
"""What a browser on this machine opens for a server bound to every address."""
ANY_ADDRESS = frozenset({"0.0.0.0", "::", ""})
"""Listening addresses that are every address of this machine."""

# RFC 1123 labels; the underscore too, which some home routers hand out in names.
_LABEL = re.compile(r"^[a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?$")
MAX_NAME_LENGTH = 253


def _ip(text: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(text)
    except ValueError:
        return None


def is_ip_literal(text: str) -> bool:
    """Whether ``text`` is an IPv4 or IPv6 address (without brackets)."""
    return _ip(text) is not None


def canonical_host(name: str) -> str:
    """One spelling of a host name for comparing: lower case, no brackets around an
    IPv6 literal and its shortest form, no trailing dot (``NAS.local.`` and
    ``nas.local`` name one host; so do ``[0:0::1]`` and ``::1``)."""
    bare = name.strip().lower()
    if bare.startswith("[") and bare.endswith("]"):
        bare = bare[1:-1]
    address = _ip(bare)
    if address is not None:
        return str(address)
    return bare.rstrip(".")


def host_name_problem(name: str) -> str | None:
    """What is wrong with ``name`` as a name to answer to, as the end of a sentence
    that never quotes it; None when it is a host name or an IP literal."""
    bare = name.strip()
    if not bare:
        return "is empty"
    if "://" in bare or "/" in bare:
        return "has a scheme or a path: give the host name alone"
    if "*" in bare:
        return "has a wildcard: name each host"
    if bare.startswith("[") and bare.endswith("]"):
        return (
            None if isinstance(_ip(bare[1:-1]), ipaddress.IPv6Address) else "is not an IPv6 address"
        )
    if _ip(bare) is not None:
        return None
    if ":" in bare:
        return "has a port: give the host name alone (the port is the one serve listens on)"
    dotless = bare.lower().rstrip(".")
    if len(dotless) > MAX_NAME_LENGTH or not all(
        _LABEL.match(label) for label in dotless.split(".")
    ):
        return "is not a host name (letters, digits and hyphens, parts separated by dots)"
    return None


def proxy_address_problem(address: str) -> str | None:
    """What is wrong with ``address`` as a trusted proxy's, as for
    :func:`host_name_problem`; None for an IP address or network (``192.168.1.0/24``).
    A name is refused: the peer's address is what the server sees, and a name's
    addresses may change under it."""
    bare = address.strip()
    if not bare:
        return "is empty"
    if "*" in bare:
        return "has a wildcard: trusting every peer would let any client say it is another"
    try:
        if "/" in bare:
            ipaddress.ip_network(bare)
        else:
            ipaddress.ip_address(bare)
    except ValueError:
        return "is not an IP address (like 127.0.0.1) or a network (like 192.168.1.0/24)"
    return None


def url_of(scheme: str, host: str, port: int) -> str:
    """``scheme://host:port/``, an IPv6 literal in brackets."""
    bare = host.strip("[]")
    shown = f"[{bare}]" if ":" in bare else bare
    return f"{scheme}://{shown}:{port}/"
