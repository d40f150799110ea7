"""What is served is what may be seen (issue #28 items 2, 5 and 6; ADR 0044), on real
PostgreSQL and a generated library of two owners: alice (a config, and a second one
disabled) and bob (a config). Each user reads and acts on their own configs alone, an
admin on all; another owner's asset, item or config answers exactly as an absent one;
soft-deleted assets and disabled configs' assets are neither shown nor served; a wrong
version is a 404; proxies are kept privately and revalidated, API answers never stored;
and no error text repeats what the request said."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import httpx
import pytest

from safelight.handlers import CRAWL, NOOP, PURGE
from safelight.logs import SecretMasker
from safelight.testing.web import TODAY, Web, as_viewer, store_of
from safelight.testing.weblibrary import WebLibrary, make_web_library
from safelight.web import api, pages, reads
from safelight.web.proxies import NO_PROXY, proxy_url
from safelight.work.model import Status

pytestmark = pytest.mark.integration

# What "On this day" shows of a generated library (test_web_on_this_day.py says why).
SHOWN = {
    "photo-1y",
    "video-2y",
    "live-2y",
    "motion-3y",
    "burst-3y-a",
    "jpeg-3y",
    "tokyo-4y",
    "bare-5y",
}
NO_SUCH_CONFIG = "00000000-0000-0000-0000-000000000000"


@dataclass
class Family:
    alice: WebLibrary
    alice_old: WebLibrary
    """alice's second config, disabled."""
    bob: WebLibrary
    as_alice: httpx.AsyncClient
    as_bob: httpx.AsyncClient
    as_admin: httpx.AsyncClient


async def family_of(web: Web) -> Family:
    def make(owner: str, root: str) -> Any:
        return make_web_library(web.pool, web.settings.proxies, TODAY, owner=owner, root=root)

    alice = await make("alice", "/photos/alice")
    alice_old = await make("alice", "/photos/alice-old")
    bob = await make("bob", "/photos/bob")
    await set_active(web, alice_old, False)
    return Family(
        alice,
        alice_old,
        bob,
        await as_viewer(web, "alice"),
        await as_viewer(web, "bob"),
        web.client,
    )


async def set_active(web: Web, library: WebLibrary, active: bool) -> None:
    async with web.pool.connection() as conn:
        await conn.execute(
            "UPDATE storage_configs SET active = %s WHERE id = %s", (active, library.config_id)
        )


async def day_ids(client: httpx.AsyncClient) -> set[int]:
    response = await client.get("/api/on-this-day", params={"limit": "500"})
    assert response.status_code == 200, response.text
    return {a["id"] for y in response.json()["years"] for a in y["assets"]}


def shown(*libraries: WebLibrary, names: Iterable[str] = SHOWN) -> set[int]:
    return {library.ids[name] for library in libraries for name in names}


async def proxy_of(web: Web, asset_id: int, proxy_type: str = "thumbnail") -> str:
    """The asset's proxy URL as a page would name it, read from its row."""
    async with web.pool.connection() as conn:
        cur = await conn.execute(
            "SELECT path FROM proxy_files WHERE asset_id = %s AND proxy_type = %s",
            (asset_id, proxy_type),
        )
        row = await cur.fetchone()
    assert row is not None
    url = proxy_url(asset_id, proxy_type, str(row[0]))
    assert url is not None
    return url


def absent_like(response: httpx.Response, absent: httpx.Response, item: int | None = None) -> None:
    """``response`` is ``absent``'s answer (of an absent item 999999, when ``item``
    names the one asked for: the text names its id)."""
    assert response.status_code == absent.status_code == 404
    assert response.headers["content-type"] == absent.headers["content-type"]
    expected = absent.text
    if item is not None:
        assert "999999" in expected
        expected = expected.replace("999999", str(item))
    assert response.text == expected


