"""Running handlers the way a Worker does: enqueue with the real store, claim, and run
through the real executor, on real PostgreSQL and a FakeClock that only moves when a
test moves it (so no lease expires and no heartbeat fires unless a test says so).
"""

from __future__ import annotations

import io
import os
import shutil
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from uuid import UUID

from PIL import Image
from psycopg.types.json import Jsonb
from psycopg_pool import AsyncConnectionPool

from safelight.app import WorkerOptions, build_engine
from safelight.db.database import Database
from safelight.handlers import KIND_SPECS, Handler, Services, build_handlers
from safelight.handlers.crawl.result import CrawlResult
from safelight.library.render.decoding import ImageDecoder
from safelight.settings import Settings
from safelight.testing.fakeclock import FakeClock
from safelight.testing.rows import add_config
from safelight.work.executor import Executor, RunResult
from safelight.work.model import Status, WorkItem
from safelight.work.store import WorkStore

KINDS = [spec.name for spec in KIND_SPECS]
LEASE = 60.0
START = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


@dataclass
class Harness:
    pool: AsyncConnectionPool[Any]
    clock: FakeClock
    store: WorkStore
    settings: Settings
    services: Services
    handlers: dict[str, Handler]
    executor: Executor
    ran: list[WorkItem] = field(default_factory=list)
    progress: dict[int, list[dict[str, int]]] = field(default_factory=dict)
    """Every progress report, by item id."""

    @property
    def proxy_root(self) -> Path:
        return self.settings.proxies

    async def add_config(self, root: Path, owner: str = "alice") -> UUID:
        return await add_config(self.pool, self.clock, owner, str(root))

    async def run(
        self,
        kind: str,
        *,
        config_id: UUID | None = None,
        payload: Mapping[str, Any] | None = None,
    ) -> WorkItem:
        """Queue an item and run the queue, oldest first, until that item has finished
        (follow-ups queued earlier run first, as on a Worker). Returns the finished item."""
        item_id = await self.store.enqueue(kind, config_id=config_id, payload=payload)
        return await self._run_until_finished(item_id)

    async def run_stored(
        self, kind: str, *, config_id: UUID | None = None, payload: Mapping[str, Any]
    ) -> WorkItem:
        """:meth:`run` for an item written into the queue unchecked, as one queued before
        payloads were checked at enqueue (or written by hand) is."""
        async with self.pool.connection() as conn:
            cur = await conn.execute(
                "INSERT INTO work_items (kind, storage_config_id, payload, requested_at)"
                " VALUES (%s, %s, %s, %s) RETURNING id",
                (kind, config_id, Jsonb(dict(payload)), self.clock.now()),
            )
            row = await cur.fetchone()
        assert row is not None
        return await self._run_until_finished(int(row[0]))

    async def run_queued(self, item_id: int) -> WorkItem:
        """Run the queue until an item something else queued (a dashboard action, a
        command) has finished, as :meth:`run` does its own."""
        return await self._run_until_finished(item_id)

    async def _run_until_finished(self, item_id: int) -> WorkItem:
        while True:
            current = await self.store.get(item_id)
            assert current is not None
            if current.status not in (Status.QUEUED, Status.RUNNING):
                return current
            claimed = await self.store.claim("w1", KINDS, lease_seconds=LEASE)
            assert claimed is not None, f"item {item_id} is {current.status} but nothing to claim"
            self.ran.append(claimed)
            await self.executor.run(claimed)

    async def run_claimed(self, item: WorkItem) -> RunResult:
        return await self.executor.run(item)

    async def rows(self, sql: str, *params: object) -> list[tuple[Any, ...]]:
        async with self.pool.connection() as conn:
            cur = await conn.execute(sql, params)
            return list(await cur.fetchall())

    async def value(self, sql: str, *params: object) -> Any:
        rows = await self.rows(sql, *params)
        assert len(rows) == 1, rows
        return rows[0][0]


def database_of(pool: AsyncConnectionPool[Any]) -> Database:
    """A test's pool as ``build_engine`` takes it (its URL serves only the listener)."""
    assert isinstance(pool.conninfo, str)
    return Database(url=pool.conninfo, pool=pool)


