"""Every kind's handler, and the kinds the engine knows, for the Worker.

``KIND_SPECS`` tells the store which kinds exist and how they are scoped;
``build_handlers(services)`` gives the executor one handler per kind.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from safelight.handlers.burst_detection import run_burst_detection
from safelight.handlers.contract import Handler, HandlerContext, HandlerFailed, MalformedPayload
from safelight.handlers.crawl import run_crawl
from safelight.handlers.noop import run_noop
from safelight.handlers.proxy_deletion import run_proxy_deletion
from safelight.handlers.proxy_sweep import run_proxy_sweep
from safelight.handlers.purge import run_purge
from safelight.handlers.retention import run_retention
from safelight.handlers.services import Services
from safelight.handlers.token_cleanup import run_token_cleanup
from safelight.work.kinds import KindSpec, Scope

__all__ = [
    "KIND_SPECS",
    "Handler",
    "HandlerContext",
    "HandlerFailed",
    "MalformedPayload",
    "Services",
    "build_handlers",
]

KIND_SPECS: tuple[KindSpec, ...] = (
    KindSpec("crawl", Scope.REQUIRED),
    KindSpec("burst_detection", Scope.REQUIRED),
    KindSpec("purge", Scope.REQUIRED),
    KindSpec("proxy_deletion", Scope.OPTIONAL),
    KindSpec("proxy_sweep", Scope.FORBIDDEN),
    KindSpec("token_cleanup", Scope.FORBIDDEN),
    KindSpec("work_item_retention", Scope.FORBIDDEN),
    KindSpec("noop", Scope.OPTIONAL),
)

_WithServices = Callable[[HandlerContext, Services], Awaitable[dict[str, Any]]]


def build_handlers(services: Services) -> dict[str, Handler]:
    """One handler per kind of ``KIND_SPECS``, bound to ``services``."""

    def bound(run: _WithServices) -> Handler:
        async def handler(ctx: HandlerContext) -> dict[str, Any] | None:
            return await run(ctx, services)

        handler.__name__ = handler.__qualname__ = run.__name__
        return handler

    handlers: dict[str, Handler] = {
        "crawl": bound(run_crawl),
        "burst_detection": bound(run_burst_detection),
        "purge": bound(run_purge),
        "proxy_deletion": bound(run_proxy_deletion),
        "proxy_sweep": bound(run_proxy_sweep),
        "token_cleanup": run_token_cleanup,
        "work_item_retention": bound(run_retention),
        "noop": run_noop,
    }
    assert set(handlers) == {spec.name for spec in KIND_SPECS}
    return handlers
