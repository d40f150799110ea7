"""The "Failed files" page and its API, and its "try again" for a file, a reason and a
config (#31 item 1, ADR 0058), on real PostgreSQL: grouped by reason (newest group
first, newest file first inside), paged by a keyset that loses and repeats no file,
scoped to the viewer (another owner's failures are never listed nor made due); and the
queue's word when items wait with no Worker."""

from __future__ import annotations

import html
import re
from datetime import datetime, timedelta
from typing import Any
from uuid import UUID

import httpx
import pytest

from safelight.handlers import CRAWL
from safelight.library.catalogue import assets
from safelight.observe.presence import Presence
from safelight.testing.rows import add_config
from safelight.testing.web import Web, as_viewer
from safelight.views.failedfiles import NEXT_CRAWL, FileCursor, failed_by_reason
from safelight.web.actions import NO_FAILED_FILE

pytestmark = pytest.mark.integration

CORRUPT = "corrupt image: broken data stream"
EMPTY = "empty file"


async def fail(
    web: Web,
    config: UUID,
    path: str,
    reason: str,
    minutes: float,
    *,
    retry_days: float = 9,
    opened: bool = True,
) -> None:
    """``path`` failed for ``reason`` ``minutes`` after the clock's now, as a crawl
    records it; read again unchanged ``retry_days`` later. Not ``opened``: it failed
    before it was opened, so nothing of the file is known (then the next crawl reads it)."""
    at = web.clock.now() + timedelta(minutes=minutes)
    version = assets.FileVersion(10, 20, 30) if opened else None
    retry = at + timedelta(days=retry_days)
    async with web.pool.connection() as conn:
        await assets.record_error(conn, config, path, reason, at, version, retry)


async def documents(client: httpx.AsyncClient, **params: str) -> dict[str, Any]:
    response = await client.get("/api/failed-files", params=params)
    assert response.status_code == 200, response.text
    document: dict[str, Any] = response.json()
    return document


def shown(document: dict[str, Any]) -> list[tuple[str, str, list[str]]]:
    """Each group as (config, reason, its paths in order)."""
    return [
        (g["config_id"], g["reason"], [f["path"] for f in g["rows"]]) for g in document["groups"]
    ]


async def crawls_queued(web: Web, config: UUID) -> int:
    async with web.pool.connection() as conn:
        cur = await conn.execute(
            "SELECT count(*) FROM work_items WHERE kind = %s AND storage_config_id = %s"
            " AND status = 'queued'",
            (CRAWL.name, config),
        )
        row = await cur.fetchone()
    assert row is not None
    return int(row[0])


async def waiting(web: Web, config: UUID) -> set[str]:
    """The failed files of ``config`` not due yet at the clock's now."""
    async with web.pool.connection() as conn:
        cur = await conn.execute(
            "SELECT file_path FROM asset_errors WHERE storage_config_id = %s AND retry_after > %s",
            (config, web.clock.now()),
        )
        return {row[0] for row in await cur.fetchall()}


async def test_failed_files_group_by_reason_newest_first(web: Web) -> None:
    alice = await add_config(web.pool, web.clock, "alice", "/photos/alice")
    await fail(web, alice, "2019/a.jpg", CORRUPT, 1)
    await fail(web, alice, "2019/b.jpg", CORRUPT, 5)
    await fail(web, alice, "empty.jpg", EMPTY, 3, opened=False)
    await fail(web, alice, "2020/c.jpg", CORRUPT, 2)

    document = await documents(web.client)

    config = str(alice)
    # The newest failure's reason first; inside a reason, the newest file first.
    assert shown(document) == [
        (config, CORRUPT, ["2019/b.jpg", "2020/c.jpg", "2019/a.jpg"]),
        (config, EMPTY, ["empty.jpg"]),
    ]
    corrupt, empty = document["groups"]
    assert (corrupt["files"], corrupt["root"], corrupt["owner"]) == (3, "/photos/alice", "alice")
    assert corrupt["next"] is None
    first = corrupt["rows"][0]
    assert datetime.fromisoformat(first["last_seen_at"]) == web.clock.now() + timedelta(minutes=5)
    assert first["failures"] == 1
    assert first["due"] is False
    assert datetime.fromisoformat(first["retry_after"]) == web.clock.now() + timedelta(
        days=9, minutes=5
    )
    assert empty["rows"][0]["due"] is True
    # Failing again counts, keeps the first time and moves the file to the top.
    await fail(web, alice, "2019/a.jpg", CORRUPT, 9)
    again = (await documents(web.client))["groups"][0]["rows"][0]
    assert (again["path"], again["failures"]) == ("2019/a.jpg", 2)
    assert datetime.fromisoformat(again["first_seen_at"]) == web.clock.now() + timedelta(minutes=1)

    page = (await web.client.get("/failed")).text
    assert "2019/a.jpg" in page and CORRUPT in page and EMPTY in page
    assert NEXT_CRAWL in page and "when it changes, or after " in page
    assert f'data-action="/api/configs/{alice}/retry-failed?reason=' in page
    assert f'data-action="/api/configs/{alice}/retry-failed?path=2019%2Fa.jpg"' in page
    configs = (await web.client.get("/configs")).text
    assert f'href="/failed?config={alice}">4 files</a>' in configs
    assert 'id="nav-failed" href="/failed"' in configs


