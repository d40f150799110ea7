"""The guards before anything is written under the proxy root (``handlers.guards``), on
real PostgreSQL and real folders: the overlap checks, a root made private, one made
open by an earlier release tightened with one line, and the tightening at a command's
start only of a root this database claimed (ADR 0043)."""

from __future__ import annotations

import grp
import logging
import os
import stat
from pathlib import Path
from typing import Any
from uuid import uuid4

import pytest
from psycopg_pool import AsyncConnectionPool

from safelight.handlers.contract import HandlerFailed
from safelight.handlers.guards import (
    active_config,
    check_config_root,
    check_proxy_root,
    tighten_proxy_root_if_ours,
)
from safelight.library.catalogue.database import DatabaseIdentity, database_identity
from safelight.library.files.roots import RootOverlap
from safelight.library.proxystore.layout import PROXY_ROOT_MARKER
from safelight.library.proxystore.proxyroot import claim_proxy_root, read_marker
from safelight.testing.fakeclock import FakeClock
from safelight.testing.handlers import make_harness
from safelight.testing.rows import add_config

pytestmark = pytest.mark.integration

GROUP = grp.getgrgid(os.getegid())
LOGGER = "safelight.handlers.guards"


def mode(path: Path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


def other_group() -> int:
    """A group this process may give files to, other than its own (any, as root)."""
    if os.geteuid() == 0:
        return next(g.gr_gid for g in grp.getgrall() if g.gr_gid != GROUP.gr_gid)
    others = [gid for gid in os.getgroups() if gid != GROUP.gr_gid]
    if not others:
        pytest.skip("needs a second group this user is in")
    return others[0]


def lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == LOGGER]


async def identity_of(pool: AsyncConnectionPool[Any]) -> DatabaseIdentity:
    async with pool.connection() as conn:
        return await database_identity(conn)


