"""What a kind of work declares: its row of the kinds table.

Each handler module declares its kind beside its handler (``CRAWL`` in
``handlers/crawl/``), and ``safelight.handlers.KINDS`` lists them all. Everything
that needs a fact of a kind reads it from its row: the store's validation the
:attr:`~Kind.spec` (scope and payload check), the executor the handler
:meth:`~Kind.bind` makes, the scheduler the :meth:`~Kind.schedule`, the CLI and the
handlers the :attr:`~Kind.name` and :meth:`~Kind.dedup_key`. The engine (``work/``)
knows no kind by name; it is handed what it needs from here (ADR 0018).
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine, Mapping
from dataclasses import dataclass
from typing import Any, Generic
from uuid import UUID

from safelight.handlers.contract import Handler, HandlerContext, MalformedPayload
from safelight.handlers.payloads import NoPayload, P, PayloadRejected, parse_payload
from safelight.handlers.services import Services
from safelight.settings import Settings
from safelight.work.kinds import KindSpec, Scope
from safelight.work.maintenance import PerConfig, Periodic
from safelight.work.retry import RetryPolicy
from safelight.work.store import WorkStore

Run = Callable[[HandlerContext, Services, P], Coroutine[Any, Any, dict[str, Any] | None]]
"""``async def run_x(ctx, services, payload) -> dict | None``: a kind's handler before it
is bound; ``payload`` is the item's, checked against the kind's model."""


@dataclass(frozen=True, slots=True)
class Kind(Generic[P]):
    """A kind of work: its name, scope, handler, payload, schedule and retries."""

    name: str
    scope: Scope
    run: Run[P]
    payload: type[P] = NoPayload  # type: ignore[assignment]  # the default P is NoPayload
    """The model its payload must fit (``handlers.payloads``; by default none may be
    given). Checked when an item is queued (the store refuses it, writing nothing) and
    again before the handler runs, which gets the checked model."""
    interval: Callable[[Settings], float] | None = None
    """How often the scheduler enqueues it, in seconds, from the settings: once per period
    in all for an unscoped kind, once per period for each active config for a scoped one.
    ``None``: only when asked for."""
    retry: RetryPolicy | None = None
    """How its items are tried again after a failure that may pass (an I/O error of a
    NAS mount, a handler's ``Retryable``: ``safelight.work.retry``). ``None``: the
    settings' policy (``Settings.retry_policy()``), as every kind has today."""
    heavy: bool = False
    """Whether it is heavy work (it reads every original, or makes proxies): a Worker
    starts it only inside ``SAFELIGHT_HEAVY_HOURS``, and asks a running one to wind
    down when the window ends (ADR 0060). A heavy kind's handler should honour
    ``ctx.winding_down`` at its next clean point (the crawl: between files)."""

    def __post_init__(self) -> None:
        if self.interval is not None and self.scope is Scope.OPTIONAL:
            raise ValueError(f"a scheduled kind is scoped or unscoped, not optional: {self.name}")

    @property
    def spec(self) -> KindSpec:
        """What the engine is handed of this kind: the store checks an item's payload
        and scope against it, the executor retries by it."""
        return KindSpec(self.name, self.scope, self.retry, check_payload=self.check_payload)

    def check_payload(self, payload: Mapping[str, Any]) -> P:
        """The payload checked against the kind's model; raises :class:`PayloadRejected`
        (a ``ValueError``) with one line naming the field."""
        return parse_payload(self.payload, payload)

    def dedup_key(self, config_id: UUID) -> str:
        """The dedup key that keeps at most one item of this kind queued per storage config
        (``crawl:<config id>``); the scheduler names each config's schedule so too."""
        return f"{self.name}:{config_id}"

    async def enqueue_for(self, store: WorkStore, config_id: UUID) -> int:
        """Queue an item of this kind for a storage config, at most one waiting at a time
        (its :meth:`dedup_key`): the new item's id, or the one already queued. An
        operator's request (``run``, ``purge``, the web dashboard's buttons); raises the
        store's ``InvalidWorkItem`` for a config that does not exist or is disabled."""
        return await store.enqueue(
            self.name, config_id=config_id, dedup_key=self.dedup_key(config_id)
        )

    def bind(self, services: Services) -> Handler:
        """The handler the executor runs: the payload checked, then ``run`` with it. An
        item whose payload does not fit (queued before the check, or written by hand)
        fails with one line, before the handler starts."""
        run, check, name = self.run, self.check_payload, self.name

        async def handler(ctx: HandlerContext) -> dict[str, Any] | None:
            try:
                payload = check(ctx.item.payload)
            except PayloadRejected as error:
                raise MalformedPayload(f"{name}: {error}") from None
            return await run(ctx, services, payload)

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
