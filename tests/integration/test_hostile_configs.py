"""Every registered folder, in any state and of any owner, against safelight's own: a
proxy root set to (or into) a *disabled* config's library once had a Worker write its
marker there and the sweep delete an original whose name fits the proxy layout. And
folders nested in registered ones, which would have their photos indexed twice."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any
from uuid import UUID, uuid4

import psycopg
import pytest
from psycopg_pool import AsyncConnectionPool

from safelight.app import WorkerOptions, run_workers
from safelight.library.catalogue.configs import (
    ADD_LOCK_KEY,
    QUERIES,
    ConfigError,
    NestedConfig,
    StorageConfigs,
)
from safelight.library.files.roots import RootOverlap, own_folders
from safelight.library.proxystore.layout import PROXY_ROOT_MARKER, parse_proxy_name, proxy_folder
from safelight.library.proxystore.sweep import scan_proxy_root
from safelight.testing.fakeclock import FakeClock
from safelight.testing.handlers import (
    Harness,
    database_of,
    files_under,
    jpeg,
    later,
    make_harness,
    write,
)
from safelight.testing.rows import add_config
from safelight.work.model import Status

pytestmark = pytest.mark.integration

# An original whose path, seen from the proxy root, is a proxy's: a copy of another
# safelight's proxies kept among the photos, or a folder a user named so.
LOOKALIKE = f"{proxy_folder(UUID(int=7), '0123456789abcdef')}/thumbnail.jpg"


def library_with_lookalike(library: Path, proxy_root: Path) -> dict[str, bytes]:
    write(library, "2019/IMG_1.jpg", jpeg(11))
    write(proxy_root, LOOKALIKE, jpeg(12))
    return {p: (library / p).read_bytes() for p in files_under(library)}


async def disabled_config(h: Harness, root: Path, owner: str = "alice") -> UUID:
    config = await h.add_config(root, owner)
    await h.rows("UPDATE storage_configs SET active = false WHERE id = %s RETURNING id", config)
    return config


@pytest.mark.parametrize("where", ["the library", "inside the library"])
async def test_a_disabled_config_at_or_around_the_proxy_root_stops_every_write_and_delete(
    pool: AsyncConnectionPool[Any], tmp_path: Path, where: str
) -> None:
    library = tmp_path / "library"
    proxy_root = library if where == "the library" else library / "export"
    before = library_with_lookalike(library, proxy_root)
    # The sweep would take the look-alike for an orphan two hours on: what is at stake.
    two_hours_on = later(2)
    scan = scan_proxy_root(proxy_root, two_hours_on.now().timestamp())
    assert scan.old_files == [LOOKALIKE] and parse_proxy_name(LOOKALIKE) is not None
    h = make_harness(pool, tmp_path, proxy_root=proxy_root)
    disabled = await disabled_config(h, library, owner="alice")
    (tmp_path / "other").mkdir()
    other = await h.add_config(tmp_path / "other", owner="bob")
    sweep_id = await h.store.enqueue("proxy_sweep")

    # A per-user Worker of another owner: alice's disabled folder counts all the same.
    with pytest.raises(RootOverlap) as refused:
        await run_workers(
            h.settings,
            WorkerOptions(user="bob", until_idle=True),
            database=database_of(pool),
            install_signal_handlers=False,
            clock=h.clock,
        )
    queued = await h.store.get(sweep_id)  # nothing claimed
    sweep = await make_harness(pool, tmp_path, proxy_root=proxy_root, clock=two_hours_on).run(
        "proxy_sweep"
    )
    purge = await h.run("purge", config_id=other)
    deletion = await h.run(
        "proxy_deletion", config_id=other, payload={"paths": [f"{other}/00/x/thumbnail.jpg"]}
    )

    message = str(refused.value)
    assert f"storage config {disabled} of alice ({library}, disabled)" in message
    assert str(proxy_root) in message and "SAFELIGHT_PROXY_ROOT" in message
    assert queued is not None and queued.status is Status.QUEUED
    for item in (sweep, purge, deletion):
        assert item.status is Status.FAILED and item.error is not None
        assert "RootOverlap" in item.error and f"storage config {disabled}" in item.error
    assert not (proxy_root / PROXY_ROOT_MARKER).exists()
    assert {p: (library / p).read_bytes() for p in files_under(library)} == before


async def test_a_crawl_of_another_config_writes_no_marker_while_a_disabled_one_overlaps(
    pool: AsyncConnectionPool[Any], tmp_path: Path
) -> None:
    """The crawl checks its own folder first, then every other before the marker."""
    library = tmp_path / "library"
    before = library_with_lookalike(library, library)
    h = make_harness(pool, tmp_path, proxy_root=library)
    await disabled_config(h, library)
    write(tmp_path / "other", "a.jpg", jpeg(13))
    other = await h.add_config(tmp_path / "other", owner="bob")

    crawl = await h.run("crawl", config_id=other)

    assert crawl.status is Status.FAILED and crawl.error is not None
    assert "RootOverlap" in crawl.error and "disabled" in crawl.error
    assert {p: (library / p).read_bytes() for p in files_under(library)} == before
    assert await h.value("SELECT count(*) FROM assets") == 0


@pytest.mark.parametrize("where", ["contains", "lies in"])
async def test_config_enable_refuses_a_folder_that_now_overlaps_the_proxy_root(
    pool: AsyncConnectionPool[Any], tmp_path: Path, where: str
) -> None:
    library = tmp_path / "px" / "library" if where == "lies in" else tmp_path / "library"
    library.mkdir(parents=True)
    configs = StorageConfigs(pool, FakeClock())
    added = (await configs.add("alice", library)).config
    await configs.disable(added.id)
    proxies = library / ".proxies" if where == "contains" else tmp_path / "px"
    moved = StorageConfigs(pool, FakeClock(), own_folders=own_folders(tmp_path / "h", proxies))

    with pytest.raises(RootOverlap, match="SAFELIGHT_PROXY_ROOT") as refused:
        await moved.enable(added.id)

    assert str(library) in str(refused.value) and str(proxies) in str(refused.value)
    found = await configs.get(added.id)
    assert found is not None and not found.active


async def test_config_enable_serves_a_disabled_config_again(
    pool: AsyncConnectionPool[Any], tmp_path: Path
) -> None:
    (tmp_path / "library").mkdir()
    own = own_folders(tmp_path / "h", tmp_path / "px")
    configs = StorageConfigs(pool, FakeClock(), own_folders=own)
    added = (await configs.add("alice", tmp_path / "library")).config
    await configs.disable(added.id)

    enabled, was_active = await configs.enable(added.id)
    again, still = await configs.enable(added.id)

    assert enabled.active and not was_active
    assert again.active and still
    with pytest.raises(ConfigError, match="no storage config"):
        await configs.enable(uuid4())


# --- nested configs ------------------------------------------------------------------


@pytest.mark.parametrize("direction", ["inside", "around"])
async def test_a_folder_nested_in_a_registered_one_is_refused_with_both_paths(
    pool: AsyncConnectionPool[Any], tmp_path: Path, direction: str
) -> None:
    """Whoever owns the registered folder, and whether it is active or disabled."""
    configs = StorageConfigs(pool, FakeClock())
    for owner, active in [("alice", True), ("alice", False), ("bob", True), ("bob", False)]:
        outer = tmp_path / f"{owner}-{active}" / "photos"
        inner = outer / "2019" / "summer"
        inner.mkdir(parents=True)
        registered, new = (outer, inner) if direction == "inside" else (inner, outer)
        first = (await configs.add(owner, registered)).config
        if not active:
            await configs.disable(first.id)

        with pytest.raises(NestedConfig) as refused:
            await configs.add("alice", new)

        named = f"storage config {first.id} ({owner}{'' if active else ', disabled'})"
        assert str(refused.value) == (
            f"{inner} lies inside {outer}, the folder of {named}: its photos would be "
            f"indexed twice. Use that config (safelight run {outer} --user {owner}), or "
            "choose a folder outside it"
            if direction == "inside"
            else f"{outer} contains {inner}, the folder of {named}: its photos would be "
            "indexed twice. Register the folders beside it instead, each on its own, or "
            "choose a folder that does not contain it"
        )
        assert await configs.find_by_root(new) == []


async def test_folders_beside_each_other_and_the_same_folder_are_not_nested(
    pool: AsyncConnectionPool[Any], tmp_path: Path
) -> None:
    for name in ("photos", "photos-2019", "photos2", "other/photos"):
        (tmp_path / name).mkdir(parents=True)
    configs = StorageConfigs(pool, FakeClock())
    first = await configs.add("alice", tmp_path / "photos")

    beside = [await configs.add("alice", tmp_path / n) for n in ("photos-2019", "photos2")]
    elsewhere = await configs.add("alice", tmp_path / "other" / "photos")
    same = await configs.add("alice", tmp_path / "photos")
    theirs = await configs.add("bob", tmp_path / "photos")

    assert all(a.created for a in (*beside, elsewhere, theirs))
    assert not same.created and same.config.id == first.config.id
    assert len(await configs.list_configs()) == 5


async def test_two_adds_of_nested_folders_at_once_make_one_config(
    pool: AsyncConnectionPool[Any], tmp_path: Path, database_url: str
) -> None:
    """One add holds its transaction open with its row written (under the adds' lock),
    the other starts then: it waits for the first to commit, and sees its row."""
    outer = tmp_path / "photos"
    (outer / "2019").mkdir(parents=True)
    configs = StorageConfigs(pool, FakeClock())
    async with await psycopg.AsyncConnection.connect(database_url) as held:
        async with held.transaction():
            await held.execute(QUERIES["configs_lock_for_add"], {"key": ADD_LOCK_KEY})
            await add_config(held, FakeClock(), "bob", str(outer / "2019"))
            second = asyncio.create_task(configs.add("alice", outer))
            await _until_an_add_waits(held)
        with pytest.raises(NestedConfig, match=f"{outer} contains {outer / '2019'}"):
            await second
    assert [c.owner for c in await configs.list_configs()] == ["bob"]


async def _until_an_add_waits(conn: psycopg.AsyncConnection[Any]) -> None:
    """Until a session of this database waits on an advisory lock (the server's answer,
    polled: not a wait for a deadline)."""
    for _ in range(10_000):
        cur = await conn.execute(
            "SELECT count(*) FROM pg_locks l JOIN pg_database d ON d.oid = l.database"
            " WHERE l.locktype = 'advisory' AND NOT l.granted"
            " AND d.datname = current_database()"
        )
        row = await cur.fetchone()
        if row is not None and row[0] > 0:
            return
        await asyncio.sleep(0.005)
    raise AssertionError("the second add never waited on the adds' lock")