def make_harness(
    pool: AsyncConnectionPool[Any],
    tmp_path: Path,
    *,
    clock: FakeClock | None = None,
    handlers: dict[str, Handler] | None = None,
    decoder: ImageDecoder | None = None,
    **overrides: Any,
) -> Harness:
    """The engine ``build_engine`` makes (the decode processes given, else photos decode
    in threads), with ``handlers`` in place of the real ones if given."""
    clock = clock or FakeClock(start=START)
    settings = Settings(
        **{
            "home": tmp_path / "home",
            "proxy_root": tmp_path / "proxies",
            "thumbnail_width": 64,
            "preview_width": 256,
            "shutdown_grace_seconds": 5.0,
            "decode_processes": 0,
            **overrides,
        }
    )
    reports: dict[int, list[dict[str, int]]] = {}

    def on_progress(item: WorkItem, counters: Mapping[str, int]) -> None:
        reports.setdefault(item.id, []).append(dict(counters))

    def make_handlers(services: Services) -> Mapping[str, Handler]:
        return build_handlers(services) if handlers is None else handlers

    engine = build_engine(
        settings,
        database_of(pool),
        clock,
        WorkerOptions(until_idle=True),
        on_progress=on_progress,
        handlers=make_handlers,
        decoder=decoder,
    )
    return Harness(
        pool,
        clock,
        engine.store,
        settings,
        engine.services,
        dict(engine.handlers),
        engine.executor,
        progress=reports,
    )


# --- small originals -------------------------------------------------------------------

_MTIME = datetime(2024, 5, 1, 8, 0, tzinfo=UTC)


def jpeg(
    seed: int,
    *,
    size: tuple[int, int] = (48, 32),
    make: str | None = None,
    model: str | None = None,
    taken: datetime | None = None,
    blur: bool = False,
) -> bytes:
    """A small, distinct JPEG (content depends on ``seed``), with optional EXIF."""
    image = Image.new("RGB", size, ((seed * 53) % 256, (seed * 97) % 256, (seed * 31) % 256))
    # A checkerboard makes it sharp; a flat image is "blurred".
    if not blur:
        pixels = image.load()
        assert pixels is not None
        for x in range(0, size[0], 2):
            for y in range(0, size[1], 2):
                pixels[x, y] = (255 - seed % 256, seed % 256, 128)
    exif = Image.Exif()
    if make:
        exif[0x010F] = make
    if model:
        exif[0x0110] = model
    if taken is not None:
        exif.get_ifd(0x8769)[0x9003] = taken.strftime("%Y:%m:%d %H:%M:%S")
    out = io.BytesIO()
    image.save(out, "JPEG", quality=90, exif=exif.tobytes())
    return out.getvalue()


def write(root: Path, relative: str, data: bytes, *, mtime: datetime | None = None) -> Path:
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    stamp = (mtime or _MTIME).timestamp()
    os.utime(path, (stamp, stamp))
    return path


def touch_later(path: Path, seconds: float = 60.0) -> None:
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + int(seconds * 1e9)))


def copy_library(source: Path, target: Path) -> Path:
    """A copy with the same modification times (copy2), as a second crawl would find it."""
    shutil.copytree(source, target, symlinks=True)
    return target


def files_under(root: Path) -> set[str]:
    return {
        p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file() or p.is_symlink()
    }


def later(hours: float) -> FakeClock:
    """A clock whose now is ``hours`` after the real time (for the sweep's age floor, which
    compares file times, set by the kernel in real time, with the clock)."""
    return FakeClock(start=datetime.now(UTC) + timedelta(hours=hours))  # noqa: TID251


async def share_proxy_files(h: Harness, dead: int, live: int) -> None:
    """Make ``live``'s proxy rows name ``dead``'s files, as two assets of one content
    shared their legacy ``<type>.<ext>`` files before names carried their attempt (ADR
    0016); ``live``'s own files go, as they never existed then."""
    own = await h.rows(
        "SELECT path FROM proxy_files WHERE asset_id = %s AND path IS NOT NULL", live
    )
    async with h.pool.connection() as conn:
        await conn.execute(
            "UPDATE proxy_files p SET path = d.path FROM proxy_files d"
            " WHERE p.asset_id = %s AND d.asset_id = %s AND d.proxy_type = p.proxy_type"
            " AND p.path IS NOT NULL",
            (live, dead),
        )
    for (path,) in own:
        (h.proxy_root / path).unlink()


def crawl_result(item: WorkItem) -> CrawlResult:
    """A crawl item's result, read as the CLI reads it (``CrawlResult.from_json``)."""
    assert item.result is not None, item.error
    return CrawlResult.from_json(item.result)
