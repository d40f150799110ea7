"""The kinds table: every kind of work, as its handler module declares it (``Kind``).

Everything that needs to know the kinds reads them here: the store's validation
(``KIND_SPECS``: scope and payload check), the executor (``build_handlers(services)``:
one handler per kind), the scheduler (``schedule_settings(settings)``), and the CLI (a
row's name and dedup key).
"""

from __future__ import annotations

from typing import Any

from safelight.handlers.burst_detection import BURST_DETECTION
from safelight.handlers.catalogue_backup import CATALOGUE_BACKUP
from safelight.handlers.contract import Handler, HandlerContext, HandlerFailed, MalformedPayload
from safelight.handlers.crawl import CRAWL
from safelight.handlers.faces import FACES
from safelight.handlers.kind import Kind
from safelight.handlers.noop import NOOP
from safelight.handlers.payloads import NoPayload, Payload, PayloadRejected
from safelight.handlers.place_fill import PLACE_FILL
from safelight.handlers.proxy_deletion import PROXY_DELETION
from safelight.handlers.proxy_remake import PROXY_REMAKE
from safelight.handlers.proxy_sweep import PROXY_SWEEP
from safelight.handlers.purge import PURGE
from safelight.handlers.retention import WORK_ITEM_RETENTION
from safelight.handlers.scrub import SCRUB
from safelight.handlers.services import Services
from safelight.handlers.token_cleanup import TOKEN_CLEANUP
from safelight.settings import Settings
from safelight.work.kinds import KindSpec
from safelight.work.maintenance import PerConfig, Periodic, ScheduleSettings

__all__ = [
    "BURST_DETECTION",
    "CATALOGUE_BACKUP",
    "CRAWL",
    "FACES",
    "HEAVY_KINDS",
    "KINDS",
    "KIND_SPECS",
    "NOOP",
    "PLACE_FILL",
    "PROXY_DELETION",
    "PROXY_REMAKE",
    "PROXY_SWEEP",
    "PURGE",
    "SCRUB",
    "TOKEN_CLEANUP",
    "WORK_ITEM_RETENTION",
    "Handler",
    "HandlerContext",
    "HandlerFailed",
    "Kind",
    "MalformedPayload",
    "NoPayload",
    "Payload",
    "PayloadRejected",
    "Services",
    "build_handlers",
    "schedule_settings",
]

KINDS: tuple[Kind[Any], ...] = (
    CRAWL,
    BURST_DETECTION,
    PURGE,
    PROXY_DELETION,
    PROXY_SWEEP,
    TOKEN_CLEANUP,
    WORK_ITEM_RETENTION,
    NOOP,
    CATALOGUE_BACKUP,
    SCRUB,
    PROXY_REMAKE,
    PLACE_FILL,
    FACES,
)

KIND_SPECS: tuple[KindSpec, ...] = tuple(kind.spec for kind in KINDS)

# The kinds kept to SAFELIGHT_HEAVY_HOURS (their Kind row's ``heavy``; ADR 0060).
HEAVY_KINDS: frozenset[str] = frozenset(kind.name for kind in KINDS if kind.heavy)


def build_handlers(services: Services) -> dict[str, Handler]:
    """One handler per kind of ``KINDS``, bound to ``services``."""
    return {kind.name: kind.bind(services) for kind in KINDS}


def schedule_settings(settings: Settings) -> ScheduleSettings:
    """The kinds of ``KINDS`` that have an interval, for the scheduler."""
    schedules = [kind.schedule(settings) for kind in KINDS]
    return ScheduleSettings(
        periodic=tuple(s for s in schedules if isinstance(s, Periodic)),
        per_config=tuple(s for s in schedules if isinstance(s, PerConfig)),
    )
