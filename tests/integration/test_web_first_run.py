"""The first run (ADR 0045): serve's one-time link makes the first admin and signs them
in, once; with users but no password, it signs in as the admin who has none; /account
sets and changes a password. On the app through httpx's ASGI transport, on a real
database."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC
from pathlib import Path
from typing import Any

import httpx
import pytest
from psycopg_pool import AsyncConnectionPool

from safelight.accounts.guessing import CLIENT_FAILURES
from safelight.accounts.store import Accounts
from safelight.accounts.users import User
from safelight.db.database import Database
from safelight.testing.fakeclock import FakeClock
from safelight.testing.web import BASE_URL, TODAY, clock_on, web_settings
from safelight.web.account import BROWSER_ONLY, DONE_PATH
from safelight.web.app import create_app
from safelight.web.welcome import USED, WRONG_TOKEN, Welcome, WelcomeLink, link_for

pytestmark = pytest.mark.integration

DAY_PATH = "/?date=2025-06-15"
JSON = {"Accept": "application/json"}
PASSWORD = "correct horse battery staple"


@asynccontextmanager
async def serving(
    pool: AsyncConnectionPool[Any], tmp_path: Path, clock: FakeClock, link: WelcomeLink | None
) -> AsyncIterator[httpx.AsyncClient]:
    settings = web_settings(str(pool.conninfo), tmp_path)
    app = create_app(
        Database(url=str(settings.database_url), pool=pool),
        settings,
        clock=clock,
        zone=UTC,
        welcome=link,
    )
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app), base_url=BASE_URL
    ) as client:
        yield client


async def first_link(accounts: Accounts, admin: str = "alice") -> WelcomeLink:
    link = await link_for(accounts, admin=admin, given_token=None, next_path=DAY_PATH)
    assert link is not None and not link.existing
    return link


async def use(client: httpx.AsyncClient, token: str) -> httpx.Response:
    """As the page's script sends the fragment's token."""
    return await client.post("/welcome", json={"token": token}, headers=JSON)


async def test_the_link_makes_the_first_admin_signs_them_in_and_goes_on_to_the_day(
    pool: AsyncConnectionPool[Any], tmp_path: Path
) -> None:
    clock = clock_on(TODAY)
    accounts = Accounts(pool, clock)
    link = await first_link(accounts)
    assert len(link.token) == 43 and link.admin == "alice"
    async with serving(pool, tmp_path, clock, link) as client:
        page = await client.get("/welcome")
        assert page.status_code == 200 and 'id="welcome-form"' in page.text
        assert link.token not in page.text

        answer = await use(client, link.token)

        assert answer.status_code == 200, answer.text
        assert answer.json()["next"] == DAY_PATH and answer.json()["csrf"]
        assert answer.headers["cache-control"] == "no-store"
        [made] = await accounts.list()
        assert (made.name, made.is_admin, made.has_password) == ("alice", True, False)
        me = await client.get("/api/account")
        assert me.json() == {"name": "alice", "is_admin": True, "has_password": False}
        day = await client.get(DAY_PATH)
        assert day.status_code == 200 and 'id="on-this-day"' in day.text


async def test_a_link_works_once_then_says_it_was_used_and_where_to_sign_in(
    pool: AsyncConnectionPool[Any], tmp_path: Path
) -> None:
    clock = clock_on(TODAY)
    link = await first_link(Accounts(pool, clock))
    async with serving(pool, tmp_path, clock, link) as client:
        assert (await use(client, link.token)).status_code == 200
        client.cookies.clear()

        again = await use(client, link.token)
        page = await client.get("/welcome")
        form = await client.post("/welcome", data={"token": link.token})

    assert again.status_code == 410 and again.json() == {
        "error": USED,
        "status": 410,
        "login": "/login",
    }
    assert page.status_code == 410 and 'href="/login"' in page.text
    assert "This link was used" in page.text and 'id="welcome-form"' not in page.text
    assert form.status_code == 410
    assert [u.name for u in await Accounts(pool, clock).list()] == ["alice"]


async def test_without_a_script_the_form_signs_in_with_a_redirect(
    pool: AsyncConnectionPool[Any], tmp_path: Path
) -> None:
    clock = clock_on(TODAY)
    link = await first_link(Accounts(pool, clock))
    async with serving(pool, tmp_path, clock, link) as client:
        answer = await client.post("/welcome", data={"token": link.token})
        assert answer.status_code == 303 and answer.headers["location"] == DAY_PATH
        assert (await client.get("/api/account")).json()["name"] == "alice"


async def test_once_a_user_exists_the_first_admin_link_makes_nobody(
    pool: AsyncConnectionPool[Any], tmp_path: Path
) -> None:
    clock = clock_on(TODAY)
    accounts = Accounts(pool, clock)
    link = await first_link(accounts)
    # `safelight user add` ran after serve printed its link.
    await accounts.add("bob", password=PASSWORD, admin=False)
    async with serving(pool, tmp_path, clock, link) as client:
        answer = await use(client, link.token)
        assert answer.status_code == 410 and answer.json()["error"] == USED
        assert (await client.get("/api/account")).status_code == 401
    assert [(u.name, u.is_admin) for u in await accounts.list()] == [("bob", False)]


async def test_a_wrong_token_makes_nobody_says_what_was_expected_and_is_counted(
    pool: AsyncConnectionPool[Any], tmp_path: Path
) -> None:
    clock = clock_on(TODAY)
    accounts = Accounts(pool, clock)
    link = await first_link(accounts)
    guess = "a-guess-of-the-token-of-this-server"
    async with serving(pool, tmp_path, clock, link) as client:
        for _ in range(CLIENT_FAILURES):
            wrong = await use(client, guess)
            assert wrong.status_code == 403 and wrong.json()["error"] == WRONG_TOKEN
            assert guess not in wrong.text
        # Locked: even the right token is not checked now, and the link is not spent.
        locked = await use(client, link.token)
        assert locked.status_code == 429 and int(locked.headers["retry-after"]) >= 1
        assert await accounts.count() == 0

        await clock.advance(float(locked.headers["retry-after"]))

        assert (await use(client, link.token)).status_code == 200
    assert await accounts.count() == 1


@pytest.mark.parametrize(
    ("body", "headers"),
    [
        (b"not json", {"Content-Type": "application/json"}),
        (b'{"token": 42}', {"Content-Type": "application/json"}),
        (b"token=a&token=b&x=1", {"Content-Type": "application/x-www-form-urlencoded"}),
    ],
)
async def test_a_malformed_use_is_a_400_that_says_what_to_send(
    pool: AsyncConnectionPool[Any], tmp_path: Path, body: bytes, headers: dict[str, str]
) -> None:
    clock = clock_on(TODAY)
    link = await first_link(Accounts(pool, clock))
    async with serving(pool, tmp_path, clock, link) as client:
        answer = await client.post("/welcome", content=body, headers={**headers, **JSON})
    assert answer.status_code == 400 and "token" in answer.json()["error"]
    assert "not json" not in answer.text


class _HeldAccounts:
    """``add_first_admin`` held open until released: the first use is inside it when the
    second arrives."""

    def __init__(self) -> None:
        self.entered = asyncio.Event()
        self.release = asyncio.Event()
        self.calls = 0

    async def add_first_admin(self, name: str) -> User:
        self.calls += 1
        self.entered.set()
        await self.release.wait()
        return User(1, name, True, False, clock_on(TODAY).now())


async def test_of_two_uses_at_once_only_the_first_signs_in() -> None:
    welcome = Welcome(WelcomeLink("t" * 43, "alice", False, "/"))
    accounts = _HeldAccounts()

    first = asyncio.create_task(welcome.use(accounts))  # type: ignore[arg-type]
    await accounts.entered.wait()
    second = await welcome.use(accounts)  # type: ignore[arg-type]
    accounts.release.set()

    assert second is None and not welcome.open
    assert (await first) is not None and accounts.calls == 1


async def test_a_link_whose_database_was_away_stays_unused() -> None:
    class Away:
        async def add_first_admin(self, name: str) -> User:
            raise OSError("the database went away")

    welcome = Welcome(WelcomeLink("t" * 43, "alice", False, "/"))
    with pytest.raises(OSError):
        await welcome.use(Away())  # type: ignore[arg-type]
    assert welcome.open


async def test_which_link_a_server_offers(pool: AsyncConnectionPool[Any]) -> None:
    accounts = Accounts(pool, clock_on(TODAY))
    given = "0123456789abcdef" * 3
    fresh = await link_for(accounts, admin="alice", given_token=given, next_path="/")
    assert fresh == WelcomeLink(given, "alice", False, "/")

    await accounts.add_first_admin("alice")
    await accounts.add("carol", password=None, admin=False)
    passwordless = await link_for(accounts, admin="someone", given_token=given, next_path="/")
    assert passwordless is not None and passwordless.existing
    assert passwordless.admin == "alice" and passwordless.token != given

    await accounts.set_password("carol", PASSWORD)
    assert await link_for(accounts, admin="alice", given_token=None, next_path="/") is None


async def test_an_admin_without_a_password_signs_in_by_the_link_and_sees_the_banner(
    pool: AsyncConnectionPool[Any], tmp_path: Path
) -> None:
    clock = clock_on(TODAY)
    accounts = Accounts(pool, clock)
    await accounts.add_first_admin("alice")
    link = await link_for(accounts, admin="whoever", given_token=None, next_path=DAY_PATH)
    assert link is not None and link.existing
    async with serving(pool, tmp_path, clock, link) as client:
        answer = await use(client, link.token)
        assert answer.status_code == 200 and answer.json()["next"] == DAY_PATH
        page = await client.get(DAY_PATH)
        assert 'id="password-banner"' in page.text
        assert "Set a password to sign in from other devices" in page.text
        assert (await use(client, link.token)).status_code == 410


async def test_a_passwordless_link_is_spent_once_the_admin_has_a_password(
    pool: AsyncConnectionPool[Any], tmp_path: Path
) -> None:
    clock = clock_on(TODAY)
    accounts = Accounts(pool, clock)
    await accounts.add_first_admin("alice")
    link = await link_for(accounts, admin="alice", given_token=None, next_path="/")
    assert link is not None
    await accounts.set_password("alice", PASSWORD)  # `safelight user passwd alice`
    async with serving(pool, tmp_path, clock, link) as client:
        assert (await use(client, link.token)).status_code == 410


async def test_the_account_page_sets_a_password_and_signs_this_browser_in_again(
    pool: AsyncConnectionPool[Any], tmp_path: Path
) -> None:
    clock = clock_on(TODAY)
    accounts = Accounts(pool, clock)
    link = await first_link(accounts)
    async with serving(pool, tmp_path, clock, link) as client:
        csrf = await use_link(client, link)
        page = await client.get("/account")
        assert page.status_code == 200
        assert 'id="account-name">alice<' in page.text and "admin" in page.text
        assert 'id="password-current"' not in page.text  # none to give yet
        old_cookies = dict(client.cookies)

        no_csrf = await client.post("/account", json={"password": PASSWORD}, headers=JSON)
        weak = await client.post(
            "/account", json={"password": "alice1"}, headers={**JSON, "X-CSRF-Token": csrf}
        )
        assert no_csrf.status_code == 403 and weak.status_code == 400
        assert "alice1" not in weak.text
        assert not (await accounts.get("alice")).has_password  # type: ignore[union-attr]

        done = await client.post(
            "/account", json={"password": PASSWORD}, headers={**JSON, "X-CSRF-Token": csrf}
        )

        assert done.status_code == 200, done.text
        assert done.json()["next"] == DONE_PATH
        assert done.json()["csrf"] != csrf
        assert (await accounts.sign_in("alice", PASSWORD)) is not None
        # This browser has a new session; the one before it ended with the password.
        assert (await client.get("/api/account")).json()["has_password"] is True
        async with httpx.AsyncClient(
            transport=client._transport, base_url=BASE_URL, cookies=old_cookies
        ) as old:
            assert (await old.get("/api/account")).status_code == 401
        assert "password-banner" not in (await client.get("/account")).text


async def use_link(client: httpx.AsyncClient, link: WelcomeLink) -> str:
    answer = await use(client, link.token)
    assert answer.status_code == 200, answer.text
    csrf: str = answer.json()["csrf"]
    return csrf


async def test_changing_a_password_needs_the_current_one(
    pool: AsyncConnectionPool[Any], tmp_path: Path
) -> None:
    clock = clock_on(TODAY)
    accounts = Accounts(pool, clock)
    link = await first_link(accounts)
    async with serving(pool, tmp_path, clock, link) as client:
        csrf = await use_link(client, link)
        headers = {**JSON, "X-CSRF-Token": csrf}
        csrf = (await client.post("/account", json={"password": PASSWORD}, headers=headers)).json()[
            "csrf"
        ]
        headers = {**JSON, "X-CSRF-Token": csrf}
        assert 'id="password-current"' in (await client.get("/account")).text
        new = "a different and long passphrase"

        missing = await client.post("/account", json={"password": new}, headers=headers)
        wrong = await client.post(
            "/account", json={"current": "not it at all", "password": new}, headers=headers
        )
        assert (missing.status_code, wrong.status_code) == (403, 403)
        assert "not it at all" not in wrong.text
        changed = await client.post(
            "/account", json={"current": PASSWORD, "password": new}, headers=headers
        )

        assert changed.status_code == 200, changed.text
        assert await accounts.sign_in("alice", new) is not None
        assert await accounts.sign_in("alice", PASSWORD) is None


async def test_a_password_is_set_by_a_browser_session_not_a_token(
    pool: AsyncConnectionPool[Any], tmp_path: Path
) -> None:
    clock = clock_on(TODAY)
    accounts = Accounts(pool, clock)
    await accounts.add("bob", password=PASSWORD, admin=False)
    token = await accounts.new_token("bob")
    async with serving(pool, tmp_path, clock, None) as client:
        answer = await client.post(
            "/account",
            json={"current": PASSWORD, "password": "another long passphrase"},
            headers={**JSON, "Authorization": f"Bearer {token}"},
        )
        assert answer.status_code == 403 and answer.json()["error"] == BROWSER_ONLY
        assert (await client.get("/account")).status_code in (303, 401)  # no session
