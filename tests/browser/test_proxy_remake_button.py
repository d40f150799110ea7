"""The configs page's "remake missing proxies" in Chromium (ADR 0059): an owner's press
queues a remake of their config, through the session's CSRF token."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from safelight.testing.browsersite import OWNER, PASSWORDS, PageOf, Site

pytestmark = pytest.mark.browser


def test_an_owner_queues_a_remake_of_their_missing_proxies(page_of: PageOf, site: Site) -> None:
    own = site.config_id(OWNER)
    page = page_of(site.url)
    page.goto("/configs")  # the sign-in page first, then back to the configs
    page.fill("input[name=username]", OWNER)
    page.fill("input[name=password]", PASSWORDS[OWNER])
    page.click("#login-submit")
    expect(page.locator("#viewer")).to_have_text(OWNER)
    try:
        page.locator(f'button[data-action="/api/configs/{own}/remake-proxies/missing"]').click()

        flash = page.locator("#flash")
        expect(flash).to_have_attribute("data-ok", "true")
        expect(flash).to_contain_text("a remake of its missing proxies")
        with site.connect() as conn:
            rows = conn.execute(
                "SELECT payload FROM work_items WHERE kind = 'proxy_remake'"
                " AND storage_config_id = %s AND status = 'queued'",
                (own,),
            ).fetchall()
        assert rows == [({"mode": "missing"},)]
    finally:
        # The site is shared by the module's tests: leave its queue as it was.
        with site.connect() as conn:
            conn.execute("DELETE FROM work_items WHERE kind = 'proxy_remake'")
