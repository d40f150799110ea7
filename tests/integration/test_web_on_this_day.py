"""On this day, through the API and the home page, on real PostgreSQL and a generated
library around the fake clock's date: grouping, order, what a library shows and hides,
the day a photo belongs to, the date picker, the 400 for a malformed date, the day in
pages after a cursor, and the index the query runs on."""

from __future__ import annotations

import json
import re
from datetime import date, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from psycopg_pool import AsyncConnectionPool

from safelight.testing.fakeclock import FakeClock
from safelight.testing.rows import add_config
from safelight.testing.web import (
    TODAY,
    Web,
    clock_on,
    library_of,
    open_web,
    session_for,
    web_settings,
)
from safelight.testing.weblibrary import WebLibrary, make_web_library
from safelight.web.onthisday import on_this_day
from safelight.web.reads import QUERIES

pytestmark = pytest.mark.integration


def page_detail(response: Any) -> str:
    """The error page's sentence."""
    found = re.search(r'<p id="error-detail">(.*?)</p>', response.text, re.S)
    assert found is not None, response.text
    return found.group(1)


def names(library: WebLibrary, assets: list[dict[str, Any]]) -> list[str]:
    by_id = {v: k for k, v in library.ids.items()}
    return [by_id[a["id"]] for a in assets]


async def test_the_day_groups_earlier_years_newest_first_as_a_library_shows_them(
    web: Web,
) -> None:
    library = await library_of(web)
    response = await web.client.get("/api/on-this-day")
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/json"
    document = response.json()
    assert document["date"] == "2026-06-15"  # the clock's day, not the wall clock's
    years = [(y["year"], y["years_ago"], names(library, y["assets"])) for y in document["years"]]
    assert years == [
        # Neither the soft-deleted photo nor the next day's; nothing of this year.
        (2025, 1, ["photo-1y"]),
        # The Live Photo's video only through its image.
        (2024, 2, ["video-2y", "live-2y"]),
        # Newest first; the burst as its primary; the RAW through its JPEG.
        (2023, 3, ["motion-3y", "burst-3y-a", "jpeg-3y"]),
        (2022, 4, ["tokyo-4y"]),
        (2021, 5, ["bare-5y"]),
    ]
    assert document["count"] == 8
    assert document["next"] is None  # all of the day in its first page
    tiles = {a["id"]: a for y in document["years"] for a in y["assets"]}
    ids = library.ids
    kinds = {n: tiles[ids[n]]["kind"] for n in ("photo-1y", "video-2y", "live-2y", "motion-3y")}
    assert kinds == {
        "photo-1y": "photo",
        "video-2y": "video",
        "live-2y": "live_photo",
        "motion-3y": "motion_photo",
    }
    live = tiles[ids["live-2y"]]
    assert live["video"].startswith(f"/proxies/{ids['live-2y-video']}/web_video/")
    assert tiles[ids["motion-3y"]]["video"].startswith(f"/proxies/{ids['motion-3y']}/web_video/")
    assert tiles[ids["photo-1y"]]["video"] is None
    burst = tiles[ids["burst-3y-a"]]["burst"]
    assert burst["count"] == 3
    assert [m["id"] for m in burst["members"]] == [ids[f"burst-3y-{x}"] for x in "abc"]
    assert all(m["preview"] and m["blurhash"] for m in burst["members"])
    photo = tiles[ids["photo-1y"]]
    assert photo["thumbnail"].startswith(f"/proxies/{ids['photo-1y']}/thumbnail/")
    assert photo["preview"].startswith(f"/proxies/{ids['photo-1y']}/full_preview/")
    assert photo["blurhash"] == "LEHV6nWB2yk8pyo0adR*.7kCMdnj"
    assert photo["captured_local"] == "2025-06-15T10:00:00"
    bare = tiles[ids["bare-5y"]]
    assert (bare["thumbnail"], bare["preview"], bare["blurhash"]) == (None, None, None)


