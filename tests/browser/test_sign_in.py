"""The whole sign-in story in Chromium (issue #28): an owner signs in and sees only their
photos, acts only on their own configs (an admin on every one), and signs out; serve's
first-admin link on a fresh database lands signed in, /account sets a password that then
signs in; and the demo's printed command is one click from its photos."""

from __future__ import annotations

import re
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Page, expect

from safelight.cli.admin import os_user
from safelight.testing.browsersite import (
    ADMIN,
    ASKED_DAY,
    OTHER_DAY,
    OTHER_OWNER,
    OWNER,
    PASSWORDS,
    PageOf,
    Site,
)
from tests.acceptance.harness import link_in, start_safelight
from tests.dbserver import PgTestServer

pytestmark = pytest.mark.browser

# Each owner's day: the other owner has no photo of it.
DAYS = {OWNER: ASKED_DAY.isoformat(), OTHER_OWNER: OTHER_DAY.isoformat()}
NEW_PASSWORD = "a long passphrase of my own"
# A real guard for a process that would otherwise hang a broken test; no tested deadline.
GUARD_SECONDS = 120


def fill_sign_in(page: Page, name: str, password: str | None = None) -> None:
    """Through the sign-in page a redirect opened, as a person does."""
    expect(page.locator("#login-form")).to_be_visible()
    page.fill("input[name=username]", name)
    page.fill("input[name=password]", password or PASSWORDS[name])
    page.click("#login-submit")
    expect(page.locator("#viewer")).to_have_text(name)


def tile_ids(page: Page) -> set[int]:
    expect(page.locator("#on-this-day")).to_be_visible()
    return {
        int(i)
        for i in page.locator("li.tile").evaluate_all("tiles => tiles.map(t => t.dataset.assetId)")
    }


def test_an_owner_signs_in_and_sees_only_their_photos(page_of: PageOf, site: Site) -> None:
    for name, other in ((OTHER_OWNER, OWNER), (OWNER, OTHER_OWNER)):
        page = page_of(site.url)
        page.goto(f"/?date={DAYS[name]}")
        expect(page).to_have_url(re.compile(r"/login\?next="))

        fill_sign_in(page, name)

        expect(page).to_have_url(f"{site.url}?date={DAYS[name]}")
        shown = tile_ids(page)
        assert shown, "the owner's photos of their day"
        assert shown <= site.asset_ids(name), "only this owner's"
        # The other owner's day, whose photos this owner may not see: empty, page and API.
        page.goto(f"/?date={DAYS[other]}")
        expect(page.locator("#empty-day")).to_be_visible()
        answer = page.request.get(f"/api/on-this-day?date={DAYS[other]}")
        assert answer.ok and answer.json()["count"] == 0

    admin = page_of(site.url)
    admin.goto(f"/?date={DAYS[OTHER_OWNER]}")
    fill_sign_in(admin, ADMIN)
    shown = tile_ids(admin)
    assert shown and shown <= site.asset_ids(OTHER_OWNER), "an admin sees every owner's"


def test_an_owner_acts_on_their_config_only_and_an_admin_on_both(
    page_of: PageOf, site: Site, page_problems: list[str]
) -> None:
    page = page_of(site.url)
    page.goto("/configs")
    fill_sign_in(page, OTHER_OWNER)
    configs = page.locator("article.config")
    expect(configs).to_have_count(1)
    expect(configs.locator(".owner")).to_have_text(OTHER_OWNER)
    own = site.config_id(OTHER_OWNER)
    configs.locator(f'button[data-action="/api/configs/{own}/crawl"]').click()
    expect(page.locator("#flash")).to_have_attribute("data-ok", "true")
    assert site.crawls_pending(own) == 1
    # Another owner's config, asked for by this page's own script with its CSRF token:
    # answered as one that does not exist, and nothing is queued.
    foreign = site.config_id(OWNER)
    status = page.evaluate(
        """async (url) => (await fetch(url, {
            method: "POST",
            headers: {"X-CSRF-Token": window.safelight.csrfToken(), Accept: "application/json"},
        })).status""",
        f"/api/configs/{foreign}/crawl",
    )
    assert status == 404
    assert site.crawls_pending(foreign) == 0
    # Chromium reports the refused request on the console: that one is expected.
    page_problems[:] = [p for p in page_problems if "404" not in p]

    admin = page_of(site.url)
    admin.goto("/configs")
    fill_sign_in(admin, ADMIN)
    for owner in (OWNER, OTHER_OWNER):
        expect(
            admin.locator(f'article.config[data-config-id="{site.config_id(owner)}"]')
        ).to_be_visible()
    for owner in (OWNER, OTHER_OWNER):
        config = site.config_id(owner)
        admin.goto("/configs")
        admin.locator(f'button[data-action="/api/configs/{config}/crawl"]').click()
        expect(admin.locator("#flash")).to_have_attribute("data-ok", "true")
        # One pending crawl a config: the owner's, already queued, is the admin's too.
        assert site.crawls_pending(config) == 1


