"""Acting through the dashboard: only signed in (a personal token as a Bearer header,
or a session with its CSRF token), never from another site, never on a read-only app;
and what each action does, through the store calls the CLI makes."""

from __future__ import annotations

import re
from datetime import timedelta
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import pytest
from psycopg_pool import AsyncConnectionPool

from safelight.handlers import CRAWL, NOOP, PROXY_REMAKE, PURGE
from safelight.testing.web import (
    ADMIN,
    COOKIE,
    FORM,
    PASSWORD,
    TODAY,
    Web,
    clock_on,
    library_of,
    open_web,
    sign_in_as,
    store_of,
    web_settings,
)
from safelight.work.model import Status

pytestmark = pytest.mark.integration


async def bearer(web: Web, name: str = ADMIN) -> dict[str, str]:
    """The header of a personal token of ``name`` (who exists)."""
    return {"Authorization": f"Bearer {await web.accounts.new_token(name)}"}


async def failed_item(web: Web, error: str = "boom") -> int:
    store = store_of(web)
    item_id = await store.enqueue(NOOP.name)
    item = await store.claim("w", [NOOP.name], lease_seconds=60)
    assert item is not None and item.id == item_id
    assert await store.fail(item_id, 1, error)
    return item_id


async def status_of(web: Web, item_id: int) -> Status:
    item = await store_of(web).get(item_id)
    assert item is not None
    return item.status


async def test_signed_out_nothing_acts_and_no_page_is_shown(anonymous: Web) -> None:
    web = anonymous
    item_id = await store_of(web).enqueue(NOOP.name)
    response = await web.client.post(f"/api/items/{item_id}/cancel")
    assert response.status_code == 401
    assert "sign in" in response.json()["error"]
    assert response.headers["www-authenticate"] == "Bearer"
    wrong = await web.client.post(
        f"/api/items/{item_id}/cancel", headers={"Authorization": "Bearer sl_not-a-token"}
    )
    assert (wrong.status_code, wrong.json()["error"]) == (401, "this token is not valid")
    assert "sl_not-a-token" not in wrong.text
    assert await status_of(web, item_id) is Status.QUEUED
    page = await web.client.get("/queue")
    assert (page.status_code, page.headers["location"]) == (303, "/login?next=/queue")


async def test_a_personal_token_acts(web: Web) -> None:
    item_id = await store_of(web).enqueue(NOOP.name)
    headers = await bearer(web)
    response = await web.client.post(f"/api/items/{item_id}/cancel", headers=headers)
    assert response.status_code == 200
    assert response.json() == {
        "ok": True,
        "outcome": "cancelled",
        "message": f"cancelled item {item_id}",
        "item_id": item_id,
    }
    assert await status_of(web, item_id) is Status.CANCELLED
    again = await web.client.post(f"/api/items/{item_id}/cancel", headers=headers)
    assert (again.status_code, again.json()["outcome"]) == (409, "finished")
    missing = await web.client.post("/api/items/999999/cancel", headers=headers)
    assert missing.status_code == 404


