"""The People pages, their API and a face's picture on real PostgreSQL (ADR 0068): what
each viewer sees (their configs' people, nothing of another's: the same 404 as for
nothing), renaming, merging, splitting and moving as actions (signed in, a session's
CSRF token, not read-only), the picture cut from the preview and kept as a proxy is,
the page without people, and "On this day" naming who is in a year's photos."""

from __future__ import annotations

import io
import os
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from PIL import Image
from psycopg_pool import AsyncConnectionPool

from safelight.testing.people import Family, faces_of, make_family, person_exists
from safelight.testing.web import (
    TODAY,
    Web,
    as_viewer,
    clock_on,
    open_web,
    session_for,
    web_settings,
)
from safelight.web.acting import CSRF_HEADER

pytestmark = pytest.mark.integration

NOW = datetime(2026, 6, 15, 12, tzinfo=UTC)


@pytest.fixture
async def family(web: Web) -> AsyncIterator[Family]:
    yield await make_family(web.pool, web.settings.proxies, TODAY, NOW)


def person_ids(document: list[dict[str, Any]]) -> list[int]:
    return [p["id"] for p in document]


# --- reads ---------------------------------------------------------------------------


async def test_the_people_page_lists_each_person_with_a_face_and_counts(
    web: Web, family: Family
) -> None:
    listed = (await web.client.get("/api/people")).json()
    assert person_ids(listed) == [family.grandma, family.ana, family.unnamed, family.bobs]
    grandma = listed[0]
    assert (grandma["name"], grandma["photo_count"], grandma["face_count"]) == ("Grandma", 3, 3)
    assert grandma["cover"].startswith(f"/proxies/faces/{family.faces['grandma:photo-1y']}/")
    assert "cover_preview_path" not in grandma  # a proxy's path is never told

    page = await web.client.get("/people")
    assert page.status_code == 200
    assert page.headers["cache-control"] == "no-store"
    html = page.text
    assert f'data-person-id="{family.grandma}"' in html
    assert f'href="/people/{family.grandma}"' in html
    assert f'src="{grandma["cover"]}"' in html
    assert "3 photos" in html and "not named yet" in html
    assert 'id="nav-people" href="/people" aria-current="page"' in html


async def test_a_persons_page_shows_their_photos_by_date_newest_first(
    web: Web, family: Family
) -> None:
    document = (await web.client.get(f"/api/people/{family.grandma}")).json()
    ids = family.alice.ids
    assert [p["id"] for p in document["photos"]] == [
        ids["photo-1y"],
        ids["burst-3y-a"],
        ids["jpeg-3y"],
    ]
    assert [p["date"] for p in document["photos"]] == ["2025-06-15", "2023-06-15", "2023-06-15"]
    # What Grandma may be merged into: the other people of her config, not bob's.
    assert [o["id"] for o in document["others"]] == [family.ana, family.unnamed]

    html = (await web.client.get(f"/people/{family.grandma}")).text
    assert html.index('data-date="2025-06-15"') < html.index('data-date="2023-06-15"')
    assert f'value="{family.faces["grandma:jpeg-3y"]}"' in html  # a face to choose
    assert 'id="rename-input"' in html and 'value="Grandma"' in html
    assert f'<option value="{family.ana}">Ana (2 photos)</option>' in html


async def test_a_viewer_of_another_config_sees_nothing_of_it_and_acts_on_nothing(
    web: Web, family: Family
) -> None:
    bob = await as_viewer(web, "bob")
    assert person_ids((await bob.get("/api/people")).json()) == [family.bobs]
    assert f"/people/{family.grandma}" not in (await bob.get("/people")).text
    unseen = await bob.get(f"/api/people/{family.grandma}")
    absent = await bob.get("/api/people/999999")
    assert (unseen.status_code, absent.status_code) == (404, 404)
    assert unseen.json()["error"] == f"there is no person {family.grandma}"
    assert (await bob.get(f"/people/{family.grandma}")).status_code == 404
    cover = (await web.client.get("/api/people")).json()[0]["cover"]
    picture = await bob.get(cover)
    assert (picture.status_code, picture.json()["error"]) == (404, "there is no such proxy")
    for path, body in [
        (f"/api/people/{family.grandma}/name", {"name": "Mine"}),
        (f"/api/people/{family.ana}/merge", {"into": family.grandma}),
        (f"/api/people/{family.grandma}/split", {"faces": [family.faces["grandma:jpeg-3y"]]}),
        (f"/api/faces/{family.faces['grandma:jpeg-3y']}/move", {"person": family.bobs}),
    ]:
        refused = await bob.post(path, json=body)
        assert refused.status_code == 404, (path, refused.text)
    async with web.pool.connection() as conn:
        assert await person_exists(conn, family.ana)
        assert len(await faces_of(conn, family.grandma)) == 4
    listed = (await web.client.get("/api/people")).json()
    assert listed[0]["name"] == "Grandma"


