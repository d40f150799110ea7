"""The check that keeps other sites from acting (ADR 0031, ADR 0041).

Who is signed in is ``auth``'s and ``sessions``' (ADR 0041); who may act is
``acting``'s, which refuses any request whose ``Origin`` or ``Sec-Fetch-Site`` says it
comes from another site (:func:`refuse_cross_site`), as the sign-in and sign-out do.

The ``Host`` a request may name and the headers every response carries are
``safelight.web.guard``'s.
"""

from __future__ import annotations

from starlette.exceptions import HTTPException
from starlette.requests import Request


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
