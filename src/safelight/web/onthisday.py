""" "On this day": the photos and videos captured on a day's month and day in the years
before it, grouped by year, newest year first, as the library shows them.

Which day a photo belongs to is its **local capture date, in its own offset**: the
wall-clock date the camera showed (``assets.captured_local``, and the month and day
stored from it at ingest). A photo shot at 23:30 in Tokyo is of that Tokyo day, wherever
the dashboard is opened. A photo with a zone-less time is of its camera's date; only
what safelight knows as an instant alone (a video's container time in UTC, a file's
modification time) falls on its UTC date (docs/web.md).

On 28 February of a common year the day also holds the 29 February of leap years, so
a leap day's photos come back every year.

A day of a large library holds thousands of tiles: it is served a page at a time, after
a keyset :class:`Cursor` (the last tile's year, local time and id, the page's order),
which the query continues from on its index; no page costs more than its own rows.
There is no total: counting what the day shows means reading and filtering all of it,
the cost the pages avoid (ADR 0031).

:func:`on_this_day` is the one query the page, the API and the benchmark call.
"""

from __future__ import annotations

import base64
import binascii
import calendar
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import date, datetime
from typing import Any

from safelight.library.catalogue.people import named_people_on_days
from safelight.views.capturetimes import capture_time_text
from safelight.views.datenotes import date_note
from safelight.views.places import PLACES_PER_YEAR, place_of, place_text, places_line
from safelight.web import reads
from safelight.web.proxies import proxy_url
from safelight.words import listed

Row = Mapping[str, Any]

PAGE_TILES = 60
"""Tiles in a page unless asked otherwise: a few screens of the grid."""
MAX_PAGE_TILES = 500


@dataclass(frozen=True, slots=True)
class Cursor:
    """Where a page ends: its last tile's place in the day's order (``captured_year``,
    ``captured_local``, ``id``, all descending); the next page is what sorts after it.
    Opaque to clients (URL-safe base64 of its text), so its form can change."""

    year: int
    local: datetime
    id: int

    def encode(self) -> str:
        text = f"{self.year}|{self.local.isoformat()}|{self.id}"
        return base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")

    @classmethod
    def decode(cls, token: str) -> Cursor:
        """The cursor ``token`` names; ValueError if it names none."""
        try:
            raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)).decode()
            year, local, asset_id = raw.split("|")
            return cls(int(year), datetime.fromisoformat(local), int(asset_id))
        except (binascii.Error, UnicodeDecodeError, ValueError):
            raise ValueError("not a cursor of this API") from None

    @classmethod
    def of(cls, row: Row) -> Cursor:
        return cls(row["captured_year"], row["captured_local"], row["id"])

    @classmethod
    def start(cls, span: DaySpan) -> Cursor:
        """Before every tile of the day: the first page's cursor (the year's bound)."""
        return cls(span.before_year, datetime.min, 0)


@dataclass(frozen=True, slots=True)
class DaySpan:
    """The month and day range (of ``captured_month``, ``captured_day``) a day shows,
    from the years before ``before_year``."""

    month: int
    first_day: int
    last_day: int
    before_year: int


def span_of(day: date) -> DaySpan:
    """The day's own month and day; on 28 February of a common year, the 29th too."""
    last = day.day
    if (day.month, day.day) == (2, 28) and not calendar.isleap(day.year):
        last = 29
    return DaySpan(day.month, day.day, last, day.year)


def kind_of(row: Row) -> str:
    """``photo``, ``video``, ``live_photo`` (a still with its paired video) or
    ``motion_photo`` (a still with its video inside the file)."""
    if row["media_type"] == "video":
        return "video"
    if row["motion_photo"]:
        return "motion_photo"
    if row["paired_asset_id"] is not None:
        return "live_photo"
    return "photo"


def _proxies(row: Row) -> dict[str, Any]:
    asset_id = row["id"]
    return {
        "thumbnail": proxy_url(asset_id, "thumbnail", row["thumbnail_path"]),
        "preview": proxy_url(asset_id, "full_preview", row["preview_path"]),
        "blurhash": row["blurhash"],
    }


def _shown_time(row: Row) -> str:
    """The capture time as the tile and the preview show it: local, to the second, with
    its offset when it is known (``views.capturetimes``)."""
    return capture_time_text(
        row["captured_at"], row["captured_local"], row["captured_at_source"], row["zone_source"]
    )


