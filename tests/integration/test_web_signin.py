"""Everything needs a signed-in user (issue #28 items 2, 3, 4 and 6; ADR 0041), on real
PostgreSQL with a generated library of two owners (alice's and bob's): every route
without a session, one user against the other's configs, items and actions, an admin
over both, a cookie replayed at another port, plain HTTP from another machine, the rate
limits and their lockouts on the fake clock, and error texts that echo nothing."""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import httpx
import pytest
from psycopg_pool import AsyncConnectionPool
from starlette.routing import Route

from safelight.accounts.guessing import ACCOUNT_FAILURES, CLIENT_FAILURES, FIRST_LOCKOUT_SECONDS
from safelight.accounts.store import Accounts
from safelight.app import app_store
from safelight.db.database import Database
from safelight.handlers import CRAWL, NOOP
from safelight.settings import Settings
from safelight.testing.fakeclock import FakeClock
from safelight.testing.web import (
    COOKIE,
    FORM,
    PASSWORD,
    TODAY,
    Web,
    clock_on,
    sign_in_as,
    store_of,
    user_named,
    web_settings,
)
from safelight.testing.weblibrary import WebLibrary, make_web_library
from safelight.testing.webserver import dashboard_in_thread
from safelight.web.app import create_app
from safelight.web.auth import PLAIN_HTTP, SIGN_IN_FIRST, is_open
from safelight.web.proxies import proxy_url
from safelight.web.server import WebServer
from safelight.work.model import Status

pytestmark = pytest.mark.integration

JSON = {"Accept": "application/json"}
ELSEWHERE = ("192.168.1.20", 50000)


@dataclass(frozen=True)
class Family:
    alice: WebLibrary
    bob: WebLibrary
    alice_item: int
    bob_item: int


async def family(web: Web) -> Family:
    """alice's and bob's libraries, and a failed crawl of each one's config."""
    alice = await make_web_library(web.pool, web.settings.proxies, TODAY)
    bob = await make_web_library(
        web.pool, web.settings.proxies, TODAY, owner="bob", root="/photos/bob"
    )
    store = store_of(web)
    items = []
    for library in (alice, bob):
        item_id = await CRAWL.enqueue_for(store, library.config_id)
        claimed = await store.claim("w", [CRAWL.name], lease_seconds=60)
        assert claimed is not None and claimed.id == item_id
        assert await store.fail(item_id, 1, "the disk went away")
        items.append(item_id)
    return Family(alice, bob, *items)


def login_form(name: str, password: str, next_path: str = "/") -> str:
    return urlencode({"username": name, "password": password, "next": next_path})


def concrete(path: str, found: Family) -> str:
    """A route's path with real ids of alice's in it."""
    return (
        path.replace("{item_id:int}", str(found.alice_item))
        .replace("{config_id}", str(found.alice.config_id))
        .replace("{asset_id:int}", str(found.alice.ids["photo-1y"]))
        .replace("{proxy_type}", "thumbnail")
        .replace("{version}", "0123456789abcdef")
    )


