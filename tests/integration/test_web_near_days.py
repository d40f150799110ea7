"""An empty day's way on, on real PostgreSQL: the nearest days before and after it (by
days of the year, around the year's end) that the viewer's own photos of earlier years
fill, their links on the page, and the capture time as the tiles and preview show it."""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import date
from typing import Any

import pytest

from safelight.testing.fakeclock import FakeClock
from safelight.testing.rows import add_config
from safelight.testing.web import Web, as_viewer
from safelight.testing.weblibrary import WebLibrary, make_web_library
from safelight.web.onthisday import days_near, on_this_day
from safelight.web.reads import QUERIES

pytestmark = pytest.mark.integration


async def two_owners(web: Web) -> tuple[WebLibrary, WebLibrary]:
    """alice's photos of 30 December (2021-2025) and 31 December 2025; bob's of 5 January
    (2021-2025) and 6 January 2025 (``make_web_library``'s around each day)."""
    alice = await make_web_library(
        web.pool, web.settings.proxies, date(2026, 12, 30), owner="alice", root="/photos/alice"
    )
    bob = await make_web_library(
        web.pool, web.settings.proxies, date(2026, 1, 5), owner="bob", root="/photos/bob"
    )
    return alice, bob


def near(side: str, day: str, days_away: int) -> dict[str, Any]:
    return {"side": side, "date": day, "days_away": days_away}


async def test_the_nearest_days_wrap_the_years_end_and_are_only_the_viewers(web: Web) -> None:
    await two_owners(web)
    asked = date(2026, 1, 2)
    # The admin sees both owners: 31 December two days before, 5 January three after.
    assert await days_near(web.pool, asked, owner=None) == [
        near("before", "2026-12-31", 2),
        near("after", "2026-01-05", 3),
    ]
    # Each owner only their own, though the other's days are nearer.
    assert await days_near(web.pool, asked, owner="alice") == [
        near("before", "2026-12-31", 2),
        near("after", "2026-12-30", 363),
    ]
    assert await days_near(web.pool, asked, owner="bob") == [
        near("before", "2026-01-06", 362),
        near("after", "2026-01-05", 3),
    ]
    # A user with no config has nowhere to go.
    assert await days_near(web.pool, asked, owner="carol") == []


async def test_the_nearest_days_hold_photos_the_day_would_show(web: Web) -> None:
    alice, _ = await two_owners(web)
    # Before 2022, alice has 30 December 2021 alone (bare-5y): 31 December's photo is of
    # 2025, and what is deleted, of the asked year or of a disabled config counts not.
    # One day nearest both ways is given once.
    assert await days_near(web.pool, date(2022, 1, 2), owner="alice") == [
        near("before", "2022-12-30", 3)
    ]
    async with web.pool.connection() as conn:
        await conn.execute(
            "UPDATE assets SET is_deleted = true, deleted_at = now() WHERE id = %s",
            (alice.ids["bare-5y"],),
        )
    assert await days_near(web.pool, date(2022, 1, 2), owner="alice") == []
    async with web.pool.connection() as conn:
        await conn.execute(
            "UPDATE storage_configs SET active = false WHERE id = %s", (alice.config_id,)
        )
    assert await days_near(web.pool, date(2026, 1, 2), owner="alice") == []


async def test_29_february_is_reached_through_the_28th_of_a_common_year(web: Web) -> None:
    library = await make_web_library(web.pool, web.settings.proxies, date(2026, 6, 15))
    async with web.pool.connection() as conn:
        await conn.execute(
            "UPDATE assets SET captured_local = '2024-02-29 08:00', captured_at ="
            " '2024-02-29 08:00+00', captured_year = 2024, captured_month = 2,"
            " captured_day = 29 WHERE id = %s",
            (library.ids["photo-1y"],),
        )
    # 5 March is the 65th day of a leap year, 29 February the 60th.
    found = await days_near(web.pool, date(2027, 3, 5), owner="alice")
    assert found[0] == near("before", "2027-02-28", 5)
    # That page (28 February of a common year) shows the 29th of the leap years.
    landed = await on_this_day(web.pool, date(2027, 2, 28), owner="alice")
    assert [a["id"] for y in landed["years"] for a in y["assets"]] == [library.ids["photo-1y"]]
    # In a leap year the 29th is its own day.
    assert (await days_near(web.pool, date(2028, 3, 5), owner="alice"))[0] == near(
        "before", "2028-02-29", 5
    )