async def test_a_photo_belongs_to_its_own_local_date_not_its_utc_one(web: Web) -> None:
    library = await library_of(web)
    # tokyo-4y: 00:30 at +09:00 on 15 June, 15:30 UTC on the 14th.
    on_the_14th = (await web.client.get("/api/on-this-day?date=2026-06-14")).json()
    shown = [a["id"] for y in on_the_14th["years"] for a in y["assets"]]
    assert library.ids["tokyo-4y"] not in shown
    tile = next(
        a
        for y in (await web.client.get("/api/on-this-day")).json()["years"]
        for a in y["assets"]
        if a["id"] == library.ids["tokyo-4y"]
    )
    assert tile["captured_at"] == "2022-06-14T15:30:00+00:00"
    assert tile["captured_local"] == "2022-06-15T00:30:00"


async def test_today_is_the_injected_clocks_date_in_the_given_zone(
    pool: AsyncConnectionPool[Any], database_url: str, tmp_path: Path
) -> None:
    settings = web_settings(database_url, tmp_path)
    await make_web_library(pool, settings.proxies, TODAY)
    # 22:00 UTC on the 15th is already the 16th in Tokyo: the next day's photo.
    late = clock_on(TODAY, hour=22)
    async with open_web(pool, settings, clock=late) as web:
        await session_for(web)
        assert (await web.client.get("/api/on-this-day")).json()["date"] == "2026-06-15"
    async with open_web(pool, settings, clock=late, zone=timezone(timedelta(hours=9))) as web:
        await session_for(web)
        document = (await web.client.get("/api/on-this-day")).json()
        page = await web.client.get("/")
    assert document["date"] == "2026-06-16"
    assert [a["file_name"] for y in document["years"] for a in y["assets"]] == ["other-day-1y.jpg"]
    assert 'data-date="2026-06-16"' in page.text
    assert "1 year ago" in page.text


def tile_ids(html: str) -> list[int]:
    return [int(n) for n in re.findall(r'<li class="tile[^"]*"\s+data-asset-id="(\d+)"', html)]


async def test_the_home_page_shows_the_days_tiles_and_embeds_the_apis_document(web: Web) -> None:
    library = await library_of(web)
    ids = library.ids
    page = await web.client.get("/")
    assert page.status_code == 200
    assert page.headers["content-type"].startswith("text/html")
    api = (await web.client.get("/api/on-this-day")).json()
    assert tile_ids(page.text) == [a["id"] for y in api["years"] for a in y["assets"]]
    for heading in ("1 year ago", "2 years ago", "3 years ago", "4 years ago", "5 years ago"):
        assert heading in page.text
    assert re.search(r'id="year-2023" data-year="2023" data-years-ago="3"', page.text)
    burst = re.search(rf'data-asset-id="{ids["burst-3y-a"]}"[^>]*>', page.text, re.S)
    assert burst is not None and 'data-burst-count="3"' in burst.group(0)
    live = re.search(rf'data-asset-id="{ids["live-2y"]}"[^>]*>', page.text, re.S)
    assert live is not None
    assert f'data-video="/proxies/{ids["live-2y-video"]}/web_video/' in live.group(0)
    assert 'data-kind="live_photo"' in live.group(0)
    assert 'data-blurhash="LEHV6nWB2yk8pyo0adR*.7kCMdnj"' in live.group(0)
    assert 'id="preview"' in page.text
    embedded = re.search(
        r'<script type="application/json" id="on-this-day-data">(.*?)</script>', page.text, re.S
    )
    assert embedded is not None and json.loads(embedded.group(1)) == api
    # Every script and style is the dashboard's own file: nothing from elsewhere.
    for source in re.findall(r'(?:src|href)="([^"]+)"', page.text):
        assert source.startswith("/"), source


async def test_the_date_picker_shows_another_day_and_an_empty_day_says_so(web: Web) -> None:
    library = await library_of(web)
    page = await web.client.get("/?date=2026-06-16")
    assert page.status_code == 200
    assert tile_ids(page.text) == [library.ids["other-day-1y"]]
    assert 'id="day-input" type="date" name="date" value="2026-06-16"' in page.text
    assert 'href="/?date=2026-06-15"' in page.text and 'href="/?date=2026-06-17"' in page.text
    empty = await web.client.get("/?date=2026-01-01")
    assert empty.status_code == 200
    assert tile_ids(empty.text) == []
    assert 'id="empty-day"' in empty.text
    assert "Nothing was captured on 1 January in the years before 2026" in empty.text
    assert (await web.client.get("/api/on-this-day?date=2026-01-01")).json() == {
        "date": "2026-01-01",
        "count": 0,
        "years": [],
        "next": None,
        # The nearest days with photos, around the year's end (tests/integration/
        # test_web_near_days.py): 16 June 199 days before, 15 June 166 days after.
        "near": [
            {"side": "before", "date": "2026-06-16", "days_away": 199},
            {"side": "after", "date": "2026-06-15", "days_away": 166},
        ],
    }
    assert 'id="empty-day"' not in (await web.client.get("/")).text