def _shown_place(row: Row) -> str | None:
    """Where it was taken, as the preview's caption shows it (``views.places``)."""
    return place_text(row["place_city"], row["place_country"], row["place_country_code"])


def _member(row: Row) -> dict[str, Any]:
    return {
        "id": row["id"],
        "media_type": row["media_type"],
        "file_name": row["file_name"],
        "captured_local": row["captured_local"].isoformat(),
        "captured_shown": _shown_time(row),
        "place": place_of(row),
        "place_shown": _shown_place(row),
        "width": row["width"],
        "height": row["height"],
        **_proxies(row),
    }


def _tile(
    row: Row, members: Sequence[dict[str, Any]], similar: Sequence[dict[str, Any]] = ()
) -> dict[str, Any]:
    kind = kind_of(row)
    video_type_of = row["paired_asset_id"] if kind == "live_photo" else row["id"]
    return {
        "id": row["id"],
        "kind": kind,
        "storage_config_id": str(row["storage_config_id"]),
        "file_name": row["file_name"],
        "captured_local": row["captured_local"].isoformat(),
        "captured_at": row["captured_at"].isoformat(),
        "captured_at_source": row["captured_at_source"],
        "captured_shown": _shown_time(row),
        "date_note": date_note(row["captured_at_source"]),
        "width": row["width"],
        "height": row["height"],
        "duration_seconds": row["duration_seconds"],
        "camera": " ".join(p for p in (row["camera_make"], row["camera_model"]) if p) or None,
        # What the crawl noticed reading it ("holds a JPEG, named .nef"; ADR 0052).
        "read_note": row["read_note"],
        # Where it was taken (its position's GeoNames place and zone; ADR 0065).
        "place": place_of(row),
        "place_shown": _shown_place(row),
        "time_zone": row["time_zone"],
        **_proxies(row),
        # A Live Photo's video is its paired asset's web video; a motion photo's and a
        # video's are its own.
        "video": proxy_url(video_type_of, "web_video", row["video_path"]),
        "burst": None
        if row["burst_id"] is None
        else {"id": row["burst_id"], "count": int(row["burst_count"]), "members": list(members)},
        # Near-identical shots of one scene and time (ADR 0066), one tile as a burst.
        "similar": None
        if row["similar_group_id"] is None
        else {
            "id": row["similar_group_id"],
            "count": int(row["similar_count"]),
            "members": list(similar),
        },
    }


async def _add_people(
    pool: reads.Pool, span: DaySpan, years: list[dict[str, Any]], *, owner: str | None
) -> None:
    """Who is in each year's photos of the day (of all of them, not only the page's):
    ``people``, the named people, those in most photos first, and ``people_line``, the
    line the page shows ("with Grandma and Ana"; None with nobody named). One query."""
    if not years:
        return
    async with pool.connection() as conn:
        named = await named_people_on_days(
            conn,
            month=span.month,
            days=sorted({span.first_day, span.last_day}),
            years=[year["year"] for year in years],
            owner=owner,
        )
    for year in years:
        names = named.get(year["year"], [])
        year["people"] = names
        year["people_line"] = f"with {listed(names)}" if names else None


async def _add_places(
    pool: reads.Pool,
    span: DaySpan,
    years: list[dict[str, Any]],
    after: Cursor | None,
    *,
    owner: str | None,
) -> None:
    """Each year's ``places`` (``[{"city", "country", "country_code", "count"}]``, a few
    at most, most photographed first) and ``places_shown`` (``Lisbon, Portugal``; None
    for none), counted over the year's whole day, not the page's tiles. A year that goes
    on from the page before had its places there (its heading is already shown), and
    gets none here: no year's day is counted twice."""
    asked = [y["year"] for y in years if after is None or y["year"] != after.year]
    found: dict[int, list[dict[str, Any]]] = {}
    for row in await reads.assets_places_of_years_on_day(
        pool,
        month=span.month,
        days=sorted({span.first_day, span.last_day}),
        years=asked,
        per_year=PLACES_PER_YEAR,
        owner=owner,
    ):
        found.setdefault(row["captured_year"], []).append(
            {
                "city": row["place_city"],
                "country": row["place_country"],
                "country_code": row["place_country_code"],
                "count": int(row["photos"]),
                "shown": place_text(
                    row["place_city"], row["place_country"], row["place_country_code"]
                ),
            }
        )
    for year in years:
        places = found.get(year["year"], [])
        year["places"] = places
        year["places_shown"] = places_line(p["shown"] for p in places)


