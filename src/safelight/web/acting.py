"""Who may act (cancel, retry, queue a crawl or a purge): a signed-in viewer, on a
dashboard not started ``--read-only``, from this site, and for a browser's session with
the session's CSRF token (ADR 0041). Which configs a viewer may act on is the route's
check (``Viewer.may_see``), after this one.
"""

from __future__ import annotations

from starlette.exceptions import HTTPException
from starlette.requests import Request

from safelight.web.security import refuse_cross_site
from safelight.web.sessions import SESSION_KEY, Session
from safelight.web.viewer import Viewer, viewer_of

CSRF_HEADER = "x-csrf-token"
READ_ONLY = "this dashboard is read-only (started with --read-only): nobody can act on it"
NO_CSRF = "this page cannot act for its session: sign in again to act"


def may_act(request: Request) -> Viewer:
    """The viewer the action is for; else raise 401 (no viewer) or 403 (read-only,
    from another site, a session's request without its CSRF token)."""
    viewer = viewer_of(request)
    if request.app.state.web.read_only:
        raise HTTPException(403, READ_ONLY)
    refuse_cross_site(request)
    session = request.scope.get(SESSION_KEY)
    # A Bearer token's request has no session: a page of another site cannot make a
    # browser send that header, so it needs no CSRF token.
    if isinstance(session, Session) and not session.csrf_matches(
        request.headers.get(CSRF_HEADER, "")
    ):
        raise HTTPException(403, NO_CSRF)
    return viewer
