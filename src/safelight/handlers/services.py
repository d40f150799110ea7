"""What the handlers share: the database, the queue, the clock and the settings."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from psycopg_pool import AsyncConnectionPool

from safelight.core.clock import Clock
from safelight.library.decoding import ImageDecoder
from safelight.settings import Settings
from safelight.work.store import WorkStore


@dataclass(frozen=True, slots=True)
class Services:
    pool: AsyncConnectionPool[Any]
    """Autocommit connections, for reads; writes go through ``ctx.fenced()``."""
    store: WorkStore
    """For follow-up work (a crawl queues its config's burst detection)."""
    clock: Clock
    settings: Settings
    decoder: ImageDecoder | None = None
    """Decode processes shared by the process's Workers; None: photos decode in threads."""