async def test_the_page_without_people_says_how_to_turn_faces_on(web: Web) -> None:
    html = (await web.client.get("/people")).text
    assert 'id="no-people"' in html
    assert "SAFELIGHT_FACES=1" in html and "docs/faces.md" in html


# --- edits ---------------------------------------------------------------------------


async def test_a_person_is_renamed_and_cleared_by_the_owner(web: Web, family: Family) -> None:
    alice = await as_viewer(web, "alice")
    named = await alice.post(f"/api/people/{family.unnamed}/name", json={"name": " Jo "})
    assert named.status_code == 200, named.text
    assert named.json()["outcome"] == "named"
    assert named.json()["message"] == f"person {family.unnamed} is Jo now"
    assert named.json()["person"]["named_by"] == "alice"
    assert named.json()["person"]["named_at"] == web.clock.now().isoformat()
    assert "named by alice" in (await alice.get(f"/people/{family.unnamed}")).text
    cleared = await alice.post(f"/api/people/{family.unnamed}/name", json={"name": None})
    assert (cleared.status_code, cleared.json()["person"]["name"]) == (200, None)
    blank = await alice.post(f"/api/people/{family.unnamed}/name", json={"name": "  "})
    assert blank.status_code == 400 and "must not be blank" in blank.json()["error"]
    wrong = await alice.post(f"/api/people/{family.unnamed}/name", json={"name": 7})
    assert wrong.status_code == 400


async def test_a_merge_through_the_api_and_its_refusal_across_configs(
    web: Web, family: Family
) -> None:
    merged = await web.client.post(f"/api/people/{family.unnamed}/merge", json={"into": family.ana})
    assert merged.status_code == 200, merged.text
    assert merged.json()["message"] == "merged into Ana: 2 faces moved"
    across = await web.client.post(f"/api/people/{family.bobs}/merge", json={"into": family.ana})
    assert across.status_code == 409
    assert "merged only within one config" in across.json()["error"]
    for body in ({}, {"into": "1"}, {"into": True}, {"into": 0}):
        bad = await web.client.post(f"/api/people/{family.ana}/merge", json=body)
        assert bad.status_code == 400 and 'send {"into": ID}' in bad.json()["error"]
    async with web.pool.connection() as conn:
        assert not await person_exists(conn, family.unnamed)
        assert await person_exists(conn, family.bobs)


async def test_a_split_and_a_move_through_the_api(web: Web, family: Family) -> None:
    chosen = family.faces["grandma:jpeg-3y"]
    split = await web.client.post(f"/api/people/{family.grandma}/split", json={"faces": [chosen]})
    assert split.status_code == 200, split.text
    new = split.json()["person"]["id"]
    moved = await web.client.post(f"/api/faces/{chosen}/move", json={"person": family.ana})
    assert moved.status_code == 200, moved.text
    async with web.pool.connection() as conn:
        assert (await faces_of(conn, family.ana))[chosen] == "person"
        assert not await person_exists(conn, new)  # unnamed, and its only face moved
    bodies: list[dict[str, Any]] = [
        {"faces": []},
        {"faces": "1"},
        {"faces": [True]},
        {"faces": [-1]},
    ]
    for body in bodies:
        bad = await web.client.post(f"/api/people/{family.grandma}/split", json=body)
        assert bad.status_code == 400, body
    not_json = await web.client.post(f"/api/people/{family.grandma}/split", content=b"faces")
    assert not_json.status_code == 400