async def test_every_route_without_a_session_is_refused_but_the_open_ones(
    anonymous: Web,
) -> None:
    web = anonymous
    found = await family(web)
    async with web.client_at() as signed:  # to see what an absent proxy answers
        await session_in(web, signed, "admin", admin=True)
        absent_proxy = await signed.get("/proxies/999999/thumbnail/0123456789abcdef")
    assert absent_proxy.status_code == 404
    checked = []
    for route in web.app.routes:
        if not isinstance(route, Route):
            continue
        for method in sorted((route.methods or {"GET"}) - {"HEAD"}):
            path = concrete(route.path, found)
            if method == "GET" and path == "/":
                path = "/?date=2026-06-15"
            response = await web.client.request(method, path)
            checked.append((method, route.path))
            where = f"{method} {path}"
            if is_open(method, route.path):
                assert SIGN_IN_FIRST not in response.text, where
                assert not response.headers.get("location", "").startswith("/login?"), where
            elif route.path.startswith("/api/"):
                assert response.status_code == 401, where
                assert response.json() == {"error": SIGN_IN_FIRST, "status": 401}, where
                assert response.headers["www-authenticate"] == "Bearer", where
            elif route.path.startswith("/proxies/"):
                assert response.status_code == 404, where
                assert response.content == absent_proxy.content, where
            elif method == "GET":
                assert response.status_code == 303, where
                location = urlsplit(response.headers["location"])
                assert (location.path, parse_qs(location.query)) == ("/login", {"next": [path]})
            else:
                assert response.status_code == 401, where
    assert ("GET", "/api/on-this-day") in checked
    assert ("POST", "/api/items/{item_id:int}/cancel") in checked
    assert len(checked) >= 18
    # Open: the sign-in page, the static files, the probe (which says nothing else).
    assert (await web.client.get("/login")).status_code == 200
    assert (await web.client.get("/static/app.js")).status_code == 200
    probe = await web.client.get("/healthz")
    assert (probe.status_code, probe.json()) == (200, {"status": "ok"})
    # Nothing was done on the way.
    assert await _status(web.pool, found.alice_item) == Status.FAILED.value


async def session_in(web: Web, client: httpx.AsyncClient, name: str, *, admin: bool) -> str:
    """Sign ``client`` in as ``name`` through POST /login; its CSRF token."""
    return await sign_in_as(web, name, admin=admin, client=client)


async def test_a_user_reads_and_acts_only_on_their_own_configs_and_items(anonymous: Web) -> None:
    web = anonymous
    found = await family(web)
    csrf = await sign_in_as(web, "alice")
    headers = {"X-CSRF-Token": csrf}
    # bob's: exactly as absent ones (the same answer, but for the id asked for).
    for action in ("retry", "cancel"):
        absent = await web.client.post(f"/api/items/999999/{action}", headers=headers)
        bobs = await web.client.post(f"/api/items/{found.bob_item}/{action}", headers=headers)
        assert (absent.status_code, bobs.status_code) == (404, 404)
        assert bobs.text == absent.text.replace("999999", str(found.bob_item))
    for action in ("crawl", "purge"):
        no_config = "00000000-0000-0000-0000-000000000000"
        absent = await web.client.post(f"/api/configs/{no_config}/{action}", headers=headers)
        bobs = await web.client.post(
            f"/api/configs/{found.bob.config_id}/{action}", headers=headers
        )
        assert (absent.status_code, bobs.status_code) == (404, 404)
        assert bobs.text == absent.text
    assert await _status(web.pool, found.bob_item) == Status.FAILED.value
    # What alice reads of bob's: nothing, and his ids answer as absent ones.
    assert {c["owner"] for c in (await web.client.get("/api/configs")).json()} == {"alice"}
    assert [i["id"] for i in (await web.client.get("/api/items")).json()] == [found.alice_item]
    day = (await web.client.get("/api/on-this-day")).json()
    shown = {a["id"] for y in day["years"] for a in y["assets"]}
    assert found.alice.ids["photo-1y"] in shown
    assert shown.isdisjoint(found.bob.ids.values())
    for path in (f"/api/items/{found.bob_item}", f"/items/{found.bob_item}"):
        bobs = await web.client.get(path)
        absent = await web.client.get(path.replace(str(found.bob_item), "999999"))
        assert (bobs.status_code, absent.status_code) == (404, 404), path
    theirs = await web.client.get(await thumbnail_url(web, found.bob.ids["photo-1y"]))
    mine = await web.client.get(await thumbnail_url(web, found.alice.ids["photo-1y"]))
    assert mine.status_code == 200
    nowhere = await web.client.get("/proxies/999999/thumbnail/0123456789abcdef")
    assert (theirs.status_code, theirs.content) == (404, nowhere.content)
    # An item of no config is an admin's alone.
    unscoped = await store_of(web).enqueue(NOOP.name)
    refused = await web.client.post(f"/api/items/{unscoped}/cancel", headers=headers)
    assert refused.status_code == 404
    # alice's own: done.
    retried = await web.client.post(f"/api/items/{found.alice_item}/retry", headers=headers)
    assert (retried.status_code, retried.json()["outcome"]) == (200, "retried")
    crawl = await web.client.post(f"/api/configs/{found.alice.config_id}/crawl", headers=headers)
    assert (crawl.status_code, crawl.json()["outcome"]) == (200, "queued")
    # A personal token of alice's acts for alice only too.
    token = {"Authorization": f"Bearer {await web.accounts.new_token('alice')}"}
    async with web.client_at() as script:
        other = await script.post(f"/api/configs/{found.bob.config_id}/purge", headers=token)
        own = await script.post(f"/api/configs/{found.alice.config_id}/purge", headers=token)
    assert (other.status_code, own.status_code) == (404, 200)


