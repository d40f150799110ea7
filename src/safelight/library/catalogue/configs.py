"""Storage configs: the folders of originals, each owned by one user, that scope work.

A config is identified by its owner and its root folder, resolved (``~`` expanded,
symlinks followed, made absolute) before it is stored, so ``./photos``,
``/home/me/photos`` and a symlink to it are one config. Adding a folder its owner
already has returns that config, made active again if it had been disabled: adding is
how an operator asks for the folder to be served, whatever happened before.

Registered folders are never nested: a folder inside, or around, a folder already
registered (by any owner, in any state) is refused, since its photos would be indexed
and shown twice, once per config. The same folder for two owners is two configs, as
before. Adds take turns under a transaction-scoped advisory lock, so two adds of nested
folders at the same moment cannot both pass the check.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any
from uuid import UUID

import psycopg
from psycopg.rows import dict_row
from psycopg_pool import AsyncConnectionPool

from safelight.core.clock import Clock
from safelight.core.sql import load_queries
from safelight.library.catalogue.owners import owner_name_problem
from safelight.library.files.roots import OwnFolder, check_storage_root

QUERIES = load_queries("safelight.library.catalogue", "configs.sql")

# A fixed key for pg_advisory_xact_lock, under which adds take turns: "safelight config
# add" as an arbitrary 63-bit number (the migrations' lock is another).
ADD_LOCK_KEY = 0x5AFE_0002_C0F1

# The shortest id prefix an operator may type for a config: with fewer hex digits, a
# library of a few dozen configs would already see collisions.
MIN_ID_PREFIX = 4
_HEX = frozenset("0123456789abcdef-")


class ConfigError(ValueError):
    """A storage config cannot be added or found; the message is for the user."""


class NestedConfig(ConfigError):
    """The folder lies inside, or around, a folder another config has."""


@dataclass(frozen=True, slots=True)
class StorageConfig:
    id: UUID
    owner: str
    root_path: Path
    active: bool
    created_at: datetime


@dataclass(frozen=True, slots=True)
class Added:
    """What :meth:`StorageConfigs.add` did: created the config, found it, or re-enabled it."""

    config: StorageConfig
    created: bool
    reactivated: bool = False


def _config_from_row(row: Mapping[str, Any]) -> StorageConfig:
    return StorageConfig(
        id=row["id"],
        owner=row["owner"],
        root_path=Path(row["root_path"]),
        active=row["active"],
        created_at=row["created_at"],
    )


def resolve_root(root: str | os.PathLike[str]) -> Path:
    """The folder as it is stored: absolute, symlinks resolved. Raises :class:`ConfigError`
    when it does not exist or is not a folder."""
    given = Path(root).expanduser()
    try:
        resolved = given.resolve(strict=True)
    except FileNotFoundError:
        raise ConfigError(f"{given} does not exist") from None
    except (OSError, RuntimeError) as exc:  # RuntimeError: a symlink loop
        raise ConfigError(f"{given} cannot be opened: {exc}") from None
    if not resolved.is_dir():
        raise ConfigError(f"{given} is not a folder")
    if not os.access(resolved, os.R_OK | os.X_OK):
        raise ConfigError(f"{given} cannot be read (permission denied)")
    return resolved


def _resolve_quietly(root: str | os.PathLike[str]) -> Path | None:
    try:
        return Path(root).expanduser().resolve(strict=False)
    except (OSError, RuntimeError):
        return None


def _check_owner(owner: str) -> str:
    problem = owner_name_problem(owner)
    if problem is not None:
        raise ConfigError(problem)
    return owner


async def every_config(conn: psycopg.AsyncConnection[Any]) -> list[StorageConfig]:
    """Every storage config, of every owner and in any state, on the caller's connection."""
    cur = conn.cursor(row_factory=dict_row)
    await cur.execute(QUERIES["configs_list"], {"owner": None, "active_only": False})
    return [_config_from_row(row) for row in await cur.fetchall()]