async def test_a_session_acts_only_with_its_csrf_token(anonymous: Web) -> None:
    web = anonymous
    item_id = await failed_item(web)
    await web.accounts.add("alice", password=PASSWORD, admin=True)
    failed_sign_in = await web.client.post(
        "/login",
        content=urlencode({"username": "alice", "password": "not her password", "next": "/"}),
        headers=FORM,
    )
    assert failed_sign_in.status_code == 401
    assert re.search(r'id="login-failed"[^>]*>wrong user name or password<', failed_sign_in.text)
    assert COOKIE not in web.client.cookies

    csrf = await sign_in_as(web, "alice")
    cookie = next(c for c in web.client.cookies.jar if c.name == COOKIE)
    assert cookie.has_nonstandard_attr("HttpOnly")
    assert cookie.get_nonstandard_attr("SameSite", "").lower() == "strict"
    assert not cookie.secure and cookie.path == "/"
    no_csrf = await web.client.post(f"/api/items/{item_id}/retry")
    assert no_csrf.status_code == 403
    assert "sign in again to act" in no_csrf.json()["error"]
    bad_csrf = await web.client.post(f"/api/items/{item_id}/retry", headers={"X-CSRF-Token": "x"})
    assert bad_csrf.status_code == 403
    assert await status_of(web, item_id) is Status.FAILED

    done = await web.client.post(f"/api/items/{item_id}/retry", headers={"X-CSRF-Token": csrf})
    assert (done.status_code, done.json()["outcome"]) == (200, "retried")
    assert await status_of(web, item_id) is Status.QUEUED
    # The token was handed out once, in the sign-in's answer; no page carries it.
    for path in ("/", "/queue", "/configs", f"/items/{item_id}", "/login"):
        page = await web.client.get(path)
        assert page.status_code == 200 and csrf not in page.text, path
        assert 'name="csrf-token"' not in page.text
    assert 'data-access="signed-in"' in page.text

    out = await web.client.post("/logout")
    assert (out.status_code, out.headers["location"]) == (303, "/login")
    assert COOKIE not in web.client.cookies
    after = await web.client.post(f"/api/items/{item_id}/cancel", headers={"X-CSRF-Token": csrf})
    assert after.status_code == 401


async def test_signing_in_again_ends_the_browsers_previous_session(anonymous: Web) -> None:
    web = anonymous
    await sign_in_as(web, "alice")
    first = web.client.cookies[COOKIE]
    await sign_in_as(web, "bob")
    assert web.client.cookies[COOKIE] != first
    page = await web.client.get("/queue")
    assert '<span id="viewer" data-admin="false">bob</span>' in page.text
    async with web.client_at() as other:
        other.cookies.set(COOKIE, first, domain="127.0.0.1", path="/")
        assert (await other.get("/api/status")).status_code == 401
    async with web.pool.connection() as conn:
        cur = await conn.execute("SELECT count(*) FROM web_sessions")
        assert await cur.fetchone() == (1,)


async def test_sign_out_ends_the_session_on_the_server(anonymous: Web) -> None:
    """The cookie kept after sign-out (a copy an attacker took) names no session."""
    web = anonymous
    await sign_in_as(web, "alice")
    session_id = web.client.cookies[COOKIE]
    assert (await web.client.get("/api/status")).status_code == 200
    await web.client.post("/logout")
    async with web.client_at() as other:
        other.cookies.set(COOKIE, session_id, domain="127.0.0.1", path="/")
        assert (await other.get("/api/status")).status_code == 401
    async with web.pool.connection() as conn:
        cur = await conn.execute("SELECT count(*) FROM web_sessions")
        assert await cur.fetchone() == (0,)


@pytest.mark.parametrize(
    "headers",
    [
        {"Origin": "http://evil.example"},
        {"Origin": "http://127.0.0.1:9999"},
        {"Sec-Fetch-Site": "cross-site"},
        {"Sec-Fetch-Site": "same-site"},
    ],
)
async def test_a_request_from_another_site_never_acts(
    anonymous: Web, headers: dict[str, str]
) -> None:
    web = anonymous
    item_id = await store_of(web).enqueue(NOOP.name)
    csrf = await sign_in_as(web, ADMIN, admin=True)
    token = await bearer(web)
    for extra in ({"X-CSRF-Token": csrf}, token):
        response = await web.client.post(
            f"/api/items/{item_id}/cancel", headers={**extra, **headers}
        )
        assert response.status_code == 403, response.text
    sign_in = await web.client.post(
        "/login",
        content=urlencode({"username": ADMIN, "password": PASSWORD}),
        headers={**FORM, **headers},
    )
    assert sign_in.status_code == 403
    assert await status_of(web, item_id) is Status.QUEUED
    same_site = await web.client.post(
        f"/api/items/{item_id}/cancel",
        headers={**token, "Origin": "http://127.0.0.1:8470", "Sec-Fetch-Site": "same-origin"},
    )
    assert same_site.status_code == 200