@pytest.mark.parametrize("text", ["bad", "2026-02-30", "20260615", "2026-W25-1", "2026-6-15"])
async def test_a_malformed_date_is_a_400_that_says_what_is_expected(web: Web, text: str) -> None:
    api = await web.client.get("/api/on-this-day", params={"date": text})
    assert api.status_code == 400
    # What is expected, never what was sent (issue #28: an echo confirms a guess).
    assert "YYYY-MM-DD" in api.json()["error"] and text not in api.json()["error"]
    assert text not in page_detail(await web.client.get("/", params={"date": text}))
    page = await web.client.get("/", params={"date": text})
    assert page.status_code == 400
    assert page.headers["content-type"].startswith("text/html")
    assert "date must be a day as YYYY-MM-DD, such as 2026-06-15" in page.text
    assert api.json()["error"] == "date must be a day as YYYY-MM-DD, such as 2026-06-15"


async def test_28_february_of_a_common_year_also_shows_the_leap_days(
    pool: AsyncConnectionPool[Any], database_url: str, tmp_path: Path
) -> None:
    settings = web_settings(database_url, tmp_path)
    leap = await make_web_library(pool, settings.proxies, date(2024, 2, 29))
    # Around 29 Feb 2024: this-year on that day, tokyo-4y on 29 Feb 2020 (at +09:00);
    # the others on the 28th of common years.
    leap_days = {leap.ids["this-year"], leap.ids["tokyo-4y"]}
    async with open_web(pool, settings, clock=clock_on(date(2027, 2, 28))) as web:
        await session_for(web)
        common = (await web.client.get("/api/on-this-day")).json()
        in_a_leap_year = (await web.client.get("/api/on-this-day?date=2028-02-28")).json()
        on_the_leap_day = (await web.client.get("/api/on-this-day?date=2028-02-29")).json()

    def shown(document: dict[str, Any]) -> dict[int, int]:
        return {a["id"]: y["years_ago"] for y in document["years"] for a in y["assets"]}

    assert {i: shown(common)[i] for i in leap_days} == {
        leap.ids["this-year"]: 3,
        leap.ids["tokyo-4y"]: 7,
    }
    assert len(shown(common)) > len(leap_days)  # the 28th's own photos too
    assert leap_days.isdisjoint(shown(in_a_leap_year))
    assert shown(on_the_leap_day) == {leap.ids["this-year"]: 4, leap.ids["tokyo-4y"]: 8}


