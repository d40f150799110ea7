"""When a crawl reads a file that failed again (ADR 0057), with no I/O.

A file a crawl could not ingest is recorded with its reason and the file as it was then
(size, mtime in ns, inode: ``assets.FailedFile``). Reading it again at every crawl
costs a folder of broken files the same every time and tells nothing new, so a later
crawl reads it again only when:

- it changed: its size, mtime or inode is not the recorded one (a new copy, an edit, a
  file replaced under the same name);
- it is due: the clock reached its ``retry_after`` (a long backoff, below), or someone
  asked (``run --retry-failed``, ``config retry-failed``, the dashboard), which sets it
  to the moment they asked;
- nothing of it is known: a row of before migration 0021, or a file that failed before
  it could be opened (then only its open is retried, which reads no byte).

Otherwise the crawl leaves it as it is, unread, and lists it with its recorded reason.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from safelight.library.catalogue.assets import FailedFile


def read_again(
    failed: FailedFile, size: int, modified_ns: int, inode: int | None, now: datetime
) -> bool:
    """Whether a crawl at ``now`` reads ``failed``'s file again, now ``size`` bytes,
    modified at ``modified_ns``, inode ``inode`` (None: not known yet; see the module)."""
    if failed.size is None or failed.modified_ns is None or failed.retry_after is None:
        return True
    if (failed.size, failed.modified_ns) != (size, modified_ns):
        return True
    if failed.inode is None or inode is None or failed.inode != inode:
        return True
    return now >= failed.retry_after


def needs_inode(failed: FailedFile, size: int, modified_ns: int, now: datetime) -> bool:
    """Whether the inode would decide: the walk gives out no inode, so the crawl asks the
    file system for it only when everything else says "leave it"."""
    return not read_again(failed, size, modified_ns, failed.inode, now)


def retry_after(failures: int, now: datetime, first: timedelta, longest: timedelta) -> datetime:
    """When a file that failed ``failures`` crawls (1: this one) is read again unchanged:
    ``first`` after it failed once, twice that after twice, and so on, never more than
    ``longest``."""
    wait = longest if failures > 40 else min(first * 2 ** max(failures - 1, 0), longest)
    return now + wait