def _nested_error(root: Path, other: StorageConfig) -> NestedConfig:
    state = "" if other.active else ", disabled"
    registered = f"storage config {other.id} ({other.owner}{state})"
    if root.is_relative_to(other.root_path):
        return NestedConfig(
            f"{root} lies inside {other.root_path}, the folder of {registered}: its photos "
            f"would be indexed twice. Use that config (safelight run {other.root_path} "
            f"--user {other.owner}), or choose a folder outside it"
        )
    return NestedConfig(
        f"{root} contains {other.root_path}, the folder of {registered}: its photos "
        "would be indexed twice. Register the folders beside it instead, each on its own, "
        "or choose a folder that does not contain it"
    )


async def config_by_id(conn: psycopg.AsyncConnection[Any], config_id: UUID) -> StorageConfig | None:
    """One storage config, on the caller's connection."""
    cur = conn.cursor(row_factory=dict_row)
    await cur.execute(QUERIES["config_get"], {"id": config_id})
    row = await cur.fetchone()
    return None if row is None else _config_from_row(row)


async def insert_config(
    conn: psycopg.AsyncConnection[Any], owner: str, root_path: str, now: datetime
) -> StorageConfig | None:
    """Write the config row as given; None when ``owner`` already has ``root_path``.

    Checks nothing of the folder: :meth:`StorageConfigs.add` resolves and checks it and
    calls this under its lock; the tests' row factory (``safelight.testing.rows``) calls
    it for folders that need not exist.
    """
    cur = conn.cursor(row_factory=dict_row)
    await cur.execute(
        QUERIES["config_insert"], {"owner": owner, "root_path": root_path, "now": now}
    )
    row = await cur.fetchone()
    return None if row is None else _config_from_row(row)