def test_an_owner_asks_for_their_failed_files_to_be_read_again(page_of: PageOf, site: Site) -> None:
    own = site.config_id(OTHER_OWNER)
    with site.connect() as conn:
        conn.execute(
            "INSERT INTO asset_errors (storage_config_id, file_path, reason, first_seen_at,"
            " last_seen_at, size, modified_ns, inode, retry_after)"
            " VALUES (%s, 'broken/odd.jpg', 'corrupt', now(), now(), 1, 1, 1,"
            " now() + interval '9 days') ON CONFLICT DO NOTHING",
            (own,),
        )
    page = page_of(site.url)
    page.goto("/configs")
    fill_sign_in(page, OTHER_OWNER)

    page.locator(f'button[data-action="/api/configs/{own}/retry-failed"]').click()

    flash = page.locator("#flash")
    expect(flash).to_have_attribute("data-ok", "true")
    expect(flash).to_contain_text(re.compile(r"\d+ failed files? will be read again"))
    assert site.crawls_pending(own) == 1
    with site.connect() as conn:
        [(waiting,)] = conn.execute(
            "SELECT count(*) FROM asset_errors WHERE storage_config_id = %s"
            " AND retry_after > now()",
            (own,),
        ).fetchall()
    assert waiting == 0


def test_signing_out_sends_every_page_to_the_sign_in_page(page_of: PageOf, site: Site) -> None:
    page = page_of(site.url)
    page.goto("/queue")
    fill_sign_in(page, OWNER)
    expect(page).to_have_url(f"{site.url}queue")

    page.click("#sign-out button")

    expect(page).to_have_url(re.compile(r"/login"))
    for path in ("/", "/configs", "/queue", "/account"):
        page.goto(path)
        expect(page).to_have_url(re.compile(r"/login\?next="))
        expect(page.locator("#viewer")).to_have_count(0)


def serve_process(
    argv: list[str], database_url: str, home: Path
) -> tuple[subprocess.Popen[str], str, str]:
    """``safelight ARGV --port 0``, as a user starts it: the process, its URL, and the
    line after the URL."""
    process = start_safelight(
        *argv,
        "--port",
        "0",
        env={
            "SAFELIGHT_DATABASE_URL": database_url,
            "SAFELIGHT_HOME": str(home),
        },
    )
    assert process.stdout is not None
    first = process.stdout.readline()
    assert first.startswith("safelight serve: "), (first, process.poll())
    return process, first.split()[2], process.stdout.readline()


def stop(process: subprocess.Popen[str]) -> str:
    process.terminate()
    _, errors = process.communicate(timeout=GUARD_SECONDS)
    assert process.returncode == 0, errors
    return errors


def test_the_first_admin_link_signs_in_and_a_password_set_then_signs_in(
    page_of: PageOf,
    page_problems: list[str],
    pg_server: PgTestServer,
    tmp_path: Path,
) -> None:
    name, database_url = pg_server.new_database()
    process, url, offer = serve_process(["serve"], database_url, tmp_path / "home")
    try:
        assert "makes you the admin" in offer, offer
        link = link_in(offer)
        page = page_of(url)

        page.goto(link)

        expect(page.locator("#on-this-day")).to_be_visible()
        expect(page).to_have_url(url)  # the token is gone from the address bar
        expect(page.locator("#viewer")).to_have_text(os_user())
        banner = page.locator("#password-banner")
        expect(banner).to_contain_text("Set a password to sign in from other devices")

        banner.locator("a").click()
        expect(page.locator("#account-name")).to_have_text(os_user())
        expect(page.locator("#account-role")).to_contain_text("admin")
        page.fill("#password-new", NEW_PASSWORD)
        page.fill("#password-again", NEW_PASSWORD)
        page.click("#password-submit")
        expect(page.locator("#account-done")).to_be_visible()
        expect(page.locator("#password-banner")).to_have_count(0)
        expect(page.locator("#password-current")).to_be_visible()

        page.click("#sign-out button")
        page.goto("/")
        fill_sign_in(page, os_user(), NEW_PASSWORD)
        expect(page.locator("#on-this-day")).to_be_visible()

        # The link is spent: opened again, it says so and where to sign in.
        again = page_of(url)
        again.goto(link)
        expect(again.locator("#welcome-used")).to_contain_text("This link was used")
        expect(again.locator("#welcome-login")).to_have_attribute("href", "/login")
        # Chromium reports the 410 of the page itself on the console.
        page_problems[:] = [p for p in page_problems if "410" not in p]
    finally:
        errors = stop(process)
        pg_server.drop_database(name)
    assert link.split("#token=")[1] not in errors


def test_the_demos_printed_command_and_its_one_link_show_the_demos_day(
    page_of: PageOf,
    pg_server: PgTestServer,
    tmp_path: Path,
    demo_summary: Callable[[str, Path], Any],
) -> None:
    name, database_url = pg_server.new_database()
    home = tmp_path / "home"
    try:
        summary = demo_summary(database_url, home)
        command = summary["serve"]["command"]
        [day] = command[command.index("--day") + 1 :][:1]
        process, url, offer = serve_process(command[1:], database_url, home)
        try:
            page = page_of(url)

            page.goto(link_in(offer))

            expect(page).to_have_url(f"{url}?date={day}")
            expect(page.locator("#viewer")).to_have_text(os_user())
            expect(page.locator("li.tile").first).to_be_visible()
            document = page.request.get(f"{url}api/on-this-day?date={day}").json()
            assert document["count"] >= 1
            shown = tile_ids(page)
            assert shown and shown <= {
                asset["id"] for year in document["years"] for asset in year["assets"]
            }
        finally:
            stop(process)
    finally:
        pg_server.drop_database(name)