async def test_on_this_day_shows_each_user_their_own_enabled_configs_and_an_admin_all(
    web: Web,
) -> None:
    family = await family_of(web)
    assert await day_ids(family.as_alice) == shown(family.alice)
    assert await day_ids(family.as_bob) == shown(family.bob)
    # Neither the admin sees a disabled config's photos: what is shown is what is served.
    assert await day_ids(family.as_admin) == shown(family.alice, family.bob)
    assert await day_ids(await as_viewer(web, "carol")) == set()

    page = (await family.as_alice.get("/")).text
    for name in SHOWN:
        assert f'data-asset-id="{family.alice.ids[name]}"' in page
        assert f'data-asset-id="{family.bob.ids[name]}"' not in page
        assert f'data-asset-id="{family.alice_old.ids[name]}"' not in page


async def test_a_day_in_pages_keeps_to_the_owner(web: Web) -> None:
    """The filter is on the index walk, not on the page: every page is full of the
    owner's tiles, and following ``next`` reaches all of them."""
    family = await family_of(web)
    seen: list[int] = []
    params = {"limit": "3"}
    while True:
        document = (await family.as_bob.get("/api/on-this-day", params=params)).json()
        page = [a["id"] for y in document["years"] for a in y["assets"]]
        seen += page
        if document["next"] is None:
            break
        assert len(page) == 3
        params["after"] = document["next"]
    assert sorted(seen) == sorted(shown(family.bob))


async def test_bursts_list_the_viewers_live_members_only(web: Web) -> None:
    family = await family_of(web)
    async with web.pool.connection() as conn:
        await conn.execute(
            "UPDATE assets SET is_deleted = true, deleted_at = now() WHERE id = %s",
            (family.bob.ids["burst-3y-c"],),
        )
        cur = await conn.execute(
            "SELECT burst_id FROM assets WHERE id = %s", (family.bob.ids["burst-3y-a"],)
        )
        row = await cur.fetchone()
    assert row is not None
    bob_burst = int(row[0])
    members = await reads.assets_of_bursts(web.pool, [bob_burst], owner="bob")
    assert {m["id"] for m in members} == shown(family.bob, names=["burst-3y-a", "burst-3y-b"])
    assert await reads.assets_of_bursts(web.pool, [bob_burst], owner="alice") == []
    assert len(await reads.assets_of_bursts(web.pool, [bob_burst], owner=None)) == 2

    document = (await family.as_bob.get("/api/on-this-day")).json()
    (tile,) = [
        a for y in document["years"] for a in y["assets"] if a["id"] == family.bob.ids["burst-3y-a"]
    ]
    assert tile["burst"]["count"] == 2
    assert [m["id"] for m in tile["burst"]["members"]] == [
        family.bob.ids["burst-3y-a"],
        family.bob.ids["burst-3y-b"],
    ]


async def test_configs_are_each_users_own(web: Web) -> None:
    family = await family_of(web)

    async def config_ids(client: httpx.AsyncClient) -> set[str]:
        response = await client.get("/api/configs")
        assert response.status_code == 200
        return {c["id"] for c in response.json()}

    alices = {str(family.alice.config_id), str(family.alice_old.config_id)}
    assert await config_ids(family.as_alice) == alices  # her disabled one too
    assert await config_ids(family.as_bob) == {str(family.bob.config_id)}
    assert await config_ids(family.as_admin) == alices | {str(family.bob.config_id)}
    page = (await family.as_alice.get("/configs")).text
    assert f'data-config-id="{family.alice.config_id}"' in page
    assert str(family.bob.config_id) not in page and "/photos/bob" not in page