async def test_an_admin_sees_and_acts_on_every_config(anonymous: Web) -> None:
    web = anonymous
    found = await family(web)
    csrf = await sign_in_as(web, "root", admin=True)
    configs = {c["owner"] for c in (await web.client.get("/api/configs")).json()}
    assert configs == {"alice", "bob"}
    headers = {"X-CSRF-Token": csrf}
    for library, item_id in ((found.alice, found.alice_item), (found.bob, found.bob_item)):
        retried = await web.client.post(f"/api/items/{item_id}/retry", headers=headers)
        assert (retried.status_code, retried.json()["outcome"]) == (200, "retried")
        crawl = await web.client.post(f"/api/configs/{library.config_id}/crawl", headers=headers)
        # The retried crawl is the config's queued one.
        assert (crawl.status_code, crawl.json()["item_id"]) == (200, item_id)
    page = (await web.client.get("/configs")).text
    assert re.search(r'id="viewer" data-admin="true">root<', page)
    assert 'id="sign-out"' in page


async def test_a_cookie_replayed_at_another_port_is_refused(
    pool: AsyncConnectionPool[Any], database_url: str, tmp_path: Path
) -> None:
    """Two dashboards of one database on two ports of 127.0.0.1, as a browser sees them:
    it sends every cookie of 127.0.0.1 to both. The session signed in at the first is of
    no use at the second, under its own name or the second's (ADR 0041)."""
    settings = web_settings(database_url, tmp_path)
    clock = clock_on(TODAY)
    await Accounts(pool, clock).add("alice", password=PASSWORD, admin=True)
    item_id = await store_of_pool(pool, settings, clock)
    with (
        dashboard_in_thread(settings, clock=clock) as first,
        dashboard_in_thread(settings, clock=clock) as second,
    ):
        first_port, second_port = port_of(first), port_of(second)
        async with httpx.AsyncClient() as browser:
            signed = await browser.post(
                first + "login",
                content=login_form("alice", PASSWORD),
                headers={**FORM, **JSON},
            )
            assert signed.status_code == 200
            csrf = signed.json()["csrf"]
            session_id = browser.cookies[f"safelight_session_{first_port}"]
            assert (await browser.get(first + "api/status")).status_code == 200

            # The browser sends the cookie to the second port too: not signed in there.
            assert (await browser.get(second + "api/status")).status_code == 401
            page = await browser.get(second + "queue")
            assert page.status_code == 303 and page.headers["location"].startswith("/login")
            acted = await browser.post(
                second + f"api/items/{item_id}/cancel", headers={"X-CSRF-Token": csrf}
            )
            assert acted.status_code == 401
            # Its value under the second port's name: bound to the first origin.
            async with httpx.AsyncClient(
                cookies={f"safelight_session_{second_port}": session_id}
            ) as renamed:
                assert (await renamed.get(second + "api/status")).status_code == 401
                assert (
                    await renamed.post(
                        second + f"api/items/{item_id}/cancel", headers={"X-CSRF-Token": csrf}
                    )
                ).status_code == 401

            # What it does not cover (ADR 0041): a server on another port of this
            # machine that takes the cookie and replays it at the first port reads what
            # the person reads; it cannot act, having no CSRF token (the first origin's
            # storage is not its own).
            async with httpx.AsyncClient(
                cookies={f"safelight_session_{first_port}": session_id}
            ) as replay:
                assert (await replay.get(first + "api/status")).status_code == 200
                stolen = await replay.post(first + f"api/items/{item_id}/cancel")
                assert stolen.status_code == 403
    assert (await _status(pool, item_id)) == "queued"