async def test_a_root_it_makes_is_private_and_so_is_the_home_made_on_the_way(
    pool: AsyncConnectionPool[Any], tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """In a folder whose setgid bit would give what is made another group, the home and
    the proxy root are made with the settings' modes and the read group's; nothing was
    open, so nothing is said."""
    box = tmp_path / "box"
    box.mkdir()
    os.chown(box, -1, other_group())
    box.chmod(0o2755)
    home = box / "home"
    h = make_harness(
        pool, tmp_path, home=home, proxy_root=home / "proxies", read_group=GROUP.gr_name
    )
    modes = h.settings.file_modes()
    root = h.settings.proxies
    assert not home.exists()

    with caplog.at_level(logging.WARNING, logger=LOGGER):
        await check_proxy_root(h.services)

    assert mode(home) == modes.home and home.stat().st_gid == GROUP.gr_gid
    assert mode(root) == modes.folder == 0o2750 and root.stat().st_gid == GROUP.gr_gid
    assert read_marker(root) == await identity_of(pool)
    assert mode(root / PROXY_ROOT_MARKER) == 0o640
    assert lines(caplog) == []


async def test_a_root_an_earlier_release_left_open_is_tightened_with_one_line(
    pool: AsyncConnectionPool[Any], tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    h = make_harness(pool, tmp_path)
    root = h.settings.proxies
    root.mkdir(mode=0o755)
    root.chmod(0o755)

    with caplog.at_level(logging.WARNING, logger=LOGGER):
        await check_proxy_root(h.services)

    assert mode(root) == 0o700 and mode(root / PROXY_ROOT_MARKER) == 0o600
    assert lines(caplog) == [
        f"made safelight's files private (ADR 0043): the proxy root {root}: "
        "1 folder from 0755 to 0700, 1 file from 0640 to 0600"
    ]
    caplog.clear()
    await check_proxy_root(h.services)  # settled: nothing more to say
    assert lines(caplog) == []


async def test_a_registered_root_around_safelight_s_folders_is_named_before_anything_is_made(
    pool: AsyncConnectionPool[Any], tmp_path: Path
) -> None:
    h = make_harness(pool, tmp_path)
    config = await h.add_config(tmp_path)  # active, and around the home and the proxy root
    with pytest.raises(RootOverlap) as raised:
        await check_proxy_root(h.services)
    assert str(raised.value).startswith(
        f"storage config {config} of alice ({tmp_path}) overlaps safelight's own folders, "
        "and nothing is written or deleted until they are apart: "
    )
    assert not h.settings.proxies.exists() and not h.settings.home.exists()


async def test_a_system_folder_as_the_proxy_root_is_refused(
    pool: AsyncConnectionPool[Any], tmp_path: Path
) -> None:
    h = make_harness(pool, tmp_path, proxy_root=Path("/"))
    with pytest.raises(RootOverlap) as raised:
        await check_proxy_root(h.services)
    assert str(raised.value) == (
        "safelight's proxy root / is a system folder: set SAFELIGHT_PROXY_ROOT to "
        "a folder of safelight's own"
    )


async def test_at_a_start_only_a_root_this_database_claimed_is_tightened(
    pool: AsyncConnectionPool[Any], tmp_path: Path
) -> None:
    """``serve`` claims nothing: a missing root is not made, a root without a marker or
    with another database's is left as it is, and so is one a registered folder
    overlaps; this database's own is tightened, once."""
    h = make_harness(pool, tmp_path)
    root = h.settings.proxies
    modes = h.settings.file_modes()

    assert not await tighten_proxy_root_if_ours(pool, h.settings, modes)
    assert not root.exists()

    root.mkdir(mode=0o755)
    root.chmod(0o755)
    assert not await tighten_proxy_root_if_ours(pool, h.settings, modes)
    assert mode(root) == 0o755

    claim_proxy_root(root, DatabaseIdentity("1", "another"))
    assert not await tighten_proxy_root_if_ours(pool, h.settings, modes)
    assert mode(root) == 0o755

    (root / PROXY_ROOT_MARKER).unlink()
    claim_proxy_root(root, await identity_of(pool))
    (root / PROXY_ROOT_MARKER).chmod(0o644)
    overlap = await h.add_config(root)
    assert not await tighten_proxy_root_if_ours(pool, h.settings, modes)
    assert mode(root) == 0o755

    async with pool.connection() as conn:
        await conn.execute("DELETE FROM storage_configs WHERE id = %s", (overlap,))
    tightened = await tighten_proxy_root_if_ours(pool, h.settings, modes)
    assert tightened.describe() == "1 folder from 0755 to 0700, 1 file from 0644 to 0600"
    assert mode(root) == 0o700 and mode(root / PROXY_ROOT_MARKER) == 0o600
    assert not await tighten_proxy_root_if_ours(pool, h.settings, modes)


async def test_a_config_s_root_is_checked_against_safelight_s_folders(
    pool: AsyncConnectionPool[Any], tmp_path: Path
) -> None:
    h = make_harness(pool, tmp_path)
    library = tmp_path / "library"
    await check_config_root(h.services, library)  # apart: fine
    with pytest.raises(RootOverlap, match="safelight's proxy root"):
        await check_config_root(h.services, h.settings.proxies / "photos")


async def test_the_items_config_must_exist_and_be_active(pool: AsyncConnectionPool[Any]) -> None:
    """One check for every kind that reads a config's files (crawl, scrub, faces)."""
    clock = FakeClock()
    active = await add_config(pool, clock)
    disabled = await add_config(pool, clock, active=False)
    gone = uuid4()
    async with pool.connection() as conn:
        assert (await active_config(conn, active)).id == active
        for config_id, why in ((disabled, "is disabled"), (gone, "does not exist")):
            with pytest.raises(HandlerFailed) as failed:
                await active_config(conn, config_id)
            assert str(failed.value) == f"storage config {config_id} {why}"
