"""The queue, an item and the configs, through the API and their pages, on real
PostgreSQL with the store's own claims and endings on a fake clock: the counts, the
running item with its Worker, attempt and lease left, the failures, the attempts
timeline, a config's counts, last crawl and running item, and 404s for unknown ids."""

from __future__ import annotations

import re

import pytest

from safelight.handlers import CRAWL, NOOP
from safelight.testing.web import (
    Web,
    library_of,
    store_of,
)

pytestmark = pytest.mark.integration

LEASE = 60.0


async def claim(web: Web, worker_id: str, kind: str) -> int:
    item = await store_of(web).claim(worker_id, [kind], lease_seconds=LEASE)
    assert item is not None
    return item.id


async def test_status_shows_counts_the_running_item_with_its_lease_left_and_failures(
    web: Web,
) -> None:
    library = await library_of(web)
    store = store_of(web)
    crawl_id = await CRAWL.enqueue_for(store, library.config_id)
    assert await claim(web, "nas:41-0", CRAWL.name) == crawl_id
    failed_id = await store.enqueue(NOOP.name)
    assert await claim(web, "nas:41-1", NOOP.name) == failed_id
    assert await store.fail(failed_id, 1, "the disk <went> away")
    await store.enqueue(NOOP.name)
    await web.clock.advance(20)

    status = (await web.client.get("/api/status")).json()
    assert status["totals"] == {"running": 1, "failed": 1, "queued": 1}
    assert {(r["kind"], r["status"], r["count"]) for r in status["counts"]} == {
        ("crawl", "running", 1),
        ("noop", "failed", 1),
        ("noop", "queued", 1),
    }
    (running,) = status["running"]
    assert (running["id"], running["worker_id"], running["attempt"]) == (crawl_id, "nas:41-0", 1)
    assert running["storage_config_id"] == str(library.config_id)
    assert running["root_path"] == "/photos/alice"
    assert running["lease_seconds_left"] == pytest.approx(LEASE - 20)
    assert running["lease_expired"] is False
    (failure,) = status["failures"]
    assert (failure["id"], failure["error"]) == (failed_id, "the disk <went> away")
    assert "database" not in status

    page = await web.client.get("/queue")
    assert page.status_code == 200
    row = re.search(
        rf'<tr data-item-id="{crawl_id}" data-status="running".*?</tr>', page.text, re.S
    )
    assert row is not None
    assert "nas:41-0" in row.group(0) and "40 s" in row.group(0)
    assert 'data-lease-seconds-left="40.0"' in row.group(0)
    failed = re.search(
        rf'<tr data-item-id="{failed_id}" data-status="failed".*?</tr>', page.text, re.S
    )
    assert failed is not None
    assert "the disk &lt;went&gt; away" in failed.group(0)  # escaped, never markup
    assert 'src="/static/queue.js' in page.text  # the live part that polls /api/status
    totals = re.search(r'<tr id="totals">.*?</tr>', page.text, re.S)
    assert totals is not None and '<th data-status="running">1</th>' in totals.group(0)


async def test_an_expired_lease_says_so(web: Web) -> None:
    library = await library_of(web)
    crawl_id = await CRAWL.enqueue_for(store_of(web), library.config_id)
    await claim(web, "w", CRAWL.name)
    await web.clock.advance(LEASE + 5)
    (running,) = (await web.client.get("/api/status")).json()["running"]
    assert (running["id"], running["lease_expired"], running["lease_seconds_left"]) == (
        crawl_id,
        True,
        0.0,
    )
    page = (await web.client.get("/queue")).text
    row = re.search(rf'<tr data-item-id="{crawl_id}".*?</tr>', page, re.S)
    assert row is not None and "expired" in row.group(0)


async def test_an_items_page_shows_its_attempts_as_a_timeline(web: Web) -> None:
    store = store_of(web)
    item_id = await store.enqueue(NOOP.name, payload={"seconds": 1})
    await claim(web, "first-worker", NOOP.name)
    await web.clock.advance(5)
    assert await store.release(item_id, 1)
    await web.clock.advance(5)
    await claim(web, "second-worker", NOOP.name)
    await web.clock.advance(3)
    assert await store.fail(item_id, 2, "boom")

    document = (await web.client.get(f"/api/items/{item_id}")).json()
    assert (document["status"], document["attempt"], document["error"]) == ("failed", 2, "boom")
    assert document["payload"] == {"seconds": 1}
    attempts = [(a["attempt"], a["worker_id"], a["outcome"]) for a in document["attempts"]]
    assert attempts == [(1, "first-worker", "released"), (2, "second-worker", "failed")]
    assert document["attempts"][0]["claimed_at"] == "2026-06-15T09:00:00+00:00"
    assert document["attempts"][1]["ended_at"] == "2026-06-15T09:00:13+00:00"

    page = await web.client.get(f"/items/{item_id}")
    assert page.status_code == 200
    assert f'id="item" data-item-id="{item_id}" data-status="failed"' in page.text
    steps = re.findall(r'<li data-attempt="(\d+)" data-outcome="(\w+)">(.*?)</li>', page.text, re.S)
    assert [(int(n), outcome) for n, outcome, _ in steps] == [(1, "released"), (2, "failed")]
    assert "first-worker" in steps[0][2] and "2026-06-15 09:00:05+00:00" in steps[0][2]
    assert "claimed" in steps[1][2] and "ended" in steps[1][2]

    listed = (await web.client.get("/api/items", params={"status": "failed"})).json()
    assert [i["id"] for i in listed] == [item_id]
    assert (await web.client.get("/api/items", params={"status": "lost"})).status_code == 400
    assert (await web.client.get("/api/items", params={"limit": "0"})).status_code == 400
    assert (await web.client.get("/api/items", params={"config": "nope"})).status_code == 400
    other = "00000000-0000-0000-0000-000000000000"
    assert (await web.client.get("/api/items", params={"config": other})).json() == []


