"""Burst detection and Live Photo pairing on real PostgreSQL, through the executor."""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from psycopg_pool import AsyncConnectionPool

from safelight.testing.handlers import Harness, copy_library, jpeg, make_harness, write
from safelight.testing.samplegen import Manifest
from safelight.work.model import Status

pytestmark = pytest.mark.integration


@pytest.fixture
def sample(generated_library: Manifest) -> Manifest:
    """The session's generated library; the tests crawl copies of it."""
    return generated_library


async def bursts_of(h: Harness, config: Any) -> dict[str, tuple[frozenset[str], str | None]]:
    """``{burst key: (member paths, primary path)}``."""
    rows = await h.rows(
        "SELECT b.burst_key, a.file_path, p.file_path FROM bursts b"
        " JOIN assets a ON a.burst_id = b.id LEFT JOIN assets p ON p.id = b.primary_asset_id"
        " WHERE b.storage_config_id = %s",
        config,
    )
    members: dict[str, set[str]] = {}
    primary: dict[str, str | None] = {}
    for key, path, primary_path in rows:
        members.setdefault(key, set()).add(path)
        primary[key] = primary_path
    return {k: (frozenset(v), primary[k]) for k, v in members.items()}


async def test_bursts_and_live_photos_of_a_generated_library_and_a_rerun_changes_nothing(
    pool: AsyncConnectionPool[Any], tmp_path: Path, sample: Manifest
) -> None:
    h = make_harness(pool, tmp_path)
    config = await h.add_config(copy_library(sample.root, tmp_path / "library"))
    crawl = await h.run("crawl", config_id=config)
    assert crawl.status is Status.SUCCEEDED, crawl.error

    # The crawl's own follow-up runs first, then this one: a rerun on the same library.
    item = await h.run("burst_detection", config_id=config)

    assert item.status is Status.SUCCEEDED, item.error
    expected = {frozenset(b.paths) for b in sample.bursts}
    assert item.result == {
        "bursts": len(sample.bursts),
        "burst_assets": sum(len(b.paths) for b in sample.bursts),
        "live_photos": len(sample.live_pairs),
        "stacks": 0,
        "copies": 0,
        "picture_hashes": 0,
        "similar_groups": 0,
        "similar_assets": 0,
    }
    found = await bursts_of(h, config)
    assert {members for members, _ in found.values()} == expected
    for members, primary in found.values():
        assert primary in members
    pairs = await h.rows(
        "SELECT i.file_path, v.file_path FROM assets i JOIN assets v ON v.id = i.paired_asset_id"
    )
    assert set(pairs) == {(p.photo, p.video) for p in sample.live_pairs}

    first_runs = [r for r in h.ran if r.kind == "burst_detection"]
    assert len(first_runs) == 2  # the follow-up and ours: same results both times
    results = [await h.store.get(r.id) for r in first_runs]
    assert results[0] is not None and results[1] is not None
    assert results[0].result == results[1].result
    ids_before = await h.rows("SELECT id, burst_key, primary_asset_id FROM bursts ORDER BY id")
    again = await h.run("burst_detection", config_id=config)
    assert again.result == item.result
    assert (
        await h.rows("SELECT id, burst_key, primary_asset_id FROM bursts ORDER BY id") == ids_before
    )
    assert await bursts_of(h, config) == found


async def test_the_sharpest_shot_is_primary_and_assets_leaving_a_burst_are_released(
    pool: AsyncConnectionPool[Any], tmp_path: Path
) -> None:
    h = make_harness(pool, tmp_path)
    root = tmp_path / "library"
    t0 = datetime(2023, 8, 1, 17, 30, 0)
    for i, blur in enumerate((True, False, True)):
        write(
            root,
            f"run/shot_{i}.jpg",
            jpeg(
                10 + i,
                size=(96, 64),
                make="FUJIFILM",
                model="X-T4",
                taken=t0 + timedelta(seconds=i),
                blur=blur,
            ),
        )
    write(
        root,
        "run/later.jpg",
        jpeg(20, make="FUJIFILM", model="X-T4", taken=t0 + timedelta(minutes=5)),
    )
    config = await h.add_config(root)
    assert (await h.run("crawl", config_id=config)).status is Status.SUCCEEDED

    item = await h.run("burst_detection", config_id=config)

    assert item.result == {
        "bursts": 1,
        "burst_assets": 3,
        "live_photos": 0,
        "stacks": 0,
        "copies": 0,
        "picture_hashes": 0,
        "similar_groups": 0,
        "similar_assets": 0,
    }
    [(members, primary)] = (await bursts_of(h, config)).values()
    assert members == {"run/shot_0.jpg", "run/shot_1.jpg", "run/shot_2.jpg"}
    assert primary == "run/shot_1.jpg"

    # Two shots go: one is left, which is no burst; the burst row goes too.
    (root / "run/shot_1.jpg").unlink()
    (root / "run/shot_2.jpg").unlink()
    assert (await h.run("crawl", config_id=config)).status is Status.SUCCEEDED
    after = await h.run("burst_detection", config_id=config)
    assert after.result == {
        "bursts": 0,
        "burst_assets": 0,
        "live_photos": 0,
        "stacks": 0,
        "copies": 0,
        "picture_hashes": 0,
        "similar_groups": 0,
        "similar_assets": 0,
    }
    assert await h.value("SELECT count(*) FROM bursts") == 0
    assert await h.value("SELECT count(*) FROM assets WHERE burst_id IS NOT NULL") == 0