async def test_items_and_the_queue_are_each_users_own(web: Web) -> None:
    family = await family_of(web)
    store = store_of(web)
    alice_crawl = await CRAWL.enqueue_for(store, family.alice.config_id)
    bob_crawl = await CRAWL.enqueue_for(store, family.bob.config_id)
    bob_purge = await PURGE.enqueue_for(store, family.bob.config_id)
    loose = await store.enqueue(NOOP.name)  # of no config: an admin's alone
    claimed = await store.claim("w", [CRAWL.name], lease_seconds=60)
    assert claimed is not None and claimed.id == alice_crawl
    claimed = await store.claim("w", [PURGE.name], lease_seconds=60)
    assert claimed is not None and claimed.id == bob_purge
    assert await store.fail(bob_purge, 1, "bob's disk <is> away")
    claimed = await store.claim("w", [CRAWL.name], lease_seconds=60)
    assert claimed is not None and claimed.id == bob_crawl
    assert await store.retry_later(bob_crawl, 1, "bob's disk is busy", 3600)

    async def listed(client: httpx.AsyncClient, **params: str) -> list[int]:
        response = await client.get("/api/items", params=params)
        assert response.status_code == 200
        return [i["id"] for i in response.json()]

    assert await listed(family.as_alice) == [alice_crawl]
    assert await listed(family.as_bob) == [bob_purge, bob_crawl]
    assert await listed(family.as_admin) == [loose, bob_purge, bob_crawl, alice_crawl]
    # Asking for another owner's config by id finds nothing, as for no such config.
    assert await listed(family.as_alice, config=str(family.bob.config_id)) == []
    assert await listed(family.as_bob, status="failed") == [bob_purge]

    alice = (await family.as_alice.get("/api/status")).json()
    assert alice["totals"] == {"running": 1}
    assert [r["id"] for r in alice["running"]] == [alice_crawl]
    assert alice["failures"] == []
    assert alice["retries"] == {"waiting": 0, "soonest": []}
    assert alice["stalls"] == {
        "stalled_attempts": 0,
        "unfinished_items_with_stalls": 0,
        "recent": [],
    }
    bob = (await family.as_bob.get("/api/status")).json()
    assert bob["totals"] == {"queued": 1, "failed": 1}
    assert bob["running"] == [] and [f["id"] for f in bob["failures"]] == [bob_purge]
    assert bob["retries"]["waiting"] == 1
    assert [r["id"] for r in bob["retries"]["soonest"]] == [bob_crawl]
    admin = (await family.as_admin.get("/api/status")).json()
    assert admin["totals"] == {"running": 1, "queued": 2, "failed": 1}

    queue = (await family.as_alice.get("/queue")).text
    assert f'data-item-id="{alice_crawl}"' in queue
    assert f'data-item-id="{bob_purge}"' not in queue
    assert "is&gt; away" not in queue and "/photos/bob" not in queue


async def test_an_item_of_another_owner_answers_as_an_absent_one(web: Web) -> None:
    family = await family_of(web)
    store = store_of(web)
    bob_item = await CRAWL.enqueue_for(store, family.bob.config_id)
    loose = await store.enqueue(NOOP.name)
    absent = 999999
    for client in (family.as_alice, family.as_bob):
        for path in ("/api/items/{}", "/items/{}"):
            absent_answer = await client.get(path.format(absent))
            unseen = loose if client is family.as_bob else bob_item
            absent_like(await client.get(path.format(unseen)), absent_answer, unseen)
    assert (await family.as_bob.get(f"/api/items/{bob_item}")).status_code == 200
    assert (await family.as_bob.get(f"/items/{bob_item}")).status_code == 200
    for item_id in (bob_item, loose):
        assert (await family.as_admin.get(f"/api/items/{item_id}")).status_code == 200


async def test_actions_on_another_owners_items_answer_as_on_absent_ones(web: Web) -> None:
    family = await family_of(web)
    store = store_of(web)
    bob_item = await CRAWL.enqueue_for(store, family.bob.config_id)
    loose = await store.enqueue(NOOP.name)
    for action in ("cancel", "retry"):
        absent = await family.as_alice.post(f"/api/items/999999/{action}")
        for unseen in (bob_item, loose):
            refused = await family.as_alice.post(f"/api/items/{unseen}/{action}")
            absent_like(refused, absent, unseen)
    by_bob = await family.as_bob.post(f"/api/items/{loose}/cancel")
    assert by_bob.status_code == 404
    for item_id in (bob_item, loose):
        item = await store.get(item_id)
        assert item is not None and item.status is Status.QUEUED

    own = await family.as_bob.post(f"/api/items/{bob_item}/cancel")
    assert (own.status_code, own.json()["outcome"]) == (200, "cancelled")
    admin = await family.as_admin.post(f"/api/items/{loose}/cancel")
    assert (admin.status_code, admin.json()["outcome"]) == (200, "cancelled")


