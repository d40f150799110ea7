"""The scrub of the originals (ADR 0062) through the real store and executor on real
PostgreSQL: a flipped byte under a restored modification time is reported and nothing
is "fixed"; an edited file is the crawl's; the budget ends a run and the next goes on
from the oldest check; a lost attempt writes nothing; the gauge counts what is reported."""

from __future__ import annotations

import asyncio
import os
from datetime import timedelta
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest
import xxhash
from prometheus_client.parser import text_string_to_metric_families
from psycopg_pool import AsyncConnectionPool

from safelight.handlers import schedule_settings
from safelight.handlers import scrub as scrub_kind
from safelight.handlers.contract import Handler, HandlerContext
from safelight.handlers.scrub import bytes_per_run
from safelight.observe.metrics import Metrics
from safelight.testing.handlers import (
    KINDS,
    LEASE,
    Harness,
    files_under,
    jpeg,
    make_harness,
    touch_later,
    write,
)
from safelight.testing.rows import add_config
from safelight.views.scrub import changed_count, changed_line, changed_list
from safelight.work.maintenance import Scheduler
from safelight.work.model import Status, WorkItem
from safelight.work.outcome import Lost

pytestmark = pytest.mark.integration

HOUR = 3600.0
# A real guard for a scrub that would otherwise go round for ever on a bug; no tested
# deadline.
GUARD_SECONDS = 60
SIZE = 8000
"""Bytes of each photo where a test counts a budget in files."""


def flip_a_byte(path: Path) -> str:
    """Flip one bit in the middle of ``path`` and put its modification time back to the
    nanosecond, as bit rot (or a careful tamperer) leaves it; the hash the bytes have now."""
    st = path.stat()
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x01
    path.write_bytes(bytes(data))
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    after = path.stat()
    assert (after.st_size, after.st_mtime_ns) == (st.st_size, st.st_mtime_ns)
    return xxhash.xxh3_64(bytes(data)).hexdigest()


async def crawled(h: Harness, root: Path, names: list[str], *, size: int = 0) -> UUID:
    """A config of ``names``, distinct photos (of ``size`` bytes each, padded after the
    image's end, when given), crawled."""
    for seed, name in enumerate(names, start=1):
        data = jpeg(seed)
        write(root, name, data + bytes(max(0, size - len(data))))
    config = await h.add_config(root)
    assert (await h.run("crawl", config_id=config)).status is Status.SUCCEEDED
    await h.run("noop")  # the crawl's follow-ups run first: the queue is empty after
    return config


async def scrub(h: Harness, config: UUID) -> dict[str, Any]:
    item = await asyncio.wait_for(h.run("scrub", config_id=config), GUARD_SECONDS)
    assert item.status is Status.SUCCEEDED, item.error
    assert item.result is not None
    return item.result


async def by_path(h: Harness, columns: str) -> dict[str, tuple[Any, ...]]:
    rows = await h.rows(f"SELECT file_path, {columns} FROM assets ORDER BY file_path")
    return {r[0]: tuple(r[1:]) for r in rows}