async def test_a_read_only_app_lets_users_read_and_nobody_act(
    pool: AsyncConnectionPool[Any], database_url: str, tmp_path: Path
) -> None:
    settings = web_settings(database_url, tmp_path)
    async with open_web(pool, settings, clock=clock_on(TODAY), read_only=True) as web:
        item_id = await store_of(web).enqueue(NOOP.name)
        csrf = await sign_in_as(web, ADMIN, admin=True)
        for headers in ({"X-CSRF-Token": csrf}, await bearer(web)):
            response = await web.client.post(f"/api/items/{item_id}/cancel", headers=headers)
            assert response.status_code == 403
            assert "read-only" in response.json()["error"]
        page = await web.client.get("/queue")
        assert page.status_code == 200
        assert 'data-access="read-only"' in page.text and "started with --read-only" in page.text
        assert "data-action=" not in page.text
        assert await status_of(web, item_id) is Status.QUEUED


async def test_cancel_a_running_item_asks_its_attempt_to_stop(web: Web) -> None:
    item_id = await store_of(web).enqueue(NOOP.name)
    assert await store_of(web).claim("w", [NOOP.name], lease_seconds=60) is not None
    response = await web.client.post(f"/api/items/{item_id}/cancel", headers=await bearer(web))
    assert (response.status_code, response.json()["outcome"]) == (200, "requested")
    item = await store_of(web).get(item_id)
    assert item is not None and item.status is Status.RUNNING and item.cancel_requested


async def test_retry_answers_what_the_store_found(web: Web) -> None:
    store = store_of(web)
    queued = await store.enqueue(NOOP.name)
    response = await web.client.post(f"/api/items/{queued}/retry", headers=await bearer(web))
    assert (response.status_code, response.json()["outcome"]) == (409, "not_failed")
    # A failed crawl whose dedup key has a queued crawl stays failed.
    library = await library_of(web)
    crawl = await CRAWL.enqueue_for(store, library.config_id)
    assert await store.claim("w", [CRAWL.name], lease_seconds=60) is not None
    assert await store.fail(crawl, 1, "gone")
    waiting = await CRAWL.enqueue_for(store, library.config_id)
    keyed = await web.client.post(f"/api/items/{crawl}/retry", headers=await bearer(web))
    assert (keyed.status_code, keyed.json()["outcome"]) == (409, "key_queued")
    assert await status_of(web, crawl) is Status.FAILED
    assert waiting != crawl
    missing = await web.client.post("/api/items/999999/retry", headers=await bearer(web))
    assert missing.status_code == 404


async def test_queue_a_crawl_and_a_purge_of_a_config(web: Web) -> None:
    library = await library_of(web)
    config = library.config_id
    crawl = await web.client.post(f"/api/configs/{config}/crawl", headers=await bearer(web))
    assert (crawl.status_code, crawl.json()["outcome"]) == (200, "queued")
    crawl_id = crawl.json()["item_id"]
    item = await store_of(web).get(crawl_id)
    assert item is not None
    assert (item.kind, item.storage_config_id, item.dedup_key) == (
        CRAWL.name,
        config,
        CRAWL.dedup_key(config),
    )
    # One queued crawl per config: a second press names the same item.
    again = await web.client.post(f"/api/configs/{config}/crawl", headers=await bearer(web))
    assert again.json()["item_id"] == crawl_id
    purge = await web.client.post(f"/api/configs/{config}/purge", headers=await bearer(web))
    assert purge.status_code == 200
    purged = await store_of(web).get(purge.json()["item_id"])
    assert purged is not None and purged.kind == PURGE.name
    for bad in ("00000000-0000-0000-0000-000000000000", "not-a-uuid"):
        missing = await web.client.post(f"/api/configs/{bad}/crawl", headers=await bearer(web))
        assert missing.status_code == 404
    async with web.pool.connection() as conn:
        await conn.execute("UPDATE storage_configs SET active = false WHERE id = %s", (config,))
    disabled = await web.client.post(f"/api/configs/{config}/purge", headers=await bearer(web))
    assert (disabled.status_code, disabled.json()["outcome"]) == (409, "refused")
    assert "disabled" in disabled.json()["message"]