@pytest.mark.parametrize(
    "action",
    ["crawl", "purge", "retry-failed", "remake-proxies/missing", "remake-proxies/all"],
)
async def test_crawl_and_purge_only_of_ones_own_configs_or_as_an_admin(
    web: Web, action: str
) -> None:
    family = await family_of(web)
    bob_config = family.bob.config_id
    absent = await family.as_alice.post(f"/api/configs/{NO_SUCH_CONFIG}/{action}")
    refused = await family.as_alice.post(f"/api/configs/{bob_config}/{action}")
    absent_like(refused, absent)
    assert refused.json()["error"] == api.NO_CONFIG
    async with web.pool.connection() as conn:
        cur = await conn.execute("SELECT count(*) FROM work_items")
        row = await cur.fetchone()
    assert row is not None and row[0] == 0

    own = await family.as_bob.post(f"/api/configs/{bob_config}/{action}")
    assert (own.status_code, own.json()["outcome"]) == (200, "queued")
    admin = await family.as_admin.post(f"/api/configs/{family.alice.config_id}/{action}")
    assert (admin.status_code, admin.json()["outcome"]) == (200, "queued")
    disabled = await family.as_alice.post(f"/api/configs/{family.alice_old.config_id}/{action}")
    assert (disabled.status_code, disabled.json()["outcome"]) == (409, "refused")


async def test_another_owners_proxies_answer_as_an_absent_assets(web: Web) -> None:
    family = await family_of(web)
    bob_photo = await proxy_of(web, family.bob.ids["photo-1y"])
    absent = await family.as_alice.get("/proxies/999999/thumbnail/0123456789abcdef")
    refused = await family.as_alice.get(bob_photo)
    absent_like(refused, absent)
    assert refused.json()["error"] == NO_PROXY
    assert (await family.as_bob.get(bob_photo)).status_code == 200
    assert (await family.as_admin.get(bob_photo)).status_code == 200
    video = await proxy_of(web, family.bob.ids["video-2y"], "web_video")
    assert (await family.as_alice.get(video, headers={"Range": "bytes=0-9"})).status_code == 404
    assert (await family.as_bob.get(video, headers={"Range": "bytes=0-9"})).status_code == 206


async def test_a_soft_deleted_asset_is_neither_shown_nor_served(web: Web) -> None:
    family = await family_of(web)
    deleted = await proxy_of(web, family.alice.ids["deleted-1y"])
    for client in (family.as_alice, family.as_admin):
        response = await client.get(deleted)
        assert (response.status_code, response.json()["error"]) == (404, NO_PROXY)

    # A photo shown and fetched, then deleted: gone from the day, and its URL, asked
    # again with its ETag as the browser revalidates, is a 404, not a 304.
    photo_id = family.alice.ids["photo-1y"]
    photo = await proxy_of(web, photo_id)
    fetched = await family.as_alice.get(photo)
    assert fetched.status_code == 200
    etag = fetched.headers["etag"]
    assert (await family.as_alice.get(photo, headers={"If-None-Match": etag})).status_code == 304
    async with web.pool.connection() as conn:
        await conn.execute(
            "UPDATE assets SET is_deleted = true, deleted_at = now() WHERE id = %s", (photo_id,)
        )
    assert photo_id not in await day_ids(family.as_alice)
    assert photo_id not in await day_ids(family.as_admin)
    again = await family.as_alice.get(photo, headers={"If-None-Match": etag})
    assert again.status_code == 404 and again.content != b""


async def test_a_live_photos_deleted_video_is_not_shown(web: Web) -> None:
    family = await family_of(web)

    async def live_video(client: httpx.AsyncClient) -> Any:
        document = (await client.get("/api/on-this-day")).json()
        wanted = family.alice.ids["live-2y"]
        (tile,) = [a for y in document["years"] for a in y["assets"] if a["id"] == wanted]
        return tile["video"]

    video = await live_video(family.as_alice)
    assert video is not None and (await family.as_alice.get(video)).status_code == 200
    async with web.pool.connection() as conn:
        await conn.execute(
            "UPDATE assets SET is_deleted = true, deleted_at = now() WHERE id = %s",
            (family.alice.ids["live-2y-video"],),
        )
    assert await live_video(family.as_alice) is None
    assert (await family.as_alice.get(video)).status_code == 404