async def test_an_empty_days_page_links_the_nearest_days_of_the_viewer(web: Web) -> None:
    await two_owners(web)
    alice = await as_viewer(web, "alice")
    page = await alice.get("/?date=2026-01-02")
    assert page.status_code == 200
    assert "Nothing was captured on 2 January in the years before 2026" in page.text
    links = re.findall(
        r'<a class="near-day" data-side="(\w+)" data-date="([\d-]+)" href="([^"]+)"', page.text
    )
    assert links == [
        ("before", "2026-12-31", "/?date=2026-12-31"),
        ("after", "2026-12-30", "/?date=2026-12-30"),
    ]
    assert "31 December</a> (2 days before)" in page.text
    assert "30 December</a> (363 days after)" in page.text
    # Followed, the link shows that day's photos.
    landed = (await alice.get("/api/on-this-day?date=2026-12-31")).json()
    assert landed["count"] == 1 and landed["near"] == []
    # A user with nothing yet is told how to add a folder, and offered no link.
    carol = await as_viewer(web, "carol")
    empty = await carol.get("/?date=2026-01-02")
    assert 'class="near-day"' not in empty.text
    assert 'id="no-photos"' in empty.text
    assert "<code>safelight run FOLDER --user carol</code>" in empty.text


async def test_the_capture_time_is_local_to_the_second_with_its_offset_when_known(
    web: Web,
) -> None:
    library = await make_web_library(web.pool, web.settings.proxies, date(2026, 6, 15))
    async with web.pool.connection() as conn:
        # A time with microseconds, and one dated by its file's time on disk (an instant).
        await conn.execute(
            "UPDATE assets SET captured_local = captured_local + interval '0.345678 seconds',"
            " captured_at = captured_at + interval '0.345678 seconds' WHERE id = %s",
            (library.ids["photo-1y"],),
        )
        await conn.execute(
            "UPDATE assets SET captured_at_source = 'file' WHERE id = %s",
            (library.ids["motion-3y"],),
        )
    day = (await web.client.get("/api/on-this-day?date=2026-06-15")).json()
    shown = {a["id"]: a["captured_shown"] for y in day["years"] for a in y["assets"]}
    ids = library.ids
    assert shown[ids["photo-1y"]] == "2025-06-15 10:00:00 +02:00"
    assert shown[ids["tokyo-4y"]] == "2022-06-15 00:30:00 +09:00"
    # Zone unknown (the wall clock read as UTC): no offset claimed.
    assert shown[ids["bare-5y"]] == "2021-06-15 15:00:00"
    # A file's time is an instant: its zero offset is UTC, and says so.
    assert shown[ids["motion-3y"]] == "2023-06-15 18:00:00 +00:00"
    # A burst's members too, in the preview.
    burst = next(a for y in day["years"] for a in y["assets"] if a["burst"])
    assert [m["captured_shown"] for m in burst["burst"]["members"]] == [
        "2023-06-15 12:00:00",
        "2023-06-15 12:01:00",
        "2023-06-15 12:02:00",
    ]
    page = await web.client.get("/?date=2026-06-15")
    assert 'title="photo-1y.jpg, 2025-06-15 10:00:00 +02:00"' in page.text


async def test_the_nearest_days_are_probed_on_the_on_this_day_index(web: Web) -> None:
    """EXPLAIN ANALYZE on 20,000 assets over 20 years: each month-day, nearest first, is
    one probe of ix_assets_on_this_day, and the walk stops at the first day that answers
    (here the next day each way): no join that reads every asset of the viewer."""
    async with web.pool.connection() as conn:
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
            FROM generate_series(1, 20000) n,
                 LATERAL (SELECT timestamp '2006-01-01'
                          + (n * 7919 %% 7300) * interval '1 day'
                          + (n %% 86400) * interval '1 second' AS t) s
            """,
            {"config": config},
        )
        await conn.execute("ANALYZE assets")
        cur = await conn.execute(
            ("EXPLAIN (ANALYZE, FORMAT JSON) " + QUERIES["assets_nearest_days"]).encode(),
            {"position": 167, "month": 6, "days": [15], "year": 2026, "owner": "bench"},
        )
        row = await cur.fetchone()
    assert row is not None
    nodes = list(_nodes(row[0][0]["Plan"]))
    on_assets = [n for n in nodes if n.get("Relation Name") == "assets"]
    assert len(on_assets) == 2, on_assets  # one probe a side
    for probe in on_assets:
        assert probe["Node Type"] == "Index Scan", probe
        assert probe["Index Name"] == "ix_assets_on_this_day", probe
        assert probe["Actual Loops"] == 1, probe  # 14 June before, 16 June after
    assert not [n for n in nodes if "Join" in n["Node Type"] or n["Node Type"] == "Hash"]


def _nodes(plan: dict[str, Any]) -> Iterator[dict[str, Any]]:
    yield plan
    for child in plan.get("Plans", ()):
        yield from _nodes(child)