async def test_a_reason_pages_by_keyset_without_losing_or_repeating_a_file(web: Web) -> None:
    alice = await add_config(web.pool, web.clock, "alice", "/photos/alice")
    # Seven files, three of them failed at the same moment: the path breaks the tie.
    expected = []
    for n, minutes in enumerate((7, 6, 5, 5, 5, 2, 1)):
        await fail(web, alice, f"f{n}.jpg", CORRUPT, minutes)
        expected.append(f"f{n}.jpg")
    await fail(web, alice, "other.jpg", EMPTY, 3)

    overview = await documents(web.client, limit="3")
    corrupt = next(g for g in overview["groups"] if g["reason"] == CORRUPT)
    assert corrupt["files"] == 7 and corrupt["next"] is not None
    seen = [f["path"] for f in corrupt["rows"]]
    cursor = corrupt["next"]
    pages = 1
    while cursor is not None:
        page = await documents(
            web.client, config=str(alice), reason=CORRUPT, after=cursor, limit="3"
        )
        [group] = page["groups"]
        seen += [f["path"] for f in group["rows"]]
        cursor = group["next"]
        pages += 1
    assert seen == expected and pages == 3
    # A cursor past the last file (the files went meanwhile) is a page of none.
    past = FileCursor(web.clock.now() - timedelta(days=1), "zzz").encode()
    empty = await documents(web.client, config=str(alice), reason=CORRUPT, after=past)
    assert shown(empty) == [(str(alice), CORRUPT, [])]
    assert (empty["groups"][0]["files"], empty["groups"][0]["next"]) == (7, None)

    html = (await web.client.get("/failed", params={"limit": "3"})).text
    assert 'class="failed-more"' in html
    bad = await web.client.get(
        "/api/failed-files", params={"config": str(alice), "reason": CORRUPT, "after": "x!"}
    )
    assert bad.status_code == 400
    too_many = await web.client.get("/api/failed-files", params={"limit": "201"})
    assert too_many.status_code == 400


async def test_an_owner_never_sees_nor_retries_another_owners_failures(web: Web) -> None:
    alice = await add_config(web.pool, web.clock, "alice", "/photos/alice")
    bob = await add_config(web.pool, web.clock, "bob", "/photos/bob")
    await fail(web, alice, "alice-secret.jpg", CORRUPT, 1)
    await fail(web, bob, "bob.jpg", CORRUPT, 2)
    as_alice, as_bob = await as_viewer(web, "alice"), await as_viewer(web, "bob")

    # The read itself filters by owner: without it, bob's list would hold alice's file.
    assert shown(await documents(as_bob)) == [(str(bob), CORRUPT, ["bob.jpg"])]
    assert shown(await documents(as_bob, config=str(alice))) == []
    assert shown(await documents(as_alice)) == [(str(alice), CORRUPT, ["alice-secret.jpg"])]
    listed = await failed_by_reason(web.pool, web.clock.now(), owner="bob", per_reason=None)
    assert [f["path"] for g in listed for f in g["rows"]] == ["bob.jpg"]
    page = (await as_bob.get("/failed")).text
    assert "bob.jpg" in page and "alice-secret.jpg" not in page
    # Another owner's reason page answers as one of no config.
    theirs = await as_bob.get("/api/failed-files", params={"config": str(alice), "reason": CORRUPT})
    absent = await as_bob.get(
        "/api/failed-files", params={"config": str(UUID(int=0)), "reason": CORRUPT}
    )
    assert (theirs.status_code, theirs.json()) == (absent.status_code, absent.json())
    assert theirs.status_code == 404

    for query in ("", f"?reason={CORRUPT}", "?path=alice-secret.jpg"):
        refused = await as_bob.post(f"/api/configs/{alice}/retry-failed{query}")
        assert refused.status_code == 404, query
    assert await waiting(web, alice) == {"alice-secret.jpg"}
    assert await crawls_queued(web, alice) == 0
    # The admin sees both.
    assert {g["config_id"] for g in (await documents(web.client))["groups"]} == {
        str(alice),
        str(bob),
    }