async def test_a_cookie_from_another_machine_over_plain_http_is_refused(anonymous: Web) -> None:
    """A cookie carried off and replayed from another machine, under the right name with
    the right Host: no session is ever opened over plain HTTP from another machine, so
    such a cookie was taken, and is refused with the line that says how to get TLS."""
    web = anonymous
    await sign_in_as(web, "alice")
    session_id = web.client.cookies[COOKIE]
    async with web.client_at(address=ELSEWHERE) as elsewhere:
        elsewhere.cookies.set(COOKIE, session_id, domain="127.0.0.1", path="/")
        response = await elsewhere.get("/api/status")
    assert (response.status_code, response.json()["error"]) == (403, PLAIN_HTTP)
    assert session_id not in response.text


async def test_plain_http_sign_in_from_another_machine_is_refused(anonymous: Web) -> None:
    web = anonymous
    await user_named(web, "alice", password=PASSWORD)
    token = {"Authorization": f"Bearer {await web.accounts.new_token('alice')}"}
    form = login_form("alice", PASSWORD)
    async with web.client_at(address=ELSEWHERE) as elsewhere:
        before = await elsewhere.get("/login")
        page = await elsewhere.post("/login", content=form, headers=FORM)
        script = await elsewhere.post("/login", content=form, headers={**FORM, **JSON})
        api = await elsewhere.get("/api/status", headers=token)
        assert not elsewhere.cookies
    assert page.status_code == 403 and PLAIN_HTTP in page.text
    assert before.status_code == 200 and PLAIN_HTTP in before.text  # said before trying
    assert "--tls-cert" in PLAIN_HTTP and "--behind-proxy" in PLAIN_HTTP and "\n" not in PLAIN_HTTP
    assert (script.status_code, script.json()["error"]) == (403, PLAIN_HTTP)
    assert (api.status_code, api.json()["error"]) == (403, PLAIN_HTTP)

    # From this machine (IPv4 or IPv6 loopback): accepted.
    for address in (("127.0.0.1", 50000), ("::1", 50000)):
        async with web.client_at(address=address) as here:
            assert PLAIN_HTTP not in (await here.get("/login")).text
            assert (await here.post("/login", content=form, headers=FORM)).status_code == 303
            assert (await here.get("/api/status", headers=token)).status_code == 200
    # From another machine over HTTPS: accepted, and the cookie is __Host- and Secure.
    async with web.client_at("https://127.0.0.1:8470", ELSEWHERE) as secure:
        signed = await secure.post("/login", content=form, headers={**FORM, **JSON})
        assert signed.status_code == 200
        cookie = next(iter(secure.cookies.jar))
        assert cookie.name == "__Host-safelight_session_8470" and cookie.secure
        assert (await secure.get("/api/status")).status_code == 200
        assert (await secure.get("/api/status", headers=token)).status_code == 200


