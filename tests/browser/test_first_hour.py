"""The dashboard as a new user first meets it, in Chromium: an empty day that leads to the
nearest days with photos, the preview's capture time, the read-only badge only on a
read-only dashboard, the icon, and every page, signed out, as an owner with no photos
yet and as the admin, loading without a script error, a console error or a failed
request, its counts in the right plural."""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import datetime
from typing import Any

import pytest
from playwright.sync_api import Page, Request, Response, expect

from safelight.accounts.store import Accounts
from safelight.appdb import open_app_database
from safelight.core.clock import SystemClock
from safelight.testing.browsersite import (
    ADMIN,
    ASKED_DAY,
    OWNER,
    PASSWORDS,
    PageOf,
    Site,
    run_async,
)
from safelight.testing.webserver import dashboard_in_thread

pytestmark = pytest.mark.browser

# A day of no photo of either library (June and July): its nearest days are theirs.
EMPTY_DAY = ASKED_DAY.replace(month=12, day=2)
NEWCOMER = "newcomer"
NEWCOMER_PASSWORD = "kettle lantern harbour 42"
TIME = re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d")
# A count and its noun, as the pages write them.
COUNTED = re.compile(
    r"\b(\d+) (photo|video|item|file|error|day|year|attempt|asset|crawl|member)(s?)\b"
)


def sign_in(page: Page, name: str = ADMIN, password: str | None = None) -> None:
    """Through the sign-in page, as a person does; the page ends signed in."""
    page.goto("/login")
    page.locator("#login-username").fill(name)
    page.locator("#login-password").fill(password or PASSWORDS[name])
    page.locator("#login-submit").click()
    expect(page.locator("#viewer")).to_have_text(name)


def _add_newcomer(site: Site) -> None:
    """A user with a password and no config: an owner before their first run."""

    async def add() -> None:
        database = await open_app_database(site.settings, concurrency=1)
        try:
            accounts = Accounts(database.pool, SystemClock())
            if await accounts.get(NEWCOMER) is None:
                await accounts.add(NEWCOMER, password=NEWCOMER_PASSWORD, admin=False)
        finally:
            await database.close()

    run_async(add)


def test_an_empty_day_links_the_nearest_days_and_a_link_lands_on_photos(page: Page) -> None:
    page.goto(f"/?date={EMPTY_DAY.isoformat()}")
    expect(page.locator("#empty-day")).to_contain_text("Nothing was captured on 2 December")
    expect(page.locator("li.tile")).to_have_count(0)
    links = page.locator("#near-days a.near-day")
    expect(links).to_have_count(2)
    assert links.evaluate_all("(ls) => ls.map((l) => l.dataset.side)") == ["before", "after"]
    # The admin's nearest: OTHER_DAY's library (July) before, ASKED_DAY's (June) after.
    before, after = (str(d) for d in links.evaluate_all("(ls) => ls.map((l) => l.dataset.date)"))
    assert before.startswith(f"{EMPTY_DAY.year}-07-"), before
    assert after.startswith(f"{EMPTY_DAY.year}-06-"), after
    expect(page.locator("#near-days")).to_contain_text("days before")

    links.nth(1).click()

    expect(page).to_have_url(re.compile(re.escape(f"/?date={after}") + "$"))
    expect(page.locator("#empty-day")).to_have_count(0)
    expect(page.locator("li.tile")).not_to_have_count(0)


def test_an_owners_nearest_days_are_their_own(page_of: PageOf, site: Site) -> None:
    page = page_of(site.url)
    sign_in(page, OWNER, PASSWORDS[OWNER])
    page.goto(f"/?date={EMPTY_DAY.isoformat()}")
    dates = page.locator("#near-days a.near-day").evaluate_all(
        "(ls) => ls.map((l) => l.dataset.date)"
    )
    # Only June: the other owner's July is nearer before 2 December, and not theirs.
    assert dates and all(str(d).startswith(f"{EMPTY_DAY.year}-06-") for d in dates), dates


@pytest.fixture
def offset_photo(site: Site) -> Iterator[tuple[int, datetime]]:
    """A photo of the asked day given an offset (+02:00) and microseconds for the test,
    put back after: its id and local time."""
    with site.connect() as conn:
        row = conn.execute(
            "SELECT a.id, a.captured_at, a.captured_local FROM assets a"
            " WHERE a.captured_month = %s AND a.captured_day = %s AND a.captured_year < %s"
            " AND a.media_type = 'image' AND a.burst_id IS NULL AND a.paired_asset_id IS NULL"
            " AND NOT a.motion_photo AND a.stack_primary_id IS NULL AND NOT a.is_deleted"
            " ORDER BY a.id LIMIT 1",
            (ASKED_DAY.month, ASKED_DAY.day, ASKED_DAY.year),
        ).fetchone()
        assert row is not None
        asset_id, captured_at, captured_local = row
        conn.execute(
            "UPDATE assets SET captured_at = captured_at - interval '2 hours' + interval"
            " '0.123456 seconds', captured_local = captured_local + interval '0.123456 seconds'"
            " WHERE id = %s",
            (asset_id,),
        )
    try:
        yield int(asset_id), captured_local
    finally:
        with site.connect() as conn:
            conn.execute(
                "UPDATE assets SET captured_at = %s, captured_local = %s WHERE id = %s",
                (captured_at, captured_local, asset_id),
            )