LEAP_YEAR = 2000
"""A leap year, whose 366 days place every month and day in the year's circle."""


def near_date(day: date, month: int, month_day: int) -> date:
    """The day of ``day``'s year with that month and day: its page shows that month and
    day of the years before. 29 February of a common year is its 28th, which shows the
    29th too (:func:`span_of`)."""
    if (month, month_day) == (2, 29) and not calendar.isleap(day.year):
        return date(day.year, 2, 28)
    return date(day.year, month, month_day)


async def days_near(pool: reads.Pool, day: date, *, owner: str | None) -> list[dict[str, Any]]:
    """Where an empty day leads: the nearest month and day before ``day``'s and the
    nearest after (around the year's end), by how many days of the year apart, that
    ``day``'s page would show photos of (``owner``'s enabled configs' live assets of the
    years before ``day``'s). ``[{"side", "date", "days_away"}]``, before first; a side
    without one is left out, and one day nearest both ways is given once (as before)."""
    span = span_of(day)
    position = date(LEAP_YEAR, day.month, day.day).timetuple().tm_yday
    rows = await reads.assets_nearest_days(
        pool,
        position=position,
        month=span.month,
        days=sorted({span.first_day, span.last_day}),
        before_year=span.before_year,
        owner=owner,
    )
    near: list[dict[str, Any]] = []
    for row in sorted(rows, key=lambda r: r["side"] != "before"):
        shown = near_date(day, row["month"], row["day"])
        if any(n["date"] == shown.isoformat() for n in near):
            continue
        near.append({"side": row["side"], "date": shown.isoformat(), "days_away": row["days_away"]})
    return near


async def on_this_day(
    pool: reads.Pool,
    day: date,
    after: Cursor | None = None,
    limit: int = PAGE_TILES,
    *,
    owner: str | None,
) -> dict[str, Any]:
    """A page of the document of ``day``: ``{"date", "count", "years": [{"year",
    "years_ago", "places", "places_shown", "people",
    "people_line", "assets": [...]}], "next", "near"}``, the
    years newest first, each year's assets newest first (the JSON of
    ``/api/on-this-day`` and what the home page shows): the ``limit`` tiles after
    ``after`` (from the first, without it), ``count`` of them, and ``next`` the cursor
    of the following page, or None after the day's last tile. A year can go on into the
    next page. ``near``: for a day with nothing, the nearest days that have something
    (:func:`days_near`); else empty. Only the live assets of ``owner``'s enabled configs
    (None: every owner's, an admin's view; ADR 0044). Three queries: the page's assets
    (one more than ``limit``, to know whether a next page exists), the members of its
    bursts, and its years' places (for an empty day, the nearest days' instead)."""
    span = span_of(day)
    start = after or Cursor.start(span)
    rows = await reads.assets_on_day(
        pool,
        month=span.month,
        days=sorted({span.first_day, span.last_day}),
        before_year=span.before_year,
        after=(start.year, start.local, start.id),
        limit=limit + 1,
        owner=owner,
    )
    more = len(rows) > limit
    rows = rows[:limit]
    burst_ids = sorted({r["burst_id"] for r in rows if r["burst_id"] is not None})
    members: dict[int, list[dict[str, Any]]] = {}
    for member in await reads.assets_of_bursts(pool, burst_ids, owner=owner):
        members.setdefault(member["burst_id"], []).append(_member(member))
    group_ids = sorted({r["similar_group_id"] for r in rows if r["similar_group_id"] is not None})
    similar: dict[int, list[dict[str, Any]]] = {}
    for member in await reads.assets_of_similar_groups(pool, group_ids, owner=owner):
        similar.setdefault(member["similar_group_id"], []).append(_member(member))
    years: list[dict[str, Any]] = []
    for row in rows:
        if not years or years[-1]["year"] != row["captured_year"]:
            year = row["captured_year"]
            years.append({"year": year, "years_ago": day.year - year, "assets": []})
        tile = _tile(
            row, members.get(row["burst_id"], ()), similar.get(row["similar_group_id"], ())
        )
        years[-1]["assets"].append(tile)
    await _add_people(pool, span, years, owner=owner)
    await _add_places(pool, span, years, after, owner=owner)
    return {
        "date": day.isoformat(),
        "count": len(rows),
        "years": years,
        "next": Cursor.of(rows[-1]).encode() if more else None,
        # An empty day's way on (one more query, only then).
        "near": await days_near(pool, day, owner=owner) if after is None and not rows else [],
    }
