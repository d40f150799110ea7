"""``noop``: wait a while on the clock and return a given result.

For smoke tests and benchmarks of the engine, so it must cost nothing but the wait.
Payload (all optional): ``{"seconds": N, "result": {...}}``.
"""

from __future__ import annotations

import asyncio
import math
from typing import Any

from safelight.handlers.contract import HandlerContext, MalformedPayload
from safelight.handlers.kind import Kind
from safelight.handlers.services import Services
from safelight.work.errors import AttemptStopped
from safelight.work.kinds import Scope


async def run_noop(ctx: HandlerContext, services: Services) -> dict[str, Any]:
    payload = ctx.item.payload
    seconds = payload.get("seconds", 0)
    if isinstance(seconds, bool) or not isinstance(seconds, int | float):
        raise MalformedPayload(f"noop seconds must be a number, not {seconds!r}")
    if not math.isfinite(seconds) or seconds < 0:
        raise MalformedPayload(f"noop seconds must be a finite number >= 0, not {seconds!r}")
    result = payload.get("result")
    if result is not None and not isinstance(result, dict):
        raise MalformedPayload("noop result must be a JSON object")
    # A fake clock's sleep(0) waits for the next advance; nothing to wait for here.
    if seconds > 0:
        await _sleep_unless_cancelled(ctx, float(seconds))
    return result if result is not None else {"slept": seconds}


NOOP = Kind("noop", Scope.OPTIONAL, run_noop, payload_keys=frozenset({"seconds", "result"}))


async def _sleep_unless_cancelled(ctx: HandlerContext, seconds: float) -> None:
    sleeper = asyncio.ensure_future(ctx.clock.sleep(seconds))
    stopper = asyncio.ensure_future(ctx.cancelled.wait())
    try:
        await asyncio.wait({sleeper, stopper}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        sleeper.cancel()
        stopper.cancel()
    if not sleeper.done() or sleeper.cancelled():
        ctx.ensure_alive()
        raise AttemptStopped("stopped: the attempt was asked to stop")
