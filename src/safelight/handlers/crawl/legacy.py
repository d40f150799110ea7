"""Repoint legacy names: proxies still under a name of before ADR 0016 get this
attempt's (``library.proxystore.legacynames``, ADR 0017); old names deleted once no row
names them."""

from __future__ import annotations

import asyncio

from safelight.handlers.contract import stop_if_cancelled
from safelight.handlers.crawl.attempt import WRITE_BATCH, Attempt
from safelight.library.catalogue.proxies import paths_named
from safelight.library.files.confinement import describe_os_error
from safelight.library.proxystore import legacynames
from safelight.library.proxystore.legacynames import LegacyProxy
from safelight.library.proxystore.proxytree import UnsafeProxyPath, delete_file
from safelight.library.walk.walker import FileError


async def rename_legacy_proxies(crawl: Attempt) -> None:
    """Give each of the config's proxies still under a legacy name this attempt's
    name, a page at a time: link, repoint the rows (fenced), then delete each old
    name no row names any more (library.proxystore.legacynames, ADR 0017)."""
    after: tuple[int, str] | None = (0, "")
    while after is not None:
        stop_if_cancelled(crawl.ctx)
        async with crawl.services.pool.connection() as conn:
            page = await legacynames.legacy_page(conn, crawl.config_id, after, WRITE_BATCH)
        after = page.after
        if not page.proxies:
            continue
        linked = await asyncio.to_thread(link_tagged, crawl, page.proxies)
        async with crawl.ctx.fenced() as conn:
            left = await legacynames.repoint(conn, linked)
        crawl.tally.proxies_renamed += len(linked)
        async with crawl.services.pool.connection() as conn:
            still = await paths_named(conn, sorted(left))
        # Only this attempt writes the config's rows, and never a legacy name: a name
        # no row names now stays so.
        await asyncio.to_thread(
            delete_old_names,
            crawl,
            sorted(left - still),
            "renamed, but the old name was not deleted",
        )


def link_tagged(crawl: Attempt, proxies: list[LegacyProxy]) -> list[tuple[LegacyProxy, str]]:
    """Blocking (links, or copies): runs in a thread."""
    linked = []
    for legacy in proxies:
        crawl.alive.check()
        try:
            new = legacynames.link_tagged(
                crawl.proxy_root, legacy, crawl.written_by, crawl.alive.ensure_alive
            )
        except (OSError, UnsafeProxyPath) as error:
            proxy_error(crawl, legacy.name.relative, "not renamed", error)
            continue
        linked.append((legacy, new))
    return linked


def delete_old_names(crawl: Attempt, relatives: list[str], what: str) -> None:
    """Blocking: runs in a thread. A name left behind is an orphan, for the sweep."""
    for relative in relatives:
        try:
            delete_file(crawl.proxy_root, relative, crawl.alive.ensure_alive)
        except (OSError, UnsafeProxyPath) as error:
            proxy_error(crawl, relative, what, error)


def proxy_error(crawl: Attempt, relative: str, what: str, error: OSError | UnsafeProxyPath) -> None:
    reason = describe_os_error(error) if isinstance(error, OSError) else error.reason
    crawl.ctx.logger.warning("crawl: proxy %s %s: %s", relative, what, reason)
    crawl.tally.proxy_errors.append(FileError(relative, f"{what}: {reason}"))
