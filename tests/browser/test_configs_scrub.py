"""The configs page in Chromium shows an owner the originals the scrub found changed
under the same time (ADR 0062): a count and the list, their own only."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from playwright.sync_api import Page, expect

from safelight.testing.browsersite import OTHER_OWNER, OWNER, PASSWORDS, PageOf, Site

pytestmark = pytest.mark.browser

FOUND = "00000000deadbeef"


def sign_in(page: Page, name: str) -> None:
    expect(page.locator("#login-form")).to_be_visible()
    page.fill("input[name=username]", name)
    page.fill("input[name=password]", PASSWORDS[name])
    page.click("#login-submit")
    expect(page.locator("#viewer")).to_have_text(name)


@pytest.fixture
def changed(site: Site) -> Iterator[tuple[int, str]]:
    """One of OTHER_OWNER's originals recorded as the scrub records a change (taken back
    after the test: the site is the session's)."""
    with site.connect() as conn:
        [(asset_id, path)] = conn.execute(
            "UPDATE assets SET content_checked_at = now(), content_mismatch_at = now(),"
            " content_found_hash = %s WHERE id = (SELECT a.id FROM assets a"
            " JOIN storage_configs c ON c.id = a.storage_config_id"
            " WHERE c.owner = %s AND NOT a.is_deleted ORDER BY a.id LIMIT 1)"
            " RETURNING id, file_path",
            (FOUND, OTHER_OWNER),
        ).fetchall()
    try:
        yield int(asset_id), str(path)
    finally:
        with site.connect() as conn:
            conn.execute(
                "UPDATE assets SET content_checked_at = NULL, content_mismatch_at = NULL,"
                " content_found_hash = NULL WHERE id = %s",
                (asset_id,),
            )


def test_an_owner_sees_their_originals_changed_under_the_same_time(
    page_of: PageOf, site: Site, changed: tuple[int, str]
) -> None:
    asset_id, path = changed
    page = page_of(site.url)
    page.goto("/configs")
    sign_in(page, OTHER_OWNER)
    expect(page.locator(".originals-changed")).to_contain_text(
        "1 original changed without its time changing"
    )
    row = page.locator(f'.originals-changed-list tr[data-asset-id="{asset_id}"]')
    expect(row).to_contain_text(path)
    expect(row).to_contain_text(FOUND)

    other = page_of(site.url)
    other.goto("/configs")
    sign_in(other, OWNER)
    expect(other.locator(".originals-changed")).to_have_text("none found")
    expect(other.locator(".originals-changed-list")).to_have_count(0)
