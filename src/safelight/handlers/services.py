"""What the handlers share: the database, the queue, the clock and the settings."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from psycopg_pool import AsyncConnectionPool

from safelight.core.clock import Clock
from safelight.library.render.decoding import ImageDecoder
from safelight.settings import Settings
from safelight.work.store import WorkStore


class CrawlObserver(Protocol):
    """What a crawl tells whoever watches it (the Worker process's metrics, wired by
    ``safelight.app``), as it happens: each a counter's increment, never blocking."""

    def files_crawled(self, count: int) -> None:
        """``count`` more files dealt with, whatever became of each."""
        ...

    def proxies_made(self, count: int) -> None:
        """``count`` more proxy files written and recorded."""
        ...

    def file_errors(self, count: int) -> None:
        """``count`` more files the crawl could not ingest (listed in its result)."""
        ...


class NoCrawlObserver:
    def files_crawled(self, count: int) -> None:
        pass

    def proxies_made(self, count: int) -> None:
        pass

    def file_errors(self, count: int) -> None:
        pass


NO_CRAWL_OBSERVER: CrawlObserver = NoCrawlObserver()


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
    crawl_observer: CrawlObserver = NO_CRAWL_OBSERVER
    """Counts files crawled, proxies made and per-file errors as each crawl goes."""