def test_the_preview_shows_local_time_to_the_second_with_its_offset_when_known(
    page: Page, offset_photo: tuple[int, datetime]
) -> None:
    asset_id, local = offset_photo
    page.goto(f"/?date={ASKED_DAY.isoformat()}")
    page.locator(f"li.tile[data-asset-id='{asset_id}'] button.open").click()
    caption = page.locator("#preview-caption")
    expect(caption).to_contain_text(f"{local:%Y-%m-%d %H:%M:%S} +02:00")
    assert not re.search(r":\d\d\.\d", caption.inner_text()), caption.inner_text()
    # The others carry no zone (the generated cameras write none): no offset claimed.
    page.keyboard.press("ArrowRight")
    expect(caption).not_to_contain_text("+02:00")
    text = caption.inner_text()
    stamp = TIME.search(text)
    assert stamp is not None, text
    assert not re.match(r" [+-]\d\d:\d\d", text[stamp.end() :]), text
    assert not re.search(r":\d\d\.\d", text), text


def test_the_read_only_badge_is_only_on_a_read_only_dashboard(page_of: PageOf, site: Site) -> None:
    signed_out = page_of(site.url)
    signed_out.goto("/login")
    expect(signed_out.locator("#login-form")).to_be_visible()
    expect(signed_out.locator("#read-only")).to_have_count(0)
    sign_in(signed_out)
    expect(signed_out.locator("#read-only")).to_have_count(0)

    with dashboard_in_thread(site.settings, clock=SystemClock(), read_only=True) as url:
        reader = page_of(url)
        reader.goto("/login")
        expect(reader.locator("#read-only")).to_contain_text("read-only")
        sign_in(reader, OWNER)
        expect(reader.locator("#access")).to_have_attribute("data-access", "read-only")
        expect(reader.locator("#read-only")).to_be_visible()


def test_the_icon_is_served_cached_and_favicon_ico_leads_to_it(anonymous_page: Page) -> None:
    failed: list[str] = []
    anonymous_page.on(
        "response",
        lambda r: failed.append(f"{r.status} {r.url}") if r.status >= 400 else None,
    )
    anonymous_page.goto("/login")
    icon = anonymous_page.locator("link[rel=icon]")
    href = str(icon.get_attribute("href"))
    assert href.startswith("/static/favicon.svg?v="), href

    answer = anonymous_page.request.get(href)
    assert answer.status == 200
    assert answer.headers["content-type"].startswith("image/svg+xml")
    assert "immutable" in answer.headers["cache-control"]
    assert answer.body().startswith(b"<svg")
    # What a browser asks every site for on its own finds the same icon.
    asked = anonymous_page.request.get("/favicon.ico", max_redirects=0)
    assert asked.status == 302 and asked.headers["location"] == href
    followed = anonymous_page.request.get("/favicon.ico")
    assert followed.status == 200 and followed.body() == answer.body()
    assert failed == []


def _watch(page: Page, problems: list[str]) -> None:
    """Every request of the page that fails or is answered 4xx/5xx is a problem."""

    def answered(response: Response) -> None:
        if response.status >= 400:
            problems.append(f"{response.status} {response.request.method} {response.url}")

    def failed(request: Request) -> None:
        # A thumbnail still loading when the test goes to the next page is cancelled by
        # the browser (net::ERR_ABORTED): the page left it, nothing refused it.
        if request.failure != "net::ERR_ABORTED":
            problems.append(f"failed {request.url}: {request.failure}")

    page.on("response", answered)
    page.on("requestfailed", failed)


def _plural_mistakes(text: str) -> list[str]:
    return [
        m.group(0) for m in COUNTED.finditer(text) if (m.group(1) == "1") != (m.group(3) == "")
    ] + re.findall(r"\w+\(s\)", text)


def _visit(page: Page, paths: list[str], seen: dict[str, Any]) -> None:
    for path in paths:
        response = page.goto(path)
        assert response is not None and response.ok, (path, response and response.status)
        page.wait_for_load_state("load")
        text = page.locator("body").inner_text()
        seen[path] = text
        assert _plural_mistakes(text) == [], (path, _plural_mistakes(text))


def test_every_page_loads_clean_signed_out_as_a_newcomer_and_as_the_admin(
    page_of: PageOf, site: Site, page_problems: list[str]
) -> None:
    _add_newcomer(site)
    with site.connect() as conn:
        [(item_id,)] = conn.execute("SELECT min(id) FROM work_items").fetchall()
    failed: list[str] = []
    seen: dict[str, Any] = {}

    signed_out = page_of(site.url)
    _watch(signed_out, failed)
    # (/welcome answers 410 once used, as here: on purpose, not a page of a new user.)
    _visit(signed_out, ["/login"], seen)
    signed_out.goto("/queue")  # sent to sign in, as every page
    expect(signed_out).to_have_url(re.compile(r"/login\?next=/queue$"))

    newcomer = page_of(site.url)
    _watch(newcomer, failed)
    sign_in(newcomer, NEWCOMER, NEWCOMER_PASSWORD)
    _visit(
        newcomer, ["/", f"/?date={ASKED_DAY.isoformat()}", "/queue", "/configs", "/account"], seen
    )
    # No photo yet: the home page says how to add some, and offers no link to nowhere.
    newcomer.goto("/")
    expect(newcomer.locator("#no-photos")).to_contain_text(
        f"safelight run FOLDER --user {NEWCOMER}"
    )
    expect(newcomer.locator("a.near-day")).to_have_count(0)

    admin = page_of(site.url)
    _watch(admin, failed)
    sign_in(admin)
    _visit(
        admin,
        [
            "/",
            f"/?date={ASKED_DAY.isoformat()}",
            f"/?date={EMPTY_DAY.isoformat()}",
            "/queue",
            f"/items/{item_id}",
            "/configs",
            "/account",
        ],
        seen,
    )
    # Counts were there to check: the day's years and the queue's.
    assert any(COUNTED.search(text) for text in seen.values()), seen
    assert failed == [], failed
    assert page_problems == [], page_problems