class StorageConfigs:
    """Adding, finding and disabling storage configs, on a pool of autocommit connections."""

    def __init__(
        self,
        pool: AsyncConnectionPool[Any],
        clock: Clock,
        *,
        own_folders: Sequence[OwnFolder] = (),
    ) -> None:
        self._pool = pool
        self._clock = clock
        # safelight's own folders, which no root may overlap (library.files.roots); the CLI
        # passes the settings' folders.
        self._own_folders = own_folders

    async def add(self, owner: str, root: str | os.PathLike[str]) -> Added:
        """Register ``root`` for ``owner``, or return the config that already has it.

        Idempotent by (owner, resolved root): a second add returns the first one's id.
        Raises ``RootOverlap`` when the folder overlaps safelight's own, and
        :class:`NestedConfig` when a new config's folder lies inside, or around, a
        registered one.
        """
        _check_owner(owner)
        # Resolving stats the file system, which may be a slow network share.
        resolved = await asyncio.to_thread(resolve_root, root)
        check_storage_root(resolved, self._own_folders)
        now = self._clock.now()
        params = {"owner": owner, "root_path": str(resolved), "now": now}
        async with self._pool.connection() as conn, conn.transaction():
            cur = conn.cursor(row_factory=dict_row)
            await cur.execute(QUERIES["configs_lock_for_add"], {"key": ADD_LOCK_KEY})
            created = await insert_config(conn, owner, str(resolved), now)
            if created is not None:
                # A new config: none may be nested in it, nor it in one. Under the lock,
                # every other add's row is committed or not yet written; raising rolls
                # this one back. (A folder already registered is reused as it is.)
                await cur.execute(QUERIES["configs_nested"], params)
                nested = await cur.fetchone()
                if nested is not None:
                    raise _nested_error(resolved, _config_from_row(nested))
                return Added(created, created=True)
            # The unique (owner, root_path) row exists and cannot vanish before this
            # statement reads it: nothing deletes storage configs.
            await cur.execute(QUERIES["config_reactivate"], params)
            row = await cur.fetchone()
        if row is None:  # pragma: no cover - see the comment above
            raise ConfigError(f"the storage config of {params['root_path']} vanished")
        return Added(_config_from_row(row), created=False, reactivated=not row["was_active"])

    async def get(self, config_id: UUID) -> StorageConfig | None:
        async with self._pool.connection() as conn:
            return await config_by_id(conn, config_id)

    async def resolve_id(self, text: str) -> StorageConfig:
        """The config named by a full id or a unique prefix of one (at least
        ``MIN_ID_PREFIX`` characters), as an operator types it. Raises :class:`ConfigError`."""
        wanted = text.strip().lower()
        try:
            full = UUID(wanted)
        except ValueError:
            full = None
        if full is not None:
            found = await self.get(full)
            if found is None:
                raise ConfigError(f"there is no storage config {full}")
            return found
        if len(wanted) < MIN_ID_PREFIX or not set(wanted) <= _HEX:
            raise ConfigError(
                f"{text!r} is not a storage config id (a UUID, or at least its first "
                f"{MIN_ID_PREFIX} characters)"
            )
        async with self._pool.connection() as conn:
            cur = conn.cursor(row_factory=dict_row)
            await cur.execute(QUERIES["configs_by_id_prefix"], {"prefix": wanted})
            rows = await cur.fetchall()
        if not rows:
            raise ConfigError(f"there is no storage config whose id starts with {wanted}")
        if len(rows) > 1:
            raise ConfigError(f"more than one storage config's id starts with {wanted}")
        return _config_from_row(rows[0])

    async def list_configs(
        self, *, owner: str | None = None, active_only: bool = False
    ) -> list[StorageConfig]:
        async with self._pool.connection() as conn:
            cur = conn.cursor(row_factory=dict_row)
            await cur.execute(QUERIES["configs_list"], {"owner": owner, "active_only": active_only})
            return [_config_from_row(row) for row in await cur.fetchall()]

    async def find_by_root(
        self, root: str | os.PathLike[str], *, owner: str | None = None
    ) -> list[StorageConfig]:
        """The configs of a folder (one owner's, or everyone's). A folder that does not
        exist has none; the path is resolved the way :meth:`add` stores it."""
        resolved = await asyncio.to_thread(_resolve_quietly, root)
        if resolved is None:
            return []
        async with self._pool.connection() as conn:
            cur = conn.cursor(row_factory=dict_row)
            await cur.execute(
                QUERIES["configs_by_root"], {"root_path": str(resolved), "owner": owner}
            )
            return [_config_from_row(row) for row in await cur.fetchall()]

    async def enable(self, config_id: UUID) -> tuple[StorageConfig, bool]:
        """Make a config active again; returns it and whether it was active before.

        Its folder is checked against safelight's folders first, as ``add`` checks it:
        the settings may have moved the proxy root or the home onto it since it was
        disabled. Raises :class:`ConfigError` when there is no such config, and
        ``RootOverlap`` when its folder overlaps one of safelight's.
        """
        found = await self.get(config_id)
        if found is None:
            raise ConfigError(f"there is no storage config {config_id}")
        await asyncio.to_thread(check_storage_root, found.root_path, self._own_folders)
        async with self._pool.connection() as conn:
            cur = conn.cursor(row_factory=dict_row)
            await cur.execute(QUERIES["config_enable"], {"id": config_id})
            row = await cur.fetchone()
        if row is None:  # pragma: no cover - nothing deletes storage configs
            raise ConfigError(f"there is no storage config {config_id}")
        return _config_from_row(row), bool(row["was_active"])

    async def disable(self, config_id: UUID) -> tuple[StorageConfig, bool]:
        """Make a config inactive; returns it and whether it was active before.

        Workers stop claiming its work, and enqueue refuses new work for it. Its queued
        items wait (they run again once the folder is added again); a running item
        finishes. Raises :class:`ConfigError` when there is no such config.
        """
        async with self._pool.connection() as conn:
            cur = conn.cursor(row_factory=dict_row)
            await cur.execute(QUERIES["config_disable"], {"id": config_id})
            row = await cur.fetchone()
        if row is None:
            raise ConfigError(f"there is no storage config {config_id}")
        return _config_from_row(row), bool(row["was_active"])
