"""``token_cleanup`` (unscoped): delete the auth tokens that have expired."""

from __future__ import annotations

from typing import Any

from safelight.handlers.contract import HandlerContext, payload_keys
from safelight.library import assets


async def run_token_cleanup(ctx: HandlerContext) -> dict[str, Any]:
    payload_keys(ctx, frozenset())
    async with ctx.fenced() as conn:
        deleted = await assets.delete_expired_tokens(conn, ctx.clock.now())
    return {"deleted": deleted}
