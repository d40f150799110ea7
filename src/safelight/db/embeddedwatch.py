"""Noticing at once that the embedded PostgreSQL stopped under a process that uses it.

A process that uses the embedded server (``db.embedded``) holds it open: no other
safelight process stops it meanwhile, and none starts it again while this one runs. So
if it stops anyway (killed, out of memory, a crash), it will not come back on its own,
and waiting for it with the Workers' backoff would wait forever. The Worker process
watches the server's postmaster instead, as a background task, and ends with exit 3 the
moment it goes (ADR 0038): the running items stay with the server's data, and the next
``run`` or ``worker`` starts the server again and goes on from there.

No polling: the postmaster's pidfd becomes readable when it ends.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

from safelight.db.database import DatabaseUnavailable
from safelight.db.embedded import is_postmaster_of, read_postmaster

__all__ = ["EmbeddedServerStopped", "watch_postmaster"]


class EmbeddedServerStopped(DatabaseUnavailable):
    """The embedded server this process used is no longer running."""

    def __init__(self, pgdata: Path) -> None:
        super().__init__(
            f"the embedded PostgreSQL in {pgdata} stopped while safelight was using it "
            f"(see {pgdata / 'log'}); nothing is lost: the next start of safelight starts "
            "it again and goes on where this one stopped"
        )
        self.pgdata = pgdata


async def watch_postmaster(pgdata: Path) -> None:
    """Raise :class:`EmbeddedServerStopped` once the server of ``pgdata`` has ended, or
    at once if it is not running now."""
    pidfd = _open_postmaster(pgdata)
    if pidfd is not None:
        try:
            await _readable(pidfd)
        finally:
            os.close(pidfd)
    raise EmbeddedServerStopped(pgdata)


def _open_postmaster(pgdata: Path) -> int | None:
    """A pidfd of the running postmaster of ``pgdata``, or None. Opened before the pid is
    checked, so that a pid recycled after the check is never the one watched."""
    running = read_postmaster(pgdata)
    if running is None:
        return None
    try:
        pidfd = os.pidfd_open(running.pid)
    except ProcessLookupError:
        return None
    if not is_postmaster_of(running.pid, pgdata):
        os.close(pidfd)
        return None
    return pidfd


async def _readable(fd: int) -> None:
    """Until ``fd`` is readable (a pidfd: its process has ended)."""
    loop = asyncio.get_running_loop()
    ended: asyncio.Future[None] = loop.create_future()

    def wake() -> None:
        # Called at every turn of the loop until the reader is removed.
        if not ended.done():
            ended.set_result(None)

    loop.add_reader(fd, wake)
    try:
        await ended
    finally:
        loop.remove_reader(fd)
