"""Purge on real PostgreSQL: files and rows of soft-deleted assets, the shared-content
re-check, and the race of #337 (a purge and a crawl of one config, two Workers)."""

from __future__ import annotations

import asyncio
from collections import Counter
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest
from psycopg_pool import AsyncConnectionPool

from safelight.handlers.contract import Handler, HandlerContext
from safelight.testing.handlers import (
    KINDS,
    LEASE,
    Harness,
    jpeg,
    make_harness,
    share_proxy_files,
    write,
)
from safelight.work.model import Status

pytestmark = pytest.mark.integration


async def proxy_files_of(h: Harness, asset_id: int) -> list[Path]:
    rows = await h.rows(
        "SELECT path FROM proxy_files WHERE asset_id = %s AND path IS NOT NULL", asset_id
    )
    return [h.proxy_root / p for (p,) in rows]


async def asset_at(h: Harness, path: str, *, deleted: bool = False) -> int:
    return int(
        await h.value(
            "SELECT id FROM assets WHERE file_path = %s AND is_deleted = %s", path, deleted
        )
    )


async def crawled(h: Harness, root: Path) -> UUID:
    config = await h.add_config(root)
    assert (await h.run("crawl", config_id=config)).status is Status.SUCCEEDED
    return config


async def dead_then_back_under_another_name(h: Harness, root: Path) -> tuple[UUID, int, int]:
    """A crawled config whose ``a.jpg`` is deleted, then comes back (the same content) as
    ``back/a again.jpg``, each change crawled: the config, the dead asset, the live one."""
    write(root, "a.jpg", jpeg(3))
    write(root, "b.jpg", jpeg(6))
    config = await crawled(h, root)
    dead = await asset_at(h, "a.jpg")
    (root / "a.jpg").unlink()
    assert (await h.run("crawl", config_id=config)).status is Status.SUCCEEDED
    write(root, "back/a again.jpg", jpeg(3))
    assert (await h.run("crawl", config_id=config)).status is Status.SUCCEEDED
    return config, dead, await asset_at(h, "back/a again.jpg")


async def test_purge_deletes_the_files_and_rows_of_soft_deleted_assets_only(
    pool: AsyncConnectionPool[Any], tmp_path: Path
) -> None:
    h = make_harness(pool, tmp_path)
    root = tmp_path / "library"
    write(root, "keep.jpg", jpeg(1))
    write(root, "gone.jpg", jpeg(2))
    config = await crawled(h, root)
    kept, gone = await asset_at(h, "keep.jpg"), await asset_at(h, "gone.jpg")
    gone_files, kept_files = await proxy_files_of(h, gone), await proxy_files_of(h, kept)
    (root / "gone.jpg").unlink()
    assert (await h.run("crawl", config_id=config)).status is Status.SUCCEEDED

    item = await h.run("purge", config_id=config)

    assert item.status is Status.SUCCEEDED, item.error
    assert item.result == {"purged": 1, "files_deleted": 2, "kept_shared": 0, "refused": []}
    assert not any(f.exists() for f in gone_files)
    assert not gone_files[0].parent.exists()  # the emptied proxy folder went too
    assert all(f.exists() for f in kept_files)
    assert await h.value("SELECT count(*) FROM assets WHERE id = %s", gone) == 0
    assert await h.value("SELECT count(*) FROM proxy_files WHERE asset_id = %s", gone) == 0
    assert await h.value("SELECT count(*) FROM assets WHERE id = %s", kept) == 1
    # Nothing left to purge: a rerun does nothing.
    again = await h.run("purge", config_id=config)
    assert again.result == {"purged": 0, "files_deleted": 0, "kept_shared": 0, "refused": []}


async def test_purge_deletes_the_dead_asset_s_files_beside_a_live_asset_of_the_same_content(
    pool: AsyncConnectionPool[Any], tmp_path: Path
) -> None:
    """The same content back under another name: a new live asset in the same folder,
    with files of its own (their names carry the attempt that wrote them). The purge
    deletes the dead asset's files, and keeps the folder, which is not empty."""
    h = make_harness(pool, tmp_path)
    config, dead, live = await dead_then_back_under_another_name(h, tmp_path / "library")
    live_files, dead_files = await proxy_files_of(h, live), await proxy_files_of(h, dead)
    assert {f.parent for f in live_files} == {f.parent for f in dead_files}
    assert not set(live_files) & set(dead_files)

    item = await h.run("purge", config_id=config)

    assert item.result == {"purged": 1, "files_deleted": 2, "kept_shared": 0, "refused": []}
    assert not any(f.exists() for f in dead_files)
    assert all(f.exists() for f in live_files)
    assert await h.value("SELECT count(*) FROM assets WHERE id = %s", dead) == 0
    assert await h.value("SELECT count(*) FROM proxy_files WHERE asset_id = %s", live) == 3


