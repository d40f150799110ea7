"""What every response carries, and the checks that keep other sites out (ADR 0031).

Who is signed in is ``auth``'s and ``sessions``' (ADR 0041); who may act is
``acting``'s, which refuses any request whose ``Origin`` or ``Sec-Fetch-Site`` says it
comes from another site (:func:`refuse_cross_site`), as the sign-in and sign-out do.

Every response gets a Content-Security-Policy that lets the pages load only what
safelight serves (no inline script), and the headers that keep it out of frames and
its URLs out of other sites' logs. A request whose ``Host`` is not the dashboard's own
is refused (a DNS-rebinding page cannot read the library through the browser).
"""

from __future__ import annotations

from collections.abc import Iterable

from starlette.datastructures import Headers
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import PlainTextResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

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

LOOPBACK_NAMES = frozenset({"127.0.0.1", "localhost", "::1"})
ANY_ADDRESS = frozenset({"0.0.0.0", "::", ""})


def refuse_cross_site(request: Request) -> None:
    """Raise 403 if the browser says the request comes from another site."""
    fetch_site = request.headers.get("sec-fetch-site")
    if fetch_site is not None and fetch_site not in ("same-origin", "none"):
        raise HTTPException(403, "a request from another site may not act")
    origin = request.headers.get("origin")
    if origin is not None and origin != own_origin(request):
        raise HTTPException(403, "a request from another site may not act")


def own_origin(request: Request) -> str:
    host = request.headers.get("host", "")
    return f"{request.url.scheme}://{host}"


def host_name(host_header: str) -> str:
    """``example:8470`` -> ``example``, ``[::1]:8470`` -> ``::1``."""
    if host_header.startswith("["):
        return host_header[1:].split("]", 1)[0]
    return host_header.rsplit(":", 1)[0] if host_header.count(":") == 1 else host_header


def allowed_hosts(bind_host: str) -> frozenset[str] | None:
    """The ``Host`` names the app answers: the loopback names and the address it is
    bound to; None (any) when bound to every address, where it is reachable by any."""
    if bind_host in ANY_ADDRESS:
        return None
    return LOOPBACK_NAMES | {bind_host.strip("[]")}


class Guard:
    """ASGI middleware: refuse a foreign ``Host``, add the security headers."""

    def __init__(self, app: ASGIApp, hosts: Iterable[str] | None) -> None:
        self.app = app
        self.hosts = None if hosts is None else frozenset(h.lower() for h in hosts)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if self.hosts is not None:
            host = host_name(Headers(scope=scope).get("host", "")).lower()
            if host not in self.hosts:
                response = PlainTextResponse("this dashboard does not answer to that host", 421)
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