async def test_wrong_passwords_lock_the_account_then_the_lockout_ends_by_itself(
    anonymous: Web, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    web = anonymous
    await user_named(web, "alice", password=PASSWORD)
    await user_named(web, "bob", password=PASSWORD)
    checked = count_calls(monkeypatch, web.accounts, "sign_in")
    caplog.set_level(logging.INFO, logger="safelight")
    for _ in range(ACCOUNT_FAILURES):
        wrong = await web.client.post(
            "/login", content=login_form("alice", "a wrong guess"), headers=FORM
        )
        assert wrong.status_code == 401
    assert checked() == ACCOUNT_FAILURES

    # Locked: the right password gets a 429 and is not checked, from any client.
    locked = await web.client.post("/login", content=login_form("alice", PASSWORD), headers=FORM)
    assert locked.status_code == 429
    assert locked.headers["retry-after"] == str(int(FIRST_LOCKOUT_SECONDS))
    assert "try again in 60 seconds" in locked.text
    async with web.client_at(address=("127.0.0.2", 1)) as other:
        elsewhere = await other.post(
            "/login", content=login_form("alice", PASSWORD), headers={**FORM, **JSON}
        )
    assert elsewhere.status_code == 429 and elsewhere.json()["status"] == 429
    assert checked() == ACCOUNT_FAILURES
    assert COOKIE not in web.client.cookies
    # Another account from the same client is not locked by alice's lockout.
    assert (
        await web.client.post("/login", content=login_form("bob", PASSWORD), headers=FORM)
    ).status_code == 303

    await web.clock.advance(FIRST_LOCKOUT_SECONDS)
    again = await web.client.post("/login", content=login_form("alice", PASSWORD), headers=FORM)
    assert again.status_code == 303
    lines = [r.getMessage() for r in caplog.records if "sign-in" in r.getMessage()]
    assert len([line for line in lines if "locked" in line]) == 1, lines
    assert any("ended: 2 tries refused" in line for line in lines), lines
    assert all(
        PASSWORD not in r.getMessage() and "a wrong guess" not in r.getMessage()
        for r in caplog.records
    )


async def test_wrong_tries_from_one_client_lock_the_client(
    anonymous: Web, monkeypatch: pytest.MonkeyPatch
) -> None:
    web = anonymous
    await user_named(web, "alice", password=PASSWORD)
    token = {"Authorization": f"Bearer {await web.accounts.new_token('alice')}"}
    checked = count_calls(monkeypatch, web.accounts, "user_of_token")
    # Wrong tokens: counted per client, as any wrong guess.
    for n in range(CLIENT_FAILURES):
        wrong = await web.client.get("/api/status", headers={"Authorization": f"Bearer sl_{n}"})
        assert (wrong.status_code, wrong.json()["error"]) == (401, "this token is not valid")
    assert checked() == CLIENT_FAILURES
    locked = await web.client.get("/api/status", headers=token)
    assert locked.status_code == 429 and int(locked.headers["retry-after"]) > 0
    assert checked() == CLIENT_FAILURES  # the right token was not even looked up
    page = await web.client.post("/login", content=login_form("alice", PASSWORD), headers=FORM)
    assert page.status_code == 429  # the same client, another way in
    async with web.client_at(address=("127.0.0.2", 1)) as other:
        assert (await other.get("/api/status", headers=token)).status_code == 200
    await web.clock.advance(float(locked.headers["retry-after"]))
    assert (await web.client.get("/api/status", headers=token)).status_code == 200


async def test_no_sign_in_answer_echoes_what_was_sent(anonymous: Web) -> None:
    web = anonymous
    await user_named(web, "alice", password=PASSWORD)
    name, guess = "mallory<b>x", "hunter2-the-database-password"
    answers = [
        await web.client.post("/login", content=login_form(name, guess), headers=FORM),
        await web.client.post("/login", content=login_form("alice", guess), headers=FORM),
        await web.client.post("/login", content=login_form(name, guess), headers={**FORM, **JSON}),
        await web.client.get("/api/status", headers={"Authorization": f"Bearer {guess}"}),
        await web.client.get("/queue", headers={"Authorization": f"Bearer {guess}"}),
    ]
    for answer in answers:
        assert answer.status_code == 401
        assert guess not in answer.text and "mallory" not in answer.text
    # Unknown user and wrong password: one answer.
    assert re.search(r'id="login-failed"[^>]*>wrong user name or password<', answers[0].text)
    assert re.search(r'id="login-failed"[^>]*>wrong user name or password<', answers[1].text)
    assert answers[2].json() == {"error": "wrong user name or password", "status": 401}


async def thumbnail_url(web: Web, asset_id: int) -> str:
    """The URL of an asset's thumbnail, its version the current one."""
    async with web.pool.connection() as conn:
        cur = await conn.execute(
            "SELECT path FROM proxy_files WHERE asset_id = %s AND proxy_type = 'thumbnail'",
            (asset_id,),
        )
        row = await cur.fetchone()
    assert row is not None
    url = proxy_url(asset_id, "thumbnail", str(row[0]))
    assert url is not None
    return url


def count_calls(monkeypatch: pytest.MonkeyPatch, target: Any, name: str) -> Callable[[], int]:
    """Count the calls of ``target.name`` (which still runs)."""
    calls = 0
    real: Callable[..., Awaitable[Any]] = getattr(target, name)

    async def counted(*args: Any, **kwargs: Any) -> Any:
        nonlocal calls
        calls += 1
        return await real(*args, **kwargs)

    monkeypatch.setattr(target, name, counted)
    return lambda: calls


def port_of(url: str) -> int:
    return int(url.rstrip("/").rsplit(":", 1)[1])


async def store_of_pool(
    pool: AsyncConnectionPool[Any], settings: Settings, clock: FakeClock
) -> int:
    """A queued item, made through the store as the dashboard's."""
    store = app_store(Database(str(settings.database_url), pool), settings, clock)
    return await store.enqueue(NOOP.name)


async def _status(pool: AsyncConnectionPool[Any], item_id: int) -> str:
    async with pool.connection() as conn:
        cur = await conn.execute("SELECT status::text FROM work_items WHERE id = %s", (item_id,))
        row = await cur.fetchone()
    assert row is not None
    return str(row[0])


async def test_behind_a_trusted_proxy_the_browsers_scheme_and_address_decide(
    pool: AsyncConnectionPool[Any], database_url: str, tmp_path: Path
) -> None:
    """``--behind-proxy``: what the proxy says of the browser (``X-Forwarded-Proto``,
    ``X-Forwarded-For``) is what the plain-HTTP refusal judges, over a real socket."""
    settings = web_settings(database_url, tmp_path)
    clock = clock_on(TODAY)
    await Accounts(pool, clock).add("alice", password=PASSWORD, admin=False)
    app = create_app(Database(url=str(settings.database_url), pool=pool), settings, clock=clock)
    server = WebServer(
        app,
        "127.0.0.1",
        0,
        settings.web_limits(),
        access_log=False,
        trusted_proxies=("127.0.0.1",),
    )
    serving = asyncio.create_task(server.serve())
    phone = {"X-Forwarded-For": "192.168.1.20"}
    try:
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{server.port}") as proxy:
            form = login_form("alice", PASSWORD)
            plain = await proxy.post(
                "/login", content=form, headers={**FORM, **phone, "X-Forwarded-Proto": "http"}
            )
            assert plain.status_code == 403 and PLAIN_HTTP in plain.text
            assert "set-cookie" not in plain.headers
            secure = await proxy.post(
                "/login", content=form, headers={**FORM, **phone, "X-Forwarded-Proto": "https"}
            )
            assert secure.status_code == 303
            cookie = secure.headers["set-cookie"]
            assert cookie.startswith(f"__Host-safelight_session_{server.port}=")
            assert "; secure" in cookie.lower()
    finally:
        server.stop()
        await asyncio.wait_for(serving, 30)
