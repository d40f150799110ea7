"""What the dashboard answers before anything else reads a request: the ``Host`` it
answers to, and the headers every response carries (ADR 0031, ADR 0042).

A request whose ``Host`` is not one of the dashboard's names is answered 421 (Misdirected
Request), whatever it asks: a page of another site that has made its own name resolve to
this machine (DNS rebinding) reaches the dashboard with that name in ``Host``, and is
refused. Its names are the loopback names, the one address it listens on (unless every
address), and the names given with ``--allow-host`` (:func:`answered_hosts`).

Only the name is compared, case-insensitively, never the port: behind a reverse proxy
the ``Host`` a browser sent names the proxy's port, not the dashboard's, and a rebinding
page's name is refused on any port. A ``Host`` that is not a name with an optional
numeric port, or a request with none or several, is refused too. Behind a trusted proxy
the ``Host`` checked is the one the proxy forwards, so the proxy must pass the browser's
(``docs/web.md``).

Every response gets a Content-Security-Policy that lets the pages load only what
safelight serves (no inline script), and the headers that keep it out of frames and its
URLs out of other sites' logs.
"""

from __future__ import annotations

from collections.abc import Iterable

from starlette.responses import PlainTextResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from safelight.core.hostnames import ANY_ADDRESS, LOOPBACK_NAMES, canonical_host, is_ip_literal
from safelight.settings import Settings

__all__ = ["SECURITY_HEADERS", "Guard", "answered_hosts", "host_name"]

SECURITY_HEADERS = (
    (
        b"content-security-policy",
        b"default-src 'self'; img-src 'self' data: blob:; media-src 'self'; "
        b"script-src 'self'; style-src 'self'; object-src 'none'; base-uri 'none'; "
        b"form-action 'self'; frame-ancestors 'none'",
    ),
    (b"x-content-type-options", b"nosniff"),
    (b"x-frame-options", b"DENY"),
    # Not no-referrer: under it a browser sends "Origin: null" with the sign-in form's
    # POST, which the cross-site check must refuse. Same-origin keeps every URL of the
    # dashboard out of other sites' logs all the same.
    (b"referrer-policy", b"same-origin"),
    (b"cross-origin-opener-policy", b"same-origin"),
    (b"cross-origin-resource-policy", b"same-origin"),
)

# Says nothing of the request: not the name it sent, nor the names answered.
MISDIRECTED = (
    "This dashboard does not answer to this host name; its operator can add the name "
    "with --allow-host.\n"
)


def host_name(host_header: str) -> str | None:
    """The name of a ``Host`` header, in :func:`canonical_host`'s spelling:
    ``NAS.local:8470`` -> ``nas.local``, ``[::1]:8470`` -> ``::1``; None when it is not
    a name with an optional numeric port."""
    text = host_header.strip()
    if text.startswith("["):
        name, bracket, rest = text[1:].partition("]")
        if not bracket:
            return None
        port = rest[1:] if rest.startswith(":") else None
        if rest and port is None:
            return None
    elif text.count(":") > 1:
        # An IPv6 literal without brackets, as some clients send; else not a Host.
        return canonical_host(text) if is_ip_literal(text) else None
    else:
        name, _, after = text.partition(":")
        port = after if ":" in text else None
    if port is not None and not (port.isascii() and port.isdigit()):
        return None
    name = canonical_host(name)
    return name or None


def answered_hosts(settings: Settings) -> frozenset[str]:
    """The names the dashboard of ``settings`` answers to: the loopback names, the
    address it listens on (unless every address), and its allowed names."""
    names = set(LOOPBACK_NAMES)
    if settings.web_host.strip("[]") not in ANY_ADDRESS:
        names.add(canonical_host(settings.web_host))
    names.update(canonical_host(name) for name in settings.web_allowed_hosts)
    return frozenset(names)


class Guard:
    """ASGI middleware: refuse a foreign ``Host`` (421), add the security headers."""

    def __init__(self, app: ASGIApp, hosts: Iterable[str]) -> None:
        self.app = app
        self.hosts = frozenset(canonical_host(host) for host in hosts)

    def answers(self, scope: Scope) -> bool:
        hosts = [value for name, value in scope["headers"] if name == b"host"]
        if len(hosts) != 1:
            return False
        return host_name(hosts[0].decode("latin-1")) in self.hosts

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if not self.answers(scope):
            response = PlainTextResponse(MISDIRECTED, 421)
            await response(scope, receive, self._headed(send))
            return
        await self.app(scope, receive, self._headed(send))

    @staticmethod
    def _headed(send: Send) -> Send:
        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                message = {**message, "headers": [*message.get("headers", []), *SECURITY_HEADERS]}
            await send(message)

        return send_with_headers
