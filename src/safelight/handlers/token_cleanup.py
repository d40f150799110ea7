"""``token_cleanup`` (unscoped): delete the auth tokens that have expired."""

from __future__ import annotations

from typing import Any

from safelight.handlers.contract import HandlerContext
from safelight.handlers.kind import Kind
from safelight.handlers.payloads import NoPayload
from safelight.handlers.services import Services
from safelight.library import assets
from safelight.work.kinds import Scope


async def run_token_cleanup(
    ctx: HandlerContext, services: Services, payload: NoPayload
) -> dict[str, Any]:
    async with ctx.fenced() as conn:
        deleted = await assets.delete_expired_tokens(conn, ctx.clock.now())
    return {"deleted": deleted}


TOKEN_CLEANUP = Kind(
    "token_cleanup",
    Scope.FORBIDDEN,
    run_token_cleanup,
    interval=lambda settings: settings.token_cleanup_interval_seconds,
)