@pytest.mark.parametrize("page", [1, scrub_kind.PAGE])
async def test_a_flipped_byte_under_a_restored_time_is_reported_and_nothing_is_fixed(
    pool: AsyncConnectionPool[Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, page: int
) -> None:
    # Pages of one asset: the files left unmarked (edited, gone) are passed once, not
    # read again and again.
    monkeypatch.setattr(scrub_kind, "PAGE", page)
    h = make_harness(pool, tmp_path)
    root = tmp_path / "library"
    config = await crawled(h, root, ["a.jpg", "b.jpg", "c.jpg", "d.jpg"])
    recorded = await by_path(h, "content_hash")
    proxies = {p: (h.proxy_root / p).read_bytes() for p in files_under(h.proxy_root)}
    found = flip_a_byte(root / "b.jpg")
    assert found != recorded["b.jpg"][0]
    # c.jpg is edited as an editor would: new bytes and a new time (the crawl's to read
    # again, not rot); d.jpg went (the crawl's too).
    write(root, "c.jpg", jpeg(99))
    touch_later(root / "c.jpg")
    (root / "d.jpg").unlink()
    h.clock.jump(60)

    result = await scrub(h, config)

    assert result["checked"] == 2 and result["changed"] == 1
    assert result["changed_paths"] == ["b.jpg"]
    assert (result["edited"], result["missing"], result["unreadable"]) == (1, 1, 0)
    assert result["budget_spent"] is False
    sizes = await by_path(h, "size_bytes")
    assert result["bytes_read"] == sizes["a.jpg"][0] + sizes["b.jpg"][0]
    now = h.clock.now()
    assert await by_path(
        h, "content_hash, content_checked_at, content_mismatch_at, content_found_hash"
    ) == {
        "a.jpg": (recorded["a.jpg"][0], now, None, None),
        # Reported, with the hash found; the recorded hash stays.
        "b.jpg": (recorded["b.jpg"][0], now, now, found),
        # Neither read as rot nor marked checked: the edited file and the one that went.
        "c.jpg": (recorded["c.jpg"][0], None, None, None),
        "d.jpg": (recorded["d.jpg"][0], None, None, None),
    }
    # Not one proxy was touched.
    assert {p: (h.proxy_root / p).read_bytes() for p in files_under(h.proxy_root)} == proxies
    assert await changed_count(pool, owner=None) == 1
    assert await changed_count(pool, owner="bob") == 0
    (listed,) = await changed_list(pool, owner=None)
    assert (listed["file_path"], listed["content_found_hash"]) == ("b.jpg", found)
    assert changed_line(1) == (
        "1 original changed without its time changing: run `safelight assets --changed`"
    )

    # Found again at the next scrub, the report keeps the time it was first found.
    first = now
    h.clock.jump(HOUR)
    again = await scrub(h, config)
    assert again["changed_paths"] == ["b.jpg"]
    assert (await by_path(h, "content_mismatch_at"))["b.jpg"] == (first,)
    # And once its bytes are the recorded ones again, it is no longer reported.
    flip_a_byte(root / "b.jpg")
    h.clock.jump(HOUR)
    assert (await scrub(h, config))["changed"] == 0
    assert (await by_path(h, "content_mismatch_at, content_found_hash"))["b.jpg"] == (None, None)


@pytest.mark.parametrize("page", [1, 2, scrub_kind.PAGE])
async def test_the_budget_ends_a_run_and_the_next_goes_on_from_the_oldest_check(
    pool: AsyncConnectionPool[Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, page: int
) -> None:
    # Pages of one and two assets cross from page to page, and from the never checked
    # to the checked, where the default's one page holds them all.
    monkeypatch.setattr(scrub_kind, "PAGE", page)
    base = make_harness(pool, tmp_path)
    root = tmp_path / "library"
    config = await crawled(base, root, ["a.jpg", "b.jpg", "c.jpg", "d.jpg"], size=SIZE)
    sizes = {p: s for p, (s,) in (await by_path(base, "size_bytes")).items()}
    assert set(sizes.values()) == {SIZE}
    # An order to follow: b never checked, then a, d and c by the age of their check.
    start = base.clock.now()
    for name, days in (("a.jpg", 3), ("d.jpg", 2), ("c.jpg", 1)):
        async with pool.connection() as conn:
            await conn.execute(
                "UPDATE assets SET content_checked_at = %s WHERE file_path = %s",
                (start - timedelta(days=days), name),
            )
    # A budget of two files, short of a third by a byte.
    budget = 3 * SIZE - 1
    h = make_harness(pool, tmp_path, clock=base.clock, scrub_bytes_per_hour=budget)
    assert bytes_per_run(h.settings) == budget

    first = await scrub(h, config)
    assert (first["checked"], first["budget_spent"]) == (2, True)
    assert first["bytes_read"] == sizes["b.jpg"] + sizes["a.jpg"] <= budget
    t1 = h.clock.now()
    checked = await by_path(h, "content_checked_at")
    assert [checked[p][0] == t1 for p in ("a.jpg", "b.jpg", "c.jpg", "d.jpg")] == [
        True,
        True,
        False,
        False,
    ]

    # An hour on (the scheduler's interval, on the injected clock): d, then c.
    h.clock.jump(HOUR)
    second = await scrub(h, config)
    t2 = h.clock.now()
    assert second["checked"] == 2 and second["bytes_read"] <= budget
    assert second["budget_spent"] is True  # a, checked an hour ago, did not fit
    checked = await by_path(h, "content_checked_at")
    assert (checked["d.jpg"][0], checked["c.jpg"][0], checked["a.jpg"][0]) == (t2, t2, t1)
    # Read in all over the two hours: no more than the hourly budget for each hour.
    assert first["bytes_read"] + second["bytes_read"] <= 2 * budget


async def test_an_original_larger_than_a_runs_budget_is_read_alone(
    pool: AsyncConnectionPool[Any], tmp_path: Path
) -> None:
    base = make_harness(pool, tmp_path)
    root = tmp_path / "library"
    config = await crawled(base, root, ["a.jpg", "b.jpg"])
    h = make_harness(pool, tmp_path, clock=base.clock, scrub_bytes_per_hour=10)
    first = await scrub(h, config)
    assert (first["checked"], first["budget_spent"]) == (1, True)
    h.clock.jump(HOUR)
    second = await scrub(h, config)
    assert (second["checked"], second["budget_spent"]) == (1, True)
    assert all(c is not None for (c,) in (await by_path(h, "content_checked_at")).values())


def gated(
    handlers: dict[str, Handler], kind: str, gate: asyncio.Event, parked: asyncio.Event
) -> dict[str, Handler]:
    inner = handlers[kind]

    async def handler(ctx: HandlerContext) -> dict[str, Any] | None:
        parked.set()
        await gate.wait()
        return await inner(ctx)

    return {**handlers, kind: handler}


async def test_a_scrub_that_lost_its_item_writes_nothing(
    pool: AsyncConnectionPool[Any], tmp_path: Path
) -> None:
    base = make_harness(pool, tmp_path)
    root = tmp_path / "library"
    config = await crawled(base, root, ["a.jpg", "b.jpg"])
    flip_a_byte(root / "a.jpg")
    gate, parked = asyncio.Event(), asyncio.Event()
    h = make_harness(
        pool, tmp_path, clock=base.clock, handlers=gated(base.handlers, "scrub", gate, parked)
    )
    item_id = await h.store.enqueue("scrub", config_id=config)
    claimed = await h.store.claim("w1", KINDS, lease_seconds=LEASE)
    assert claimed is not None and claimed.id == item_id
    run = asyncio.create_task(h.run_claimed(claimed))
    await parked.wait()
    # Behind the attempt's back its lease runs out and another Worker takes the item.
    async with pool.connection() as conn:
        await conn.execute(
            "UPDATE work_items SET lease_expires_at = %s WHERE id = %s",
            (h.clock.now() - timedelta(seconds=1), item_id),
        )
    assert (await h.store.recover_expired_leases()).requeued == 1
    assert await h.store.claim("w2", KINDS, lease_seconds=LEASE) is not None
    gate.set()
    result = await asyncio.wait_for(run, timeout=30)

    assert isinstance(result.outcome, Lost)
    assert (
        await h.rows(
            "SELECT file_path FROM assets WHERE content_checked_at IS NOT NULL"
            " OR content_mismatch_at IS NOT NULL"
        )
        == []
    )


async def test_the_scheduler_queues_a_scrub_per_active_config_each_interval(
    pool: AsyncConnectionPool[Any], tmp_path: Path
) -> None:
    h = make_harness(pool, tmp_path)
    root = tmp_path / "library"
    config = await crawled(h, root, ["a.jpg"])
    resting = await add_config(pool, h.clock, "bob", str(tmp_path / "resting"), active=False)
    flip_a_byte(root / "a.jpg")
    scheduler = Scheduler(h.store, schedule_settings(h.settings))

    async def scrubs_queued() -> list[WorkItem]:
        items = [await h.store.get(i) for i in await scheduler.run_once()]
        return [i for i in items if i is not None and i.kind == "scrub"]

    (queued,) = await scrubs_queued()
    assert queued.storage_config_id == config != resting
    ran = await h.run_queued(queued.id)
    assert ran.result is not None and ran.result["changed_paths"] == ["a.jpg"]
    h.clock.jump(h.settings.scrub_interval_seconds - 1)
    assert await scrubs_queued() == []
    h.clock.jump(1)
    assert [i.storage_config_id for i in await scrubs_queued()] == [config]


async def test_the_gauge_counts_the_originals_reported_changed(
    pool: AsyncConnectionPool[Any], tmp_path: Path
) -> None:
    h = make_harness(pool, tmp_path)
    root = tmp_path / "library"
    config = await crawled(h, root, ["a.jpg", "b.jpg", "c.jpg"])
    flip_a_byte(root / "a.jpg")
    flip_a_byte(root / "c.jpg")
    metrics = Metrics(KINDS, listening=lambda: True)

    async def gauge() -> float:
        assert await metrics.refresh(pool, h.clock, 30)
        text = metrics.render().decode()
        (value,) = (
            s.value
            for family in text_string_to_metric_families(text)
            for s in family.samples
            if s.name == "safelight_originals_changed"
        )
        return value

    assert await gauge() == 0
    assert (await scrub(h, config))["changed"] == 2
    assert await gauge() == 2
    # A changed original that went (the crawl soft-deletes it) is no longer counted.
    (root / "a.jpg").unlink()
    assert (await h.run("crawl", config_id=config)).status is Status.SUCCEEDED
    assert await gauge() == 1