async def test_the_query_runs_on_the_days_index(pool: AsyncConnectionPool[Any]) -> None:
    """EXPLAIN on a generated table of 50,000 assets over 20 years: the day's rows are
    found through ix_assets_on_this_day (month, day and the year's bound as its
    conditions), a Live Photo's video is left out through ix_assets_paired, and no step
    reads the whole table."""
    async with pool.connection() as conn:
        config = await add_config(conn, FakeClock(), "bench", "/bench")
        await conn.execute(
            """
            INSERT INTO assets (storage_config_id, file_path, file_name, content_hash,
                size_bytes, modified_at, modified_ns, media_type, captured_at, captured_local,
                captured_at_source, captured_year, captured_month, captured_day,
                last_seen_at, created_at)
            SELECT %(config)s, 'gen/' || n || '.jpg', n || '.jpg', lpad(to_hex(n), 16, '0'),
                   1000, now(), n, 'image', t, t, 'exif', extract(year FROM t),
                   extract(month FROM t), extract(day FROM t), now(), now()
            FROM generate_series(1, 50000) n,
                 LATERAL (SELECT timestamp '2006-01-01'
                          + (n * 7919 %% 7300) * interval '1 day'
                          + (n %% 86400) * interval '1 second' AS t) s
            """,
            {"config": config},
        )
        await conn.execute("ANALYZE assets")
        for days, owner in (([15], None), ([28, 29], None), ([15], "bench")):
            cur = await conn.execute(
                "EXPLAIN (FORMAT JSON) " + QUERIES["assets_on_day"],
                {
                    "month": 6,
                    "days": days,
                    "year": 2026,
                    # The first page's cursor (the year's bound): the whole day ahead.
                    "after_year": 2026,
                    "after_local": datetime.min,
                    "after_id": 0,
                    "limit": 61,
                    "owner": owner,
                },
            )
            plan_row = await cur.fetchone()
            assert plan_row is not None
            nodes = list(_nodes(plan_row[0][0]["Plan"]))
            on_assets = [n for n in nodes if n.get("Relation Name") == "assets"]
            assert {n.get("Index Name") for n in nodes} >= {
                "ix_assets_on_this_day",
                "ix_assets_paired",
            }, nodes
            assert all(n["Node Type"] != "Seq Scan" for n in on_assets), on_assets
            day_scan = next(n for n in nodes if n.get("Index Name") == "ix_assets_on_this_day")
            # The page is a walk of the index from the cursor in the day's order: the
            # cursor an index condition, and no sort of the day's rows (only the merge
            # of two days' pages above their LIMIT).
            assert day_scan["Node Type"] == "Index Scan", day_scan
            assert day_scan["Scan Direction"] == "Backward", day_scan
            assert "captured_year" in day_scan["Index Cond"]
            assert "captured_local" in day_scan["Index Cond"], day_scan["Index Cond"]
            path = _path_to(plan_row[0][0]["Plan"], day_scan)
            below_limit = path[max(i for i, n in enumerate(path) if n["Node Type"] == "Limit") :]
            assert all(n["Node Type"] != "Sort" for n in below_limit), below_limit
    found = await on_this_day(pool, date(2026, 6, 15), owner=None)
    assert found["count"] > 0
    assert [y["year"] for y in found["years"]] == sorted(
        (y["year"] for y in found["years"]), reverse=True
    )


async def pages_of(web: Web, day: str, limit: int) -> list[dict[str, Any]]:
    """Every page of ``day``, ``limit`` tiles each, following ``next`` to the end."""
    pages: list[dict[str, Any]] = []
    params = {"date": day, "limit": str(limit)}
    while True:
        response = await web.client.get("/api/on-this-day", params=params)
        assert response.status_code == 200, response.text
        pages.append(response.json())
        if pages[-1]["next"] is None:
            return pages
        params["after"] = pages[-1]["next"]


def tiles_of(pages: list[dict[str, Any]]) -> list[tuple[int, dict[str, Any]]]:
    return [(y["year"], a) for page in pages for y in page["years"] for a in y["assets"]]


