"""The "Failed files" page in Chromium (#31 item 1, ADR 0058): a crawl's broken files
listed by reason, reached from the configs page's count; "try again" for a reason makes
them due and queues a crawl (the queue page then says no Worker runs it); a fixed file
is gone after the next crawl, a still broken one stays, read once more."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from safelight.testing.browsersite import Site
from safelight.testing.handlers import jpeg, write
from tests.acceptance.harness import safelight_process

pytestmark = pytest.mark.browser

# A third owner's library of its own: the site's two owners' days stay as they are.
OWNER = "failed-files-owner"
BROKEN = b"\xff\xd8\xff this is no JPEG at all, only its first three bytes"
# A real guard for a crawl that would otherwise hang a broken test; no tested deadline.
GUARD_SECONDS = 300


def crawl(site: Site, root: Path) -> None:
    """``safelight run ROOT --user OWNER``, as a process, into the site's database."""
    env = {
        "SAFELIGHT_DATABASE_URL": site.database_url,
        "SAFELIGHT_HOME": str(site.settings.home),
        "SAFELIGHT_DECODE_PROCESSES": "0",
    }
    done = safelight_process("run", str(root), "--user", OWNER, env=env, timeout=GUARD_SECONDS)
    assert done.returncode in (0, 1), done.stderr  # 1: files failed, as they must


def failures_of(site: Site, config_id: str, path: str) -> int:
    with site.connect() as conn:
        row = conn.execute(
            "SELECT failures FROM asset_errors WHERE storage_config_id = %s AND file_path = %s",
            (config_id, path),
        ).fetchone()
    assert row is not None
    return int(row[0])


@pytest.fixture
def third_owner(site: Site) -> Iterator[None]:
    """The third owner's config taken out of the shared site after the test: the admin
    sees every owner's photos, and its dated photo would move the admin's nearest days
    that other browser tests count on (tests/browser/test_first_hour.py)."""
    yield
    with site.connect() as conn:
        conn.execute("DELETE FROM storage_configs WHERE owner = %s", (OWNER,))


@pytest.mark.usefixtures("third_owner")
def test_failed_files_listed_tried_again_by_reason_and_gone_once_fixed(
    page: Page, site: Site, tmp_path: Path
) -> None:
    root = tmp_path / "photos"
    write(root, "good.jpg", jpeg(1))
    write(root, "trip/a.jpg", BROKEN)
    write(root, "trip/b.jpg", BROKEN + b" and more")
    write(root, "empty.jpg", b"")
    crawl(site, root)
    config_id = site.config_id(OWNER)

    page.goto("/configs")
    count = page.locator(f'article.config[data-config-id="{config_id}"] a.failed-link')
    expect(count).to_have_text("3 files")
    count.click()
    expect(page).to_have_url(f"{site.url.rstrip('/')}/failed?config={config_id}")
    expect(page.locator("#nav-failed")).to_have_attribute("aria-current", "page")

    listed = page.locator(f'article.failed-config[data-config-id="{config_id}"]')
    corrupt = listed.locator('section.failed-reason[data-files="2"]')
    expect(corrupt.locator("tbody tr")).to_have_count(2)
    expect(corrupt.locator('tr[data-path="trip/a.jpg"]')).to_be_visible()
    expect(corrupt.locator('tr[data-path="trip/b.jpg"] .next-retry')).to_contain_text(
        "when it changes, or after"
    )
    expect(
        listed.locator('section.failed-reason[data-files="1"] tr[data-path="empty.jpg"]')
    ).to_be_visible()

    corrupt.locator("p.actions button").click()

    flash = page.locator("#flash")
    expect(flash).to_have_attribute("data-ok", "true")
    expect(flash).to_contain_text("2 failed files will be read again")
    # The page reloads by itself: both are due now, the empty file is not.
    expect(corrupt.locator('tr[data-path="trip/a.jpg"] .next-retry')).to_have_attribute(
        "data-due", "true"
    )
    expect(corrupt.locator('tr[data-path="trip/b.jpg"] .next-retry')).to_have_text(
        "at the next crawl"
    )
    expect(listed.locator('tr[data-path="empty.jpg"] .next-retry')).to_have_attribute(
        "data-due", "false"
    )
    assert site.crawls_pending(config_id) == 1
    page.goto("/queue")
    expect(page.locator("#no-worker")).to_contain_text("no Worker is running")
    expect(page.locator("#no-worker")).to_contain_text("safelight worker")

    write(root, "trip/a.jpg", jpeg(2))  # fixed; b.jpg stays broken
    crawl(site, root)

    page.goto(f"/failed?config={config_id}")
    expect(listed.locator('tr[data-path="trip/b.jpg"]')).to_be_visible()
    expect(listed.locator('tr[data-path="trip/a.jpg"]')).to_have_count(0)
    expect(listed.locator('section.failed-reason[data-files="1"]')).to_have_count(2)
    assert failures_of(site, config_id, "trip/b.jpg") == 2  # read again, as asked
    assert failures_of(site, config_id, "empty.jpg") == 1  # not asked, unchanged: left
    assert site.crawls_pending(config_id) == 0