async def test_purge_keeps_the_files_a_live_asset_with_the_same_content_uses(
    pool: AsyncConnectionPool[Any], tmp_path: Path
) -> None:
    """Legacy names, written before they carried their attempt, were one set of files
    for every asset of one content: a row of another asset still names them."""
    h = make_harness(pool, tmp_path)
    config, dead, live = await dead_then_back_under_another_name(h, tmp_path / "library")
    await share_proxy_files(h, dead, live)
    live_files = await proxy_files_of(h, live)
    assert set(live_files) == set(await proxy_files_of(h, dead))

    item = await h.run("purge", config_id=config)

    assert item.result == {"purged": 1, "files_deleted": 0, "kept_shared": 1, "refused": []}
    assert all(f.exists() for f in live_files)
    assert await h.value("SELECT count(*) FROM assets WHERE id = %s", dead) == 0
    assert await h.value("SELECT count(*) FROM proxy_files WHERE asset_id = %s", live) == 3


def tracking(
    handlers: dict[str, Handler], running: Counter[UUID], peak: list[int]
) -> dict[str, Handler]:
    """Handlers that record how many items of one config run at once."""

    def wrap(inner: Handler) -> Handler:
        async def handler(ctx: HandlerContext) -> dict[str, Any] | None:
            config = ctx.item.storage_config_id
            if config is None:
                return await inner(ctx)
            running[config] += 1
            peak[0] = max(peak[0], running[config])
            try:
                await asyncio.sleep(0.01)  # widen the window a second claim would use
                return await inner(ctx)
            finally:
                running[config] -= 1

        return handler

    return {kind: wrap(handler) for kind, handler in handlers.items()}


@pytest.mark.parametrize("purge_first", [True, False])
async def test_a_purge_and_a_crawl_of_one_config_on_two_workers_leave_the_new_asset_its_proxies(
    pool: AsyncConnectionPool[Any], tmp_path: Path, purge_first: bool
) -> None:
    running: Counter[UUID] = Counter()
    peak = [0]
    base = make_harness(pool, tmp_path)
    handlers = tracking(base.handlers, running, peak)
    h = make_harness(pool, tmp_path, clock=base.clock, handlers=handlers)
    root = tmp_path / "library"
    write(root, "2024/beach.jpg", jpeg(4))
    write(root, "2024/other.jpg", jpeg(5))
    config = await crawled(h, root)
    (root / "2024/beach.jpg").unlink()
    assert (await h.run("crawl", config_id=config)).status is Status.SUCCEEDED
    # The deleted photo's content comes back: the next crawl ingests it as new, into the
    # very proxy folder the purge is about to empty.
    write(root, "restored/beach.jpg", jpeg(4))
    for kind in ("purge", "crawl") if purge_first else ("crawl", "purge"):
        await h.store.enqueue(kind, config_id=config)
    ours = {r[0] for r in await h.rows("SELECT id FROM work_items WHERE status = 'queued'")}

    # Two Workers of one process: one store, one executor (it keeps nothing between runs).
    async def worker(name: str) -> None:
        while True:
            states = await h.rows(
                "SELECT status::text FROM work_items WHERE id = ANY(%s)", list(ours)
            )
            if all(s not in ("queued", "running") for (s,) in states):
                return
            item = await h.store.claim(name, KINDS, lease_seconds=LEASE)
            if item is None:
                await asyncio.sleep(0.002)
                continue
            await h.executor.run(item)

    await asyncio.wait_for(asyncio.gather(worker("w1"), worker("w2")), timeout=60)

    assert peak[0] == 1, "two items of one config ran at once"
    statuses = await h.rows(
        "SELECT kind, status::text FROM work_items WHERE id = ANY(%s)", list(ours)
    )
    assert {s for _, s in statuses} == {"succeeded"}
    new = await asset_at(h, "restored/beach.jpg")
    files = await proxy_files_of(h, new)
    assert len(files) == 2 and all(f.is_file() and f.stat().st_size > 0 for f in files)
    assert await h.value("SELECT count(*) FROM assets WHERE is_deleted") == 0
