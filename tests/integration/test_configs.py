"""Storage configs on PostgreSQL: idempotent add by (owner, resolved root), find, disable."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any
from uuid import UUID, uuid4

import pytest
from psycopg_pool import AsyncConnectionPool

from safelight.library.catalogue.configs import ConfigError, StorageConfigs, resolve_root
from safelight.settings import Settings
from safelight.testing.fakeclock import FakeClock
from safelight.work.errors import InvalidWorkItem
from safelight.work.kinds import KindSpec, Scope
from safelight.work.store import WorkStore

pytestmark = pytest.mark.integration


@pytest.fixture
def configs(pool: AsyncConnectionPool[Any]) -> StorageConfigs:
    return StorageConfigs(pool, FakeClock())


async def test_add_stores_the_resolved_root_and_a_second_add_returns_the_same_id(
    configs: StorageConfigs, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    photos = tmp_path / "photos"
    photos.mkdir()
    link = tmp_path / "link"
    link.symlink_to(photos)
    monkeypatch.chdir(tmp_path)

    first = await configs.add("alice", "photos")
    again = await configs.add("alice", photos)
    through_link = await configs.add("alice", link / ".." / "photos")
    via_symlink = await configs.add("alice", link)

    assert first.created and first.config.root_path == photos.resolve()
    assert first.config.active and first.config.owner == "alice"
    for other in (again, through_link, via_symlink):
        assert not other.created and not other.reactivated
        assert other.config.id == first.config.id
    assert len(await configs.list_configs()) == 1


async def test_the_same_folder_for_two_owners_is_two_configs(
    configs: StorageConfigs, tmp_path: Path
) -> None:
    a = await configs.add("alice", tmp_path)
    b = await configs.add("bob", tmp_path)
    assert a.config.id != b.config.id
    assert sorted(c.owner for c in await configs.find_by_root(tmp_path)) == ["alice", "bob"]
    assert [c.id for c in await configs.find_by_root(tmp_path, owner="bob")] == [b.config.id]
    assert await configs.find_by_root(tmp_path / "missing") == []
    assert [c.owner for c in await configs.list_configs(owner="alice")] == ["alice"]


async def test_concurrent_adds_of_one_folder_make_one_config(
    configs: StorageConfigs, tmp_path: Path
) -> None:
    results = await asyncio.gather(*(configs.add("alice", tmp_path) for _ in range(8)))
    assert len({r.config.id for r in results}) == 1
    assert sum(r.created for r in results) == 1


@pytest.mark.parametrize("kind", ["missing", "file"])
async def test_add_refuses_a_path_that_is_not_a_folder(
    configs: StorageConfigs, tmp_path: Path, kind: str
) -> None:
    target = tmp_path / kind
    if kind == "file":
        target.write_bytes(b"not a folder")
    with pytest.raises(
        ConfigError, match="does not exist" if kind == "missing" else "not a folder"
    ):
        await configs.add("alice", target)
    assert await configs.list_configs() == []


async def test_add_refuses_a_blank_owner(configs: StorageConfigs, tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="owner"):
        await configs.add("  ", tmp_path)


@pytest.mark.parametrize(
    ("owner", "problem"),
    [
        ("x" * 65, "at most 64 characters"),
        ("alice\x1b[2J", "control or format characters (\\x1b)"),
        ("\u202eecila", "control or format characters (\\u202e)"),
        ("alice ", "must not begin or end with a space"),
    ],
)
async def test_add_refuses_an_owner_name_that_is_not_short_plain_and_visible(
    configs: StorageConfigs, tmp_path: Path, owner: str, problem: str
) -> None:
    """The layer every config insert passes, whatever front end called it."""
    with pytest.raises(ConfigError) as refused:
        await configs.add(owner, tmp_path)
    assert problem in str(refused.value)
    assert await configs.list_configs() == []


async def test_disable_stops_new_work_and_adding_again_reenables(
    pool: AsyncConnectionPool[Any], configs: StorageConfigs, tmp_path: Path
) -> None:
    store = WorkStore(
        pool, FakeClock(), [KindSpec("crawl", Scope.REQUIRED)], max_stalls=Settings().max_stalls
    )
    added = await configs.add("alice", tmp_path)
    disabled, was_active = await configs.disable(added.config.id)
    assert was_active and not disabled.active
    _, was_active_again = await configs.disable(added.config.id)
    assert not was_active_again
    assert [c.id for c in await configs.list_configs(active_only=True)] == []
    with pytest.raises(InvalidWorkItem, match="disabled"):
        await store.enqueue("crawl", config_id=added.config.id)

    readded = await configs.add("alice", tmp_path)
    assert readded.config.id == added.config.id
    assert not readded.created and readded.reactivated and readded.config.active
    assert await store.enqueue("crawl", config_id=added.config.id) > 0


async def test_disable_of_an_unknown_config_is_an_error(configs: StorageConfigs) -> None:
    with pytest.raises(ConfigError, match="no storage config"):
        await configs.disable(uuid4())


async def test_resolve_id_takes_a_full_id_or_a_unique_prefix(
    configs: StorageConfigs, tmp_path: Path
) -> None:
    added = (await configs.add("alice", tmp_path)).config
    full = str(added.id)
    assert (await configs.resolve_id(full)).id == added.id
    assert (await configs.resolve_id(full[:8].upper())).id == added.id
    with pytest.raises(ConfigError, match="at least"):
        await configs.resolve_id(full[:3])
    with pytest.raises(ConfigError, match="is not a storage config id"):
        await configs.resolve_id("photos")
    with pytest.raises(ConfigError, match="no storage config"):
        await configs.resolve_id(str(UUID(int=0)))
    missing_prefix = "0000" if not full.startswith("0000") else "ffff"
    with pytest.raises(ConfigError, match="starts with"):
        await configs.resolve_id(missing_prefix)
    assert await configs.get(UUID(int=1)) is None


def test_resolve_root_expands_the_home_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    (tmp_path / "pics").mkdir()
    assert resolve_root("~/pics") == (tmp_path / "pics").resolve()
