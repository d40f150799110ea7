"""``token_cleanup`` (unscoped): delete the personal API tokens and the dashboard's web
sessions that have expired.

Its result is ``{"deleted": tokens, "sessions_deleted": sessions}``: ``deleted`` kept
its meaning (tokens) from before sessions existed, so a script reading it still reads
the same number.
"""

from __future__ import annotations

from typing import Any

from safelight.handlers.contract import HandlerContext
from safelight.handlers.kind import Kind
from safelight.handlers.payloads import NoPayload
from safelight.handlers.services import Services
from safelight.library.catalogue import signins
from safelight.work.kinds import Scope


async def run_token_cleanup(
    ctx: HandlerContext, services: Services, payload: NoPayload
) -> dict[str, Any]:
    now = ctx.clock.now()
    async with ctx.fenced() as conn:
        deleted = await signins.delete_expired_tokens(conn, now)
        sessions = await signins.delete_expired_sessions(conn, now)
    return {"deleted": deleted, "sessions_deleted": sessions}


TOKEN_CLEANUP = Kind(
    "token_cleanup",
    Scope.FORBIDDEN,
    run_token_cleanup,
    interval=lambda settings: settings.token_cleanup_interval_seconds,
)