async def test_the_day_in_pages_has_every_tile_once_in_order_across_years_and_ties(
    web: Web,
) -> None:
    # Two libraries of the same shape: every tile's local time is another's too, so the
    # cursor must break the tie on the id, and pages end inside years and at their ends.
    await library_of(web)
    await make_web_library(web.pool, web.settings.proxies, TODAY, owner="bob", root="/bob")
    whole = await pages_of(web, "2026-06-15", 500)
    assert len(whole) == 1 and whole[0]["count"] == 16
    everything = tiles_of(whole)
    order = [(y, a["captured_local"], a["id"]) for y, a in everything]
    assert order == sorted(order, reverse=True)
    assert len({a["captured_local"] for _, a in everything}) == 8  # each time twice
    for limit in (1, 2, 3, 5, 8, 15, 16):
        pages = await pages_of(web, "2026-06-15", limit)
        assert [p["count"] for p in pages] == [
            len(p_years)
            for p_years in ([a for y in p["years"] for a in y["assets"]] for p in pages)
        ]
        assert all(p["count"] == limit for p in pages[:-1]) and 1 <= pages[-1]["count"] <= limit
        assert len(pages) == -(-16 // limit)
        assert tiles_of(pages) == everything, limit  # each tile once, in the day's order
        for page in pages:  # a page's years are the day's, newest first, none twice
            years = [y["year"] for y in page["years"]]
            assert years == sorted(set(years), reverse=True)
            assert all(y["years_ago"] == 2026 - y["year"] for y in page["years"])
    # A burst keeps its members and count in whichever page it falls.
    bursts = [a for _, a in tiles_of(await pages_of(web, "2026-06-15", 1)) if a["burst"]]
    assert [(b["burst"]["count"], len(b["burst"]["members"])) for b in bursts] == [(3, 3)] * 2


async def test_the_leap_days_in_pages_are_one_order_of_both_days(
    pool: AsyncConnectionPool[Any], database_url: str, tmp_path: Path
) -> None:
    settings = web_settings(database_url, tmp_path)
    await make_web_library(pool, settings.proxies, date(2024, 2, 29))
    await make_web_library(pool, settings.proxies, date(2024, 2, 28), owner="bob", root="/b")
    async with open_web(pool, settings, clock=clock_on(date(2027, 2, 28))) as web:
        await session_for(web)
        whole = tiles_of(await pages_of(web, "2027-02-28", 500))
        days = {a["captured_local"][5:10] for _, a in whole}
        assert days == {"02-28", "02-29"}
        order = [(y, a["captured_local"], a["id"]) for y, a in whole]
        assert order == sorted(order, reverse=True)
        for limit in (1, 4):
            assert tiles_of(await pages_of(web, "2027-02-28", limit)) == whole


@pytest.mark.parametrize(
    ("params", "expected"),
    [
        ({"after": "not-a-cursor"}, "after must be the next cursor of a page of this API"),
        ({"after": "MjAyM3x4fDE"}, "after must be the next cursor"),  # "2023|x|1"
        ({"limit": "0"}, "limit must be a whole number from 1 to 500"),
        ({"limit": "many"}, "limit must be a whole number from 1 to 500"),
        ({"limit": "501"}, "limit must be a whole number from 1 to 500"),
    ],
)
async def test_a_malformed_cursor_or_page_size_is_a_400_that_says_what_is_expected(
    web: Web, params: dict[str, str], expected: str
) -> None:
    api = await web.client.get("/api/on-this-day", params={"date": "2026-06-15", **params})
    assert api.status_code == 400
    assert expected in api.json()["error"]
    # What is expected, and nothing of what was sent (issue #28).
    assert api.json()["error"] in (
        "after must be the next cursor of a page of this API, as given",
        "limit must be a whole number from 1 to 500",
    )
    page = await web.client.get("/", params=params)
    if "limit" in params:  # the page takes a page size too (the first page's)
        assert page.status_code == 400 and expected in page.text


async def test_the_home_page_shows_the_first_page_and_where_the_next_one_starts(
    web: Web,
) -> None:
    await library_of(web)
    page = await web.client.get("/?limit=3")
    first = (await web.client.get("/api/on-this-day?limit=3")).json()
    assert tile_ids(page.text) == [a["id"] for y in first["years"] for a in y["assets"]]
    assert len(tile_ids(page.text)) == 3
    assert first["next"] is not None
    assert f'<div id="more" data-next="{first["next"]}">' in page.text
    assert 'id="show-more"' in page.text and 'data-limit="3"' in page.text
    # The last year shown may go on in the next page: its count says so.
    assert "2+ items" in page.text  # 2024's video and Live Photo, 2023's follow
    whole = await web.client.get("/")
    assert 'id="more"' not in whole.text and "+ items" not in whole.text


def _path_to(plan: dict[str, Any], target: dict[str, Any]) -> list[dict[str, Any]]:
    """The nodes from ``plan`` down to ``target``, both included ([] if not below)."""
    if plan is target:
        return [plan]
    for child in plan.get("Plans", ()):
        if found := _path_to(child, target):
            return [plan, *found]
    return []


def _nodes(plan: dict[str, Any]) -> Any:
    yield plan
    for child in plan.get("Plans", ()):
        yield from _nodes(child)


async def test_a_file_name_cannot_end_the_embedded_document_or_add_markup(web: Web) -> None:
    library = await library_of(web)
    hostile = '</script><script src="/x.js"></script><!--<b>photo.jpg'
    async with web.pool.connection() as conn:
        await conn.execute(
            "UPDATE assets SET file_name = %s WHERE id = %s", (hostile, library.ids["photo-1y"])
        )
    page = (await web.client.get("/")).text
    assert '<script src="/x.js">' not in page and "<b>photo" not in page
    embedded = re.search(
        r'<script type="application/json" id="on-this-day-data">(.*?)</script>', page, re.S
    )
    assert embedded is not None
    document = json.loads(embedded.group(1))
    assert document == (await web.client.get("/api/on-this-day")).json()
    assert document["years"][0]["assets"][0]["file_name"] == hostile