async def test_try_again_for_a_file_a_reason_and_a_config(web: Web) -> None:
    alice = await add_config(web.pool, web.clock, "alice", "/photos/alice")
    for path, reason, minutes in (
        ("a.jpg", CORRUPT, 1),
        ("b.jpg", CORRUPT, 2),
        ("c.jpg", EMPTY, 3),
        ("d.jpg", EMPTY, 4),
    ):
        await fail(web, alice, path, reason, minutes)
    as_alice = await as_viewer(web, "alice")

    one = await as_alice.post(f"/api/configs/{alice}/retry-failed", params={"path": "c.jpg"})
    assert one.status_code == 200, one.text
    assert one.json()["message"].startswith("1 failed file will be read again")
    assert await waiting(web, alice) == {"a.jpg", "b.jpg", "d.jpg"}
    assert await crawls_queued(web, alice) == 1

    by_reason = await as_alice.post(
        f"/api/configs/{alice}/retry-failed", params={"reason": CORRUPT}
    )
    assert by_reason.status_code == 200, by_reason.text
    assert by_reason.json()["message"].startswith("2 failed files will be read again")
    assert await waiting(web, alice) == {"d.jpg"}
    assert await crawls_queued(web, alice) == 1  # the one queued crawl reads them all

    for params in ({"reason": "no such reason"}, {"path": "nowhere.jpg"}):
        missing = await as_alice.post(f"/api/configs/{alice}/retry-failed", params=params)
        assert (missing.status_code, missing.json()["message"]) == (404, NO_FAILED_FILE)
    both = await as_alice.post(
        f"/api/configs/{alice}/retry-failed", params={"reason": EMPTY, "path": "d.jpg"}
    )
    assert both.status_code == 400
    assert await waiting(web, alice) == {"d.jpg"}

    config = await as_alice.post(f"/api/configs/{alice}/retry-failed")
    assert config.status_code == 200 and config.json()["message"].startswith("4 failed files")
    assert await waiting(web, alice) == set()


async def test_the_queue_says_when_items_wait_and_no_worker_runs(web: Web) -> None:
    alice = await add_config(web.pool, web.clock, "alice", "/photos/alice")
    status = (await web.client.get("/api/status")).json()
    assert status["no_worker"] is None  # nothing waits

    await CRAWL.enqueue_for(web.app.state.web.store, alice)
    await web.app.state.web.store.enqueue("noop")
    status = (await web.client.get("/api/status")).json()
    assert status["no_worker"] == (
        "2 items wait: no Worker is running. Start one with 'safelight worker'."
    )
    page = (await web.client.get("/queue")).text
    assert "2 items wait: no Worker is running." in page

    presence = Presence(web.pool, web.clock, ["w1"], forget_after=timedelta(days=7))
    await presence.run_once()
    assert (await web.client.get("/api/status")).json()["no_worker"] is None
    # A Worker last seen longer ago than health's window is not running.
    await web.clock.advance(web.settings.health_worker_seen_seconds + 1)
    assert (await web.client.get("/api/status")).json()["no_worker"].startswith("2 items wait")


async def test_a_hostile_name_is_shown_escaped_and_acted_on_as_it_is(web: Web) -> None:
    alice = await add_config(web.pool, web.clock, "alice", "/photos/alice")
    hostile = "trip/\u202egpj.exe & <b>+1.jpg"
    await fail(web, alice, hostile, "corrupt <i>data</i>", 1)

    page = (await web.client.get("/failed")).text
    assert "\u202e" not in page and "<b>" not in page and "<i>data" not in page
    assert "\\u202egpj.exe &amp; &lt;b&gt;+1.jpg" in page
    # The button posts the name itself, not the escape the page shows.
    [action] = re.findall(r'data-action="([^"]*\?path=[^"]*)"', page)
    assert "%E2%80%AE" in action
    response = await web.client.post(html.unescape(action))
    assert response.status_code == 200, response.text
    assert response.json()["message"].startswith("1 failed file")
    assert await waiting(web, alice) == set()
