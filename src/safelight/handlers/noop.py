"""``noop``: wait a while on the clock and return a given result.

For smoke tests and benchmarks of the engine, so it must cost nothing but the wait.
Payload (all optional): ``{"seconds": N, "result": {...}}``.
"""

from __future__ import annotations

import asyncio
from typing import Annotated, Any

from pydantic import Field

from safelight.handlers.contract import STOPPED, HandlerContext
from safelight.handlers.kind import Kind
from safelight.handlers.payloads import Payload
from safelight.handlers.services import Services
from safelight.work.errors import AttemptStopped
from safelight.work.kinds import Scope

MAX_NOOP_SECONDS = 3600
"""An hour: enough for any test or benchmark; a noop of a year would hold a Worker's slot
(and its lease's heartbeats) for good."""


class NoopPayload(Payload):
    seconds: Annotated[float, Field(ge=0, le=MAX_NOOP_SECONDS, allow_inf_nan=False)] = 0
    """How long to wait on the clock: 0 to ``MAX_NOOP_SECONDS`` seconds."""
    result: dict[str, Any] | None = None
    """What to return instead of ``{"slept": seconds}``."""


async def run_noop(ctx: HandlerContext, services: Services, payload: NoopPayload) -> dict[str, Any]:
    seconds = payload.seconds
    # A fake clock's sleep(0) waits for the next advance; nothing to wait for here.
    if seconds > 0:
        await _sleep_unless_cancelled(ctx, seconds)
    return payload.result if payload.result is not None else {"slept": seconds}


NOOP = Kind("noop", Scope.OPTIONAL, run_noop, payload=NoopPayload)


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
        raise AttemptStopped(STOPPED)
