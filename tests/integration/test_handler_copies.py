"""Files of one capture are stacked as what they are, and bursts are distinct frames
(ADR 0056): a built folder crawled on real PostgreSQL, then burst detection, twice."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from psycopg_pool import AsyncConnectionPool

from safelight.testing.captures import capture_library
from safelight.testing.handlers import Harness, make_harness
from safelight.work.model import Status

pytestmark = pytest.mark.integration


async def stacks_of(h: Harness) -> dict[str, tuple[str, str]]:
    """``{stacked path: (primary path, stack kind)}``."""
    rows = await h.rows(
        "SELECT a.file_path, p.file_path, a.stack_kind FROM assets a"
        " JOIN assets p ON p.id = a.stack_primary_id WHERE NOT a.is_deleted"
    )
    return {path: (primary, kind) for path, primary, kind in rows}


async def burst_members(h: Harness) -> set[frozenset[str]]:
    rows = await h.rows("SELECT b.id, a.file_path FROM bursts b JOIN assets a ON a.burst_id = b.id")
    members: dict[int, set[str]] = {}
    for burst, path in rows:
        members.setdefault(burst, set()).add(path)
    return {frozenset(m) for m in members.values()}


async def test_copies_are_stacked_bursts_keep_distinct_frames_and_a_rerun_is_stable(
    pool: AsyncConnectionPool[Any], tmp_path: Path
) -> None:
    h = make_harness(pool, tmp_path)
    library = capture_library(tmp_path / "library", datetime(2024, 5, 1, 10, 0, 0))
    config = await h.add_config(library.root)
    assert (await h.run("crawl", config_id=config)).status is Status.SUCCEEDED

    item = await h.run("burst_detection", config_id=config)

    assert item.status is Status.SUCCEEDED, item.error
    assert item.result == {
        "bursts": 1,
        "burst_assets": 3,
        "live_photos": 0,
        "stacks": 0,
        "copies": len(library.stacks),
        "picture_hashes": 0,
        "similar_groups": 0,
        "similar_assets": 0,
    }
    assert await burst_members(h) == {frozenset(library.burst)}
    assert await stacks_of(h) == library.stacks
    # No stacked file is in a burst, and no stack points at a stacked asset.
    assert (
        await h.value(
            "SELECT count(*) FROM assets"
            " WHERE stack_primary_id IS NOT NULL AND burst_id IS NOT NULL"
        )
        == 0
    )
    assert (
        await h.value(
            "SELECT count(*) FROM assets a JOIN assets p ON p.id = a.stack_primary_id"
            " WHERE p.stack_primary_id IS NOT NULL"
        )
        == 0
    )

    before = await h.rows(
        "SELECT id, burst_id, stack_primary_id, stack_kind FROM assets ORDER BY id"
    )
    bursts_before = await h.rows("SELECT id, burst_key, primary_asset_id FROM bursts ORDER BY id")
    again = await h.run("burst_detection", config_id=config)
    assert again.result == item.result
    assert (
        await h.rows("SELECT id, burst_id, stack_primary_id, stack_kind FROM assets ORDER BY id")
        == before
    )
    assert (
        await h.rows("SELECT id, burst_key, primary_asset_id FROM bursts ORDER BY id")
        == bursts_before
    )


async def test_a_copy_that_goes_leaves_its_original_unstacked(
    pool: AsyncConnectionPool[Any], tmp_path: Path
) -> None:
    h = make_harness(pool, tmp_path)
    library = capture_library(tmp_path / "library", datetime(2024, 5, 1, 10, 0, 0))
    config = await h.add_config(library.root)
    assert (await h.run("crawl", config_id=config)).status is Status.SUCCEEDED
    assert (await h.run("burst_detection", config_id=config)).status is Status.SUCCEEDED

    (library.root / "export/IMG_0200.JPG").unlink()
    assert (await h.run("crawl", config_id=config)).status is Status.SUCCEEDED
    await h.run("burst_detection", config_id=config)

    stacks = await stacks_of(h)
    # The HEIC, a camera's own format, is the capture's face now; the WebP its format.
    assert stacks["export/IMG_0200.webp"] == ("export/IMG_0200.HEIC", "format")
    assert "export/IMG_0200.HEIC" not in stacks
    assert (
        await h.value(
            "SELECT count(*) FROM assets WHERE stack_kind IS NOT NULL AND stack_primary_id IS NULL"
        )
        == 0
    )