async def test_an_edit_needs_the_sessions_csrf_token_and_a_dashboard_that_acts(
    pool: AsyncConnectionPool[Any], database_url: str, tmp_path: Path, web: Web, family: Family
) -> None:
    forged = await web.client.post(
        f"/api/people/{family.grandma}/name", json={"name": "X"}, headers={CSRF_HEADER: "no"}
    )
    assert forged.status_code == 403
    settings = web_settings(database_url, tmp_path)
    async with open_web(pool, settings, clock=clock_on(TODAY), read_only=True) as read_only:
        await session_for(read_only)
        refused = await read_only.client.post(
            f"/api/people/{family.grandma}/name", json={"name": "X"}
        )
        assert refused.status_code == 403
        html = (await read_only.client.get(f"/people/{family.grandma}")).text
        assert 'id="rename-form"' not in html  # a read-only page offers no edit
    listed = (await web.client.get("/api/people")).json()
    assert listed[0]["name"] == "Grandma"


# --- a face's picture ----------------------------------------------------------------


async def test_a_face_is_cut_from_the_preview_and_kept_as_a_proxy_is(
    web: Web, family: Family
) -> None:
    cover = (await web.client.get("/api/people")).json()[0]["cover"]
    picture = await web.client.get(cover)
    assert picture.status_code == 200
    assert picture.headers["content-type"] == "image/jpeg"
    assert picture.headers["cache-control"] == "private, no-cache"
    with Image.open(io.BytesIO(picture.content)) as image:
        # The preview is 24 x 16; the face 12 x 11 px with its margin: all of 16 high.
        assert image.size == (16, 16)
    again = await web.client.get(cover, headers={"If-None-Match": picture.headers["etag"]})
    assert again.status_code == 304
    face_id = family.faces["grandma:photo-1y"]
    stale = await web.client.get(f"/proxies/faces/{face_id}/0123456789abcdef")
    malformed = await web.client.get(f"/proxies/faces/{face_id}/nothex")
    assert (stale.status_code, malformed.status_code) == (404, 404)


async def test_a_face_is_not_cut_from_a_link_or_a_deleted_photo(web: Web, family: Family) -> None:
    cover = (await web.client.get("/api/people")).json()[0]["cover"]
    async with web.pool.connection() as conn:
        cur = await conn.execute(
            "SELECT path FROM proxy_files WHERE asset_id = %s AND proxy_type = 'full_preview'",
            (family.alice.ids["photo-1y"],),
        )
        row = await cur.fetchone()
    assert row is not None
    preview = web.settings.proxies / row[0]
    outside = preview.parent / "outside.jpg"
    preview.rename(outside)
    os.symlink(outside, preview)
    assert (await web.client.get(cover)).status_code == 404
    preview.unlink()
    outside.rename(preview)
    assert (await web.client.get(cover)).status_code == 200
    async with web.pool.connection() as conn:
        await conn.execute(
            "UPDATE assets SET is_deleted = true, deleted_at = %s WHERE id = %s",
            (NOW, family.alice.ids["photo-1y"]),
        )
    assert (await web.client.get(cover)).status_code == 404


async def test_signed_out_a_face_is_not_found(anonymous: Web, family: Family) -> None:
    face_id = family.faces["grandma:photo-1y"]
    response = await anonymous.client.get(f"/proxies/faces/{face_id}/0123456789abcdef")
    assert response.status_code == 404
    assert (await anonymous.client.get("/api/people")).status_code == 401


# --- On this day ---------------------------------------------------------------------


async def test_on_this_day_names_who_is_in_each_years_photos(web: Web, family: Family) -> None:
    document = (await web.client.get("/api/on-this-day")).json()
    lines = {y["year"]: y["people_line"] for y in document["years"]}
    # 2025: photo-1y, Grandma and Ana; 2023: jpeg-3y and burst-3y-a (Grandma), motion-3y
    # (Ana); 2024 and 2022 only the unnamed person: no line.
    assert lines[2025] == "with Ana and Grandma"
    assert lines[2023] == "with Grandma and Ana"
    assert lines[2024] is None and lines[2022] is None
    html = (await web.client.get("/")).text
    assert '<p class="year-people">with Grandma and Ana</p>' in html
    bob = await as_viewer(web, "bob")
    bobs = (await bob.get("/api/on-this-day")).json()
    assert all(y["people_line"] is None for y in bobs["years"])