async def test_try_failed_files_again_makes_them_due_and_queues_a_crawl(web: Web) -> None:
    library = await library_of(web)
    config = library.config_id
    now = web.clock.now()
    later = now + timedelta(days=9)
    async with web.pool.connection() as conn:
        for path in ("a.jpg", "b.jpg"):
            await conn.execute(
                "INSERT INTO asset_errors (storage_config_id, file_path, reason, first_seen_at,"
                " last_seen_at, size, modified_ns, inode, retry_after)"
                " VALUES (%s, %s, 'corrupt', %s, %s, 1, 1, 1, %s)",
                (config, path, now, now, later),
            )

    response = await web.client.post(
        f"/api/configs/{config}/retry-failed", headers=await bearer(web)
    )

    assert (response.status_code, response.json()["outcome"]) == (200, "queued")
    assert response.json()["message"].startswith("2 failed files will be read again")
    item = await store_of(web).get(response.json()["item_id"])
    assert item is not None and (item.kind, item.storage_config_id) == (CRAWL.name, config)
    async with web.pool.connection() as conn:
        cur = await conn.execute("SELECT DISTINCT retry_after FROM asset_errors")
        due = await cur.fetchall()
    assert due == [(now,)]


async def test_signed_in_pages_show_the_buttons_that_act(web: Web) -> None:
    library = await library_of(web)
    failed = await failed_item(web)
    queue = (await web.client.get("/queue")).text
    assert f'data-action="/api/items/{failed}/retry"' in queue
    item = (await web.client.get(f"/items/{failed}")).text
    assert re.search(rf'id="item-retry"[^>]*data-action="/api/items/{failed}/retry"', item)
    configs = (await web.client.get("/configs")).text
    assert f'data-action="/api/configs/{library.config_id}/crawl"' in configs
    assert f'data-action="/api/configs/{library.config_id}/purge"' in configs
    assert f'data-action="/api/configs/{library.config_id}/retry-failed"' in configs
    for mode in ("missing", "all"):
        assert f'data-action="/api/configs/{library.config_id}/remake-proxies/{mode}"' in configs


async def test_remake_the_missing_or_all_proxies_of_a_config(web: Web) -> None:
    config = (await library_of(web)).config_id
    queued = {}
    for mode in ("missing", "all"):
        response = await web.client.post(
            f"/api/configs/{config}/remake-proxies/{mode}", headers=await bearer(web)
        )
        assert (response.status_code, response.json()["outcome"]) == (200, "queued")
        queued[mode] = response.json()["item_id"]
        item = await store_of(web).get(queued[mode])
        assert item is not None
        assert (item.kind, item.storage_config_id, item.payload) == (
            PROXY_REMAKE.name,
            config,
            {"mode": mode},
        )
    assert queued["missing"] != queued["all"]
    # One queued remake of each mode per config: a second press names the same item.
    again = await web.client.post(
        f"/api/configs/{config}/remake-proxies/all", headers=await bearer(web)
    )
    assert again.json()["item_id"] == queued["all"]
    unknown = await web.client.post(
        f"/api/configs/{config}/remake-proxies/some", headers=await bearer(web)
    )
    assert unknown.status_code == 404


async def test_a_sign_in_with_more_than_its_fields_is_a_400(web: Web) -> None:
    body = "&".join(f"f{n}=x" for n in range(8))
    response = await web.client.post("/login", content=body, headers=FORM)
    assert response.status_code == 400


async def test_sign_in_goes_back_only_to_a_path_of_this_site(anonymous: Web) -> None:
    web = anonymous
    await web.accounts.add("alice", password=PASSWORD, admin=False)
    for given, expected in (("/queue", "/queue"), ("//evil.example/", "/"), ("http://x/", "/")):
        response = await web.client.post(
            "/login",
            content=urlencode({"username": "alice", "password": PASSWORD, "next": given}),
            headers=FORM,
        )
        assert (response.status_code, response.headers["location"]) == (303, expected)
