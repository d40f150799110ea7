"""What a crawl reports, typed: its progress counters as it goes (``CrawlCounts``) and
the result it ends with (``CrawlResult``). Both are saved with the item as JSON (its
``progress`` counts, its ``result``) and read back with ``from_json``, which reads a
row of any earlier version: a key it lacks is 0 or an empty list, so the CLI, the
views and the tests read attributes, never string keys (ADR 0047)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from safelight.library.walk.walker import FileError

E = TypeVar("E")

RESULT_LIST_LIMIT = 1000
"""At most this many errors (and duplicates) are listed in a result; asset_errors has all."""


@dataclass(slots=True)
class CrawlCounts:
    """Progress counters, cumulative. ``total``: photos and videos the walk found (known
    once the walk ends); ``found``: how many of them have been dealt with so far, whatever
    the outcome (``found / total`` is the progress); ``reread``: photos whose metadata was
    read again in place, their XMP sidecar being new, changed or gone; ``skipped``: what
    the walk did not crawl on purpose (symbolic links, safelight's own folders), each
    listed with why. Each grows only once the transaction it counts has committed."""

    total: int = 0
    found: int = 0
    hashed: int = 0
    unchanged: int = 0
    ingested: int = 0
    moved: int = 0
    reread: int = 0
    duplicates: int = 0
    deleted: int = 0
    proxies: int = 0
    errors: int = 0
    skipped: int = 0
    misnamed: int = 0
    """Files ingested as their content, another format than their name says (ADR 0052)."""
    cut_short: int = 0
    """JPEGs cut short, ingested as far as they decode (ADR 0052)."""
    not_retried: int = 0
    """Files that failed before, unchanged since, not read again (ADR 0057)."""
    other_files: int = 0
    """Files that are no photo, video or sidecar: left alone (ADR 0057)."""

    def as_json(self) -> dict[str, int]:
        """The counters as the item's progress saves them, in ``COUNTERS`` order."""
        return {name: getattr(self, name) for name in COUNTERS}

    @classmethod
    def from_json(cls, counts: Mapping[str, Any] | None) -> CrawlCounts:
        """The counters of saved progress or of a result (where a listed count is its
        list, capped: counted whole, its "and N more" entry too); missing: 0."""
        return cls(**{name: _count((counts or {}).get(name)) for name in COUNTERS})


COUNTERS: tuple[str, ...] = tuple(f.name for f in dataclasses.fields(CrawlCounts))
"""The progress counters' names, in the order they are reported."""


@dataclass(frozen=True, slots=True)
class Duplicate:
    """A file with the same bytes as an asset: not a second asset."""

    path: str
    same_as: str


@dataclass(frozen=True, slots=True)
class CrawlResult:
    """A finished crawl's result: what it did (the counters of ``CrawlCounts`` it ends
    with, without ``hashed``, its lists capped at ``RESULT_LIST_LIMIT`` entries and an
    "and N more" one) and the config's live assets by type once it was done."""

    total: int = 0
    found: int = 0
    unchanged: int = 0
    ingested: int = 0
    moved: int = 0
    reread: int = 0
    duplicates: tuple[Duplicate, ...] = ()
    deleted: int = 0
    proxies: int = 0
    errors: tuple[FileError, ...] = ()
    """Files that could not be crawled, with why."""
    skipped: tuple[FileError, ...] = ()
    """What the walk did not crawl on purpose, with why."""
    images: int = 0
    videos: int = 0
    proxies_renamed: int = 0
    """Proxies renamed from a legacy name (ADR 0017)."""
    proxy_errors: tuple[FileError, ...] = ()
    """Proxy files (relative to the proxy root) a step could not rename or delete."""
    motion_photo_issues: tuple[FileError, ...] = ()
    """Stills that claim a motion video which is not there (each ingested as a still)."""
    misnamed: tuple[FileError, ...] = ()
    """Files that hold another format than their name says, with what ("holds a JPEG,
    named .nef"): each ingested as what it holds."""
    cut_short: tuple[FileError, ...] = ()
    """JPEGs cut short, each ingested as far as it decodes, with the note."""
    not_retried: tuple[FileError, ...] = ()
    """Files that failed before and have not changed since: not read again, listed with
    the reason they failed with (ADR 0057)."""
    other_files: int = 0
    """Files that are no photo, video or sidecar: left alone (ADR 0057)."""

    @property
    def counts(self) -> CrawlCounts:
        """Its counters, as the item's progress reports them (a list by its length)."""
        return CrawlCounts.from_json(self.as_json())

    def as_json(self) -> dict[str, Any]:
        """The item's result: the keys and shapes every version has stored."""
        return {
            "total": self.total,
            "found": self.found,
            "unchanged": self.unchanged,
            "ingested": self.ingested,
            "moved": self.moved,
            "reread": self.reread,
            "duplicates": [{"path": d.path, "same_as": d.same_as} for d in self.duplicates],
            "deleted": self.deleted,
            "proxies": self.proxies,
            "errors": _entries_json(self.errors),
            "skipped": _entries_json(self.skipped),
            "images": self.images,
            "videos": self.videos,
            "proxies_renamed": self.proxies_renamed,
            "proxy_errors": _entries_json(self.proxy_errors),
            "motion_photo_issues": _entries_json(self.motion_photo_issues),
            "misnamed": _entries_json(self.misnamed),
            "cut_short": _entries_json(self.cut_short),
            "not_retried": _entries_json(self.not_retried),
            "other_files": self.other_files,
        }

    @classmethod
    def from_json(cls, result: Mapping[str, Any]) -> CrawlResult:
        """A stored result, of any version: a key it lacks (an older crawl's) is 0 or an
        empty list; a listed entry that is not an object is left out."""
        ints = {
            name: _count(result.get(name))
            for name in (
                "total", "found", "unchanged", "ingested", "moved", "reread", "deleted",
                "proxies", "images", "videos", "proxies_renamed", "other_files",
            )
        }  # fmt: skip
        return cls(
            **ints,
            duplicates=tuple(
                Duplicate(*_fields(e, "same_as")) for e in _objects(result.get("duplicates"))
            ),
            errors=_entries(result.get("errors")),
            skipped=_entries(result.get("skipped")),
            proxy_errors=_entries(result.get("proxy_errors")),
            motion_photo_issues=_entries(result.get("motion_photo_issues")),
            misnamed=_entries(result.get("misnamed")),
            cut_short=_entries(result.get("cut_short")),
            not_retried=_entries(result.get("not_retried")),
        )


def capped(entries: Iterable[E], more: Callable[[str, str], E]) -> tuple[E, ...]:
    """At most ``RESULT_LIST_LIMIT`` of ``entries``, then ``more("...", "and N more")``."""
    listed: tuple[E, ...] = tuple(entries)
    if len(listed) <= RESULT_LIST_LIMIT:
        return listed
    rest = len(listed) - RESULT_LIST_LIMIT
    return (*listed[:RESULT_LIST_LIMIT], more("...", f"and {rest} more"))


def _count(value: object) -> int:
    if isinstance(value, list):
        return len(value)
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _objects(value: object) -> list[Mapping[str, Any]]:
    return [e for e in value if isinstance(e, Mapping)] if isinstance(value, list) else []


def _fields(entry: Mapping[str, Any], second: str) -> tuple[str, str]:
    return _text(entry.get("path")), _text(entry.get(second))


def _text(value: object) -> str:
    return value if isinstance(value, str) else "" if value is None else str(value)


def _entries(value: object) -> tuple[FileError, ...]:
    return tuple(FileError(*_fields(e, "reason")) for e in _objects(value))


def _entries_json(entries: tuple[FileError, ...]) -> list[dict[str, str]]:
    return [{"path": e.path, "reason": e.reason} for e in entries]
