"""Proxies still under the names of before ADR 0016 (``<type>.<ext>``), given the name
of the crawl attempt that finds them (``<type>.<item id>-<attempt>.<ext>``).

Each crawl renames its config's legacy proxies in three steps, each harmless if the
Worker dies after it, or is frozen in it and finishes it late (ADR 0017):

1. :func:`link_tagged`: the file gets its new name as well, a journalled ``write`` of a
   name only this attempt writes: a hard link to the very file opened without following
   a link, or, on a file system without hard links, a copy through the staging folder.
   A late or abandoned one leaves at most an orphan, for the sweep.
2. :func:`repoint`, in the attempt's fenced transaction: each row that still names the
   old name names the new one. An attempt that lost its item changes no row.
3. The old name is deleted (``proxytree.delete_file``) once no row names it. No writer
   ever gives a row a legacy name again, so a late unlink of one harms nothing; one a
   crash leaves behind is an orphan the sweep deletes after its age floor.

No row ever names a missing file on the way, and no file a row names is replaced.
"""

from __future__ import annotations

import errno
import shutil
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any
from uuid import UUID

import psycopg

from safelight.library.catalogue import proxies
from safelight.library.proxystore.layout import (
    STAGING_FOLDER,
    AttemptTag,
    ProxyName,
    parse_proxy_name,
    proxy_path,
)
from safelight.library.proxystore.proxytree import inspect, link_file, open_file
from safelight.library.proxystore.publishing import write_atomically

NO_HARD_LINKS = frozenset({errno.EPERM, errno.EOPNOTSUPP, errno.EMLINK, errno.EXDEV})
"""``link()`` errors that mean "not here": the rename copies instead."""


@dataclass(frozen=True, slots=True)
class LegacyProxy:
    """A proxy row that names a legacy file name."""

    asset_id: int
    proxy_type: str
    name: ProxyName


@dataclass(frozen=True, slots=True)
class Page:
    proxies: list[LegacyProxy]
    after: tuple[int, str] | None
    """Where the next page starts; None after the last one."""


async def legacy_page(
    conn: psycopg.AsyncConnection[Any],
    config_id: UUID,
    after: tuple[int, str],
    limit: int,
) -> Page:
    """A page of the config's live proxy rows that name a legacy file, in (asset id,
    proxy type) order after ``after``. The query's pattern only narrows the look (its
    partial index is empty once every proxy is renamed); ``parse_proxy_name`` decides."""
    rows = await proxies.legacy_of_config(conn, config_id, after, limit)
    found = []
    for asset_id, proxy_type, path in rows:
        name = parse_proxy_name(path)
        if name is not None and name.written_by is None and name.config_id == config_id:
            found.append(LegacyProxy(asset_id, proxy_type, name))
    after_next = (rows[-1][0], rows[-1][1]) if len(rows) == limit else None
    return Page(found, after_next)


def tagged_name(proxy_root: Path, name: ProxyName, written_by: AttemptTag) -> str:
    """The name, relative to the proxy root, that ``written_by`` gives a legacy file."""
    proxy_type, ext = name.file_name.split(".")
    target = proxy_path(proxy_root, name.config_id, name.content_hash, proxy_type, ext, written_by)
    return target.relative_to(proxy_root).as_posix()


def link_tagged(
    proxy_root: Path,
    legacy: LegacyProxy,
    written_by: AttemptTag,
    ensure_alive: Callable[[], None],
) -> str:
    """Give the legacy file its tagged name too; return that name. Blocking: a thread.

    The file is reached without following a link at any level (``UnsafeProxyPath``
    otherwise) and must be a regular file; the new name is then a hard link to it
    (``proxytree.link_file``), or a copy where the file system has none. A new name
    that already exists was made by this attempt (only it writes that name) from the
    same file: another row of the same content named the same legacy file."""
    target = tagged_name(proxy_root, legacy.name, written_by)
    if inspect(proxy_root, target) is not None:
        return target
    try:
        link_file(proxy_root, legacy.name.relative, target.rsplit("/", 1)[1], ensure_alive)
    except OSError as error:
        if error.errno not in NO_HARD_LINKS:
            raise
        with open_file(proxy_root, legacy.name.relative) as source:
            write_atomically(
                proxy_root / target, _copier(source), ensure_alive, proxy_root / STAGING_FOLDER
            )
    return target


def _copier(source: IO[bytes]) -> Callable[[IO[bytes]], None]:
    def copy(out: IO[bytes]) -> None:
        source.seek(0)
        shutil.copyfileobj(source, out)

    return copy


async def repoint(
    conn: psycopg.AsyncConnection[Any], renamed: Sequence[tuple[LegacyProxy, str]]
) -> set[str]:
    """In the attempt's fenced transaction: each row that still names its legacy file
    names its new one. Returns the legacy names some row stopped naming."""
    if not renamed:
        return set()
    return await proxies.repoint(
        conn,
        [
            (legacy.asset_id, legacy.proxy_type, legacy.name.relative, new)
            for legacy, new in renamed
        ],
    )
