"""What a kind of work declares: its row of the kinds table.

Each handler module declares its kind beside its handler (``CRAWL`` in
``handlers/crawl.py``), and ``safelight.handlers.KINDS`` lists them all. Everything
that needs a fact of a kind reads it from its row: the store's validation the
:attr:`~Kind.spec`, the executor the handler :meth:`~Kind.bind` makes, the scheduler
the :meth:`~Kind.schedule`, the CLI and the handlers the :attr:`~Kind.name` and
:meth:`~Kind.dedup_key`. The engine (``work/``) knows no kind by name; it is handed
what it needs from here (ADR 0018).
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import Any
from uuid import UUID

from safelight.handlers.contract import Handler, HandlerContext, check_payload_keys
from safelight.handlers.services import Services
from safelight.settings import Settings
from safelight.work.kinds import KindSpec, Scope
from safelight.work.maintenance import PerConfig, Periodic
from safelight.work.retry import RetryPolicy

Run = Callable[[HandlerContext, Services], Coroutine[Any, Any, dict[str, Any] | None]]
"""``async def run_x(ctx, services) -> dict | None``: a kind's handler before it is bound."""


@dataclass(frozen=True, slots=True)
class Kind:
    """A kind of work: its name, scope, handler, payload keys, schedule and retries."""

    name: str
    scope: Scope
    run: Run
    payload_keys: frozenset[str] = frozenset()
    """The keys its payload may have (none by default). An item with any other key fails
    before the handler runs, since a typo must not pass; the handler checks the values."""
    interval: Callable[[Settings], float] | None = None
    """How often the scheduler enqueues it, in seconds, from the settings: once per period
    in all for an unscoped kind, once per period for each active config for a scoped one.
    ``None``: only when asked for."""
    retry: RetryPolicy | None = None
    """How its items are tried again after a failure that may pass (an I/O error of a
    NAS mount, a handler's ``Retryable``: ``safelight.work.retry``). ``None``: the
    settings' policy (``Settings.retry_policy()``), as every kind has today."""

    def __post_init__(self) -> None:
        if self.interval is not None and self.scope is Scope.OPTIONAL:
            raise ValueError(f"a scheduled kind is scoped or unscoped, not optional: {self.name}")

    @property
    def spec(self) -> KindSpec:
        """What the engine is handed of this kind: the store validates an item against
        it, the executor retries by it."""
        return KindSpec(self.name, self.scope, self.retry)

    def dedup_key(self, config_id: UUID) -> str:
        """The dedup key that keeps at most one item of this kind queued per storage config
        (``crawl:<config id>``); the scheduler names each config's schedule so too."""
        return f"{self.name}:{config_id}"

    def bind(self, services: Services) -> Handler:
        """The handler the executor runs: the payload's keys checked, then ``run``."""
        run, allowed = self.run, self.payload_keys

        async def handler(ctx: HandlerContext) -> dict[str, Any] | None:
            check_payload_keys(ctx, allowed)
            return await run(ctx, services)

        handler.__name__ = handler.__qualname__ = run.__name__
        return handler

    def schedule(self, settings: Settings) -> Periodic | PerConfig | None:
        """What the scheduler is handed for this kind, or ``None`` if it is not scheduled."""
        if self.interval is None:
            return None
        seconds = self.interval(settings)
        if self.scope is Scope.FORBIDDEN:
            return Periodic(self.name, seconds)
        return PerConfig(self.name, seconds, self.dedup_key)
