"""What a crawl reports: its progress counters and the result it returns."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from safelight.library.walk.walker import Walker

if TYPE_CHECKING:
    from safelight.handlers.crawl.attempt import Attempt

COUNTERS = (
    "total",
    "found",
    "hashed",
    "unchanged",
    "ingested",
    "moved",
    "reread",
    "duplicates",
    "deleted",
    "proxies",
    "errors",
    "skipped",
)
"""Progress counters, cumulative. ``total``: photos and videos the walk found (known
once the walk ends); ``found``: how many of them have been dealt with so far, whatever
the outcome (``found / total`` is the progress); ``reread``: photos whose metadata was
read again in place, their XMP sidecar being new, changed or gone; ``skipped``: what
the walk did not crawl on purpose (symbolic links, safelight's own folders), each
listed with why."""

RESULT_LIST_LIMIT = 1000
"""At most this many errors (and duplicates) are listed in a result; asset_errors has all."""


def summarise(crawl: Attempt, walker: Walker, by_type: dict[str, int]) -> dict[str, Any]:
    """The crawl's result, from its tally, what the walk skipped and the live assets by
    type once it is done."""
    counts = crawl.tally.counts
    return {
        "total": counts["total"],
        "found": counts["found"],
        "unchanged": counts["unchanged"],
        "ingested": counts["ingested"],
        "moved": counts["moved"],
        "reread": counts["reread"],
        "duplicates": capped(crawl.tally.duplicates, "path", "same_as"),
        "deleted": counts["deleted"],
        "proxies": counts["proxies"],
        "errors": capped(
            [{"path": e.path, "reason": e.reason} for e in crawl.tally.errors],
            "path",
            "reason",
        ),
        "skipped": capped(
            [{"path": e.path, "reason": e.reason} for e in walker.skipped],
            "path",
            "reason",
        ),
        "images": by_type["image"],
        "videos": by_type["video"],
        "proxies_renamed": crawl.tally.proxies_renamed,
        "proxy_errors": capped(
            [{"path": e.path, "reason": e.reason} for e in crawl.tally.proxy_errors],
            "path",
            "reason",
        ),
        "motion_photo_issues": capped(
            [{"path": e.path, "reason": e.reason} for e in crawl.tally.motion_photo_issues],
            "path",
            "reason",
        ),
    }


def capped(entries: list[dict[str, str]], first: str, second: str) -> list[dict[str, str]]:
    if len(entries) <= RESULT_LIST_LIMIT:
        return entries
    rest = len(entries) - RESULT_LIST_LIMIT
    return [*entries[:RESULT_LIST_LIMIT], {first: "...", second: f"and {rest} more"}]