@pytest.mark.parametrize("path", ["/items/999999", "/api/items/999999", "/items/abc", "/nowhere"])
async def test_an_unknown_id_is_a_404(web: Web, path: str) -> None:
    response = await web.client.get(path)
    assert response.status_code == 404
    if path.startswith("/api/"):
        assert response.json()["error"] == "there is no work item 999999"
    else:
        assert response.headers["content-type"].startswith("text/html")
        assert "Not found" in response.text


async def test_configs_show_counts_last_crawl_and_running_item(web: Web) -> None:
    library = await library_of(web)
    store = store_of(web)
    first = await CRAWL.enqueue_for(store, library.config_id)
    await claim(web, "w-1", CRAWL.name)
    await web.clock.advance(30)
    assert await store.complete(first, 1, {"found": 14})
    await web.clock.advance(30)
    second = await CRAWL.enqueue_for(store, library.config_id)
    await claim(web, "w-2", CRAWL.name)

    (config,) = (await web.client.get("/api/configs")).json()
    assert (config["id"], config["owner"], config["root"]) == (
        str(library.config_id),
        "alice",
        "/photos/alice",
    )
    counts = config["counts"]
    # 15 rows: 12 live photos (a RAW among them), 2 videos, 1 soft-deleted photo.
    assert (counts["images"], counts["videos"], counts["soft_deleted"]) == (12, 2, 1)
    assert (counts["bursts"], counts["live_photos"], counts["motion_photos"]) == (1, 1, 1)
    assert counts["stacks"] == 1
    assert config["last_crawl"]["id"] == first
    assert config["last_crawl"]["status"] == "succeeded"
    assert config["last_crawl"]["result"] == {"found": 14}
    assert config["running"]["id"] == second
    assert (config["running"]["worker_id"], config["running"]["attempt"]) == ("w-2", 1)
    assert config["running"]["lease_seconds_left"] == pytest.approx(LEASE)

    page = await web.client.get("/configs")
    article = re.search(
        rf'<article class="config" data-config-id="{library.config_id}".*?</article>',
        page.text,
        re.S,
    )
    assert article is not None
    body = article.group(0)
    assert '<span data-count="images">12 photos</span>' in body
    assert '<span data-count="live_photos">1 Live Photo</span>' in body
    assert '<dd data-count="soft_deleted">1</dd>' in body
    assert 'data-status="succeeded"' in body and f"item {first}" in body
    assert f'data-item-id="{second}" data-status="running"' in body


async def test_no_config_yet_says_how_to_add_one(web: Web) -> None:
    assert (await web.client.get("/api/configs")).json() == []
    assert "safelight config add PATH" in (await web.client.get("/configs")).text


async def test_an_item_claimed_beside_its_workers_last_outcome_shows_as_held(web: Web) -> None:
    """ADR 0069: a Worker's second running item waits for the first's outcome; the
    operator sees it held, not started. Another Worker's item is not held by it."""
    store = store_of(web)
    first = await store.enqueue(NOOP.name)
    second = await store.enqueue(NOOP.name)
    other = await store.enqueue(NOOP.name)
    assert await claim(web, "nas:41-0", NOOP.name) == first
    await web.clock.advance(1)
    assert await claim(web, "nas:41-0", NOOP.name) == second
    assert await claim(web, "nas:41-1", NOOP.name) == other

    status = (await web.client.get("/api/status")).json()
    assert {r["id"]: r["held"] for r in status["running"]} == {
        first: False,
        second: True,
        other: False,
    }
    page = (await web.client.get("/queue")).text
    rows = {
        int(m.group(1)): m.group(0)
        for m in re.finditer(r'<tr data-item-id="(\d+)" data-status="running".*?</tr>', page, re.S)
    }
    assert "not yet: held" in rows[second] and 'data-held="true"' in rows[second]
    for started in (first, other):
        assert "not yet: held" not in rows[started] and "data-held" not in rows[started]

    # The first item's outcome commits: the second is no longer held.
    assert await store.complete(first, 1, None)
    status = (await web.client.get("/api/status")).json()
    assert {r["id"]: r["held"] for r in status["running"]} == {second: False, other: False}