async def test_a_disabled_configs_assets_are_neither_shown_nor_served(web: Web) -> None:
    family = await family_of(web)
    old = await proxy_of(web, family.alice_old.ids["photo-1y"])
    for client in (family.as_alice, family.as_admin):
        assert (await client.get(old)).status_code == 404
    assert not shown(family.alice_old) & await day_ids(family.as_admin)

    bob_photo = await proxy_of(web, family.bob.ids["photo-1y"])
    assert (await family.as_bob.get(bob_photo)).status_code == 200
    await set_active(web, family.bob, False)
    assert await day_ids(family.as_bob) == set()
    assert (await family.as_bob.get(bob_photo)).status_code == 404
    await set_active(web, family.bob, True)
    assert await day_ids(family.as_bob) == shown(family.bob)


async def test_what_may_be_kept_by_a_browser_or_a_cache(web: Web) -> None:
    family = await family_of(web)
    photo = await proxy_of(web, family.alice.ids["photo-1y"])
    served = await family.as_alice.get(photo)
    assert served.headers["cache-control"] == "private, no-cache"
    assert "public" not in served.headers["cache-control"]
    assert served.headers["etag"] == '"' + photo.rsplit("/", 1)[1] + '"'
    # Every API answer, errors and the Host guard's refusal included, is never stored.
    for response in (
        await family.as_alice.get("/api/on-this-day"),
        await family.as_alice.get("/api/status"),
        await family.as_alice.get("/api/items"),
        await family.as_alice.get("/api/configs"),
        await family.as_alice.get("/api/on-this-day", params={"date": "nope"}),
        await family.as_alice.get("/api/items/999999"),
        await family.as_alice.get("/api/nowhere"),
        await family.as_alice.post("/api/items/999999/cancel"),
        await family.as_alice.post(
            "/api/items/999999/cancel",
            headers={"Authorization": f"Bearer {await web.accounts.new_token('alice')}"},
        ),
        await family.as_alice.get("/api/status", headers={"Host": "evil.example"}),
        await family.as_alice.get("/proxies/999999/thumbnail/0123456789abcdef"),
        await family.as_alice.get("/"),
        await family.as_alice.get("/queue"),
    ):
        assert response.headers["cache-control"] == "no-store", response.request.url
    assert (await family.as_alice.get("/api/nowhere")).status_code == 404


SECRET = "hunter2-the-database-password"


@pytest.mark.parametrize(
    ("path", "params"),
    [
        ("/api/on-this-day", {"date": SECRET}),
        ("/", {"date": SECRET}),
        ("/api/on-this-day", {"after": SECRET}),
        ("/api/on-this-day", {"limit": SECRET}),
        ("/", {"limit": SECRET}),
        ("/api/items", {"status": SECRET}),
        ("/api/items", {"config": SECRET}),
        ("/api/items", {"limit": SECRET}),
        (f"/proxies/1/{SECRET}/0123456789abcdef", {}),
        (f"/proxies/1/thumbnail/{SECRET}", {}),
    ],
)
async def test_no_error_text_repeats_what_was_sent(
    web: Web, monkeypatch: pytest.MonkeyPatch, path: str, params: dict[str, str]
) -> None:
    """Masked or not: answering ``not '***'`` confirms a guess of a secret as surely as
    repeating it (issue #28); each error says what is expected instead."""
    secrets = SecretMasker([SECRET])
    monkeypatch.setattr(api, "masker", secrets)
    monkeypatch.setattr(pages, "masker", secrets)
    response = await web.client.get(path, params=params)
    assert response.status_code in (400, 404)
    assert SECRET not in response.text and "***" not in response.text
    if path.startswith("/api/"):
        assert response.json()["error"]


@pytest.mark.parametrize(
    "action",
    ["crawl", "purge", "retry-failed", "remake-proxies/missing", "remake-proxies/all"],
)
async def test_no_action_error_repeats_the_config_it_was_given(web: Web, action: str) -> None:
    response = await web.client.post(f"/api/configs/{SECRET}/{action}")
    assert (response.status_code, response.json()["error"]) == (404, api.NO_CONFIG)
    assert SECRET not in response.text
