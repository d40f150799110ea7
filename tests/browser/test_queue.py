"""The queue page in Chromium: a running item's end shows without a reload, and cancel
works for a person signed in (with the CSRF token the sign-in page kept) and is refused
to anyone else."""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any
from uuid import UUID

import pytest
from playwright.sync_api import Page, expect

from safelight.app import app_store
from safelight.core.clock import SystemClock
from safelight.db.database import Database
from safelight.db.pool import open_pool
from safelight.handlers import CRAWL
from safelight.testing.browsersite import ADMIN, PASSWORD, Site, run_async
from safelight.testing.rows import add_config

pytestmark = pytest.mark.browser

LEASE_SECONDS = 600.0
_owners = itertools.count()


@dataclass(frozen=True)
class Running:
    item_id: int
    attempt: int
    config_id: UUID


class Queue:
    """Running items of configs of their own, made and ended through the real store
    (as a Worker would), each call on a pool of its own in a thread of its own."""

    def __init__(self, site: Site) -> None:
        self.site = site
        self.made: list[Running] = []

    def _with_store(self, body: Any) -> Any:
        async def main() -> Any:
            pool = await open_pool(self.site.database_url, min_size=1, max_size=2)
            try:
                store = app_store(
                    Database(self.site.database_url, pool), self.site.settings, SystemClock()
                )
                return await body(store)
            finally:
                await pool.close()

        return run_async(main)

    def running(self, worker_id: str = "browser-test") -> Running:
        owner = f"queue-test-{next(_owners)}"
        config_id = run_async(
            lambda: add_config(self.site.database_url, SystemClock(), owner, f"/photos/{owner}")
        )

        async def claim(store: Any) -> Running:
            item_id = await CRAWL.enqueue_for(store, config_id)
            item = await store.claim(
                worker_id, [CRAWL.name], owner=owner, lease_seconds=LEASE_SECONDS
            )
            assert item is not None and item.id == item_id
            return Running(item.id, item.attempt, config_id)

        made: Running = self._with_store(claim)
        self.made.append(made)
        return made

    def complete(self, item: Running) -> None:
        assert self._with_store(lambda store: store.complete(item.item_id, item.attempt))

    def fail(self, item: Running, error: str) -> None:
        assert self._with_store(lambda store: store.fail(item.item_id, item.attempt, error))

    def status(self, item: Running) -> tuple[str, bool]:
        with self.site.connect() as conn:
            row = conn.execute(
                "SELECT status::text, cancel_requested FROM work_items WHERE id = %s",
                (item.item_id,),
            ).fetchone()
        assert row is not None
        return str(row[0]), bool(row[1])

    def end_all(self) -> None:
        """Leave no running item to the next test's page (and screenshot)."""
        for item in self.made:
            self._with_store(lambda store, i=item: store.cancel(i.item_id, i.attempt))


@pytest.fixture
def work(site: Site) -> Iterator[Queue]:
    made = Queue(site)
    try:
        yield made
    finally:
        made.end_all()


def running_row(page: Page, item: Running) -> Any:
    return page.locator(f"#running tbody tr[data-item-id='{item.item_id}']")


def test_the_queue_page_shows_an_items_end_without_a_reload(page: Page, work: Queue) -> None:
    finishing, failing = work.running(), work.running()
    page.goto("/queue")
    expect(running_row(page, finishing)).to_be_visible()
    expect(running_row(page, failing)).to_be_visible()
    page.evaluate("() => { window.sameDocument = true; }")
    refreshed = int(page.locator("#queue").get_attribute("data-refreshed") or "0")

    work.complete(finishing)
    work.fail(failing, "the NAS went away (browser test)")

    # The page redraws from /api/status by itself: the rows leave Running, the failure
    # shows with its error, and it is still the same document (no reload).
    expect(running_row(page, finishing)).to_have_count(0)
    expect(running_row(page, failing)).to_have_count(0)
    failure = page.locator(f"#failures tbody tr[data-item-id='{failing.item_id}']")
    expect(failure).to_be_visible()
    expect(failure.locator(".error-text")).to_have_text("the NAS went away (browser test)")
    assert page.evaluate("() => window.sameDocument === true")
    assert int(page.locator("#queue").get_attribute("data-refreshed") or "0") > refreshed


def test_an_item_held_beside_its_workers_last_outcome_shows_so_until_it_starts(
    page: Page, work: Queue
) -> None:
    """ADR 0069: the second item a Worker holds has not started while the first's
    outcome is on its way; the page says so, and redraws once it has started."""
    first = work.running("browser-held")
    held = work.running("browser-held")
    page.goto("/queue")
    # As the page drew it, and as its script redraws it from /api/status.
    for redrawn in (False, True):
        if redrawn:
            expect(page.locator("#queue")).to_have_attribute("data-refreshed", re.compile(r"\d"))
        expect(running_row(page, held)).to_contain_text("not yet: held")
        expect(running_row(page, held)).to_have_attribute("data-held", "true")
        expect(running_row(page, first)).not_to_contain_text("not yet: held")

    work.complete(first)

    expect(running_row(page, first)).to_have_count(0)
    expect(running_row(page, held)).not_to_contain_text("not yet: held")
    expect(running_row(page, held)).not_to_have_attribute("data-held", "true")


def test_cancel_works_for_a_person_signed_in(page: Page, site: Site, work: Queue) -> None:
    item = work.running()
    page.goto("/queue")
    row = running_row(page, item)
    expect(row).to_be_visible()

    row.get_by_role("button", name="cancel").click()

    expect(page.locator("#flash")).to_be_visible()
    expect(page.locator("#flash")).to_have_attribute("data-ok", "true")
    expect(row).to_contain_text("cancel requested")
    assert work.status(item) == ("running", True)


def test_signed_out_the_queue_is_not_shown_and_cancel_is_refused(
    anonymous_page: Page, site: Site, work: Queue, page_problems: list[str]
) -> None:
    page = anonymous_page
    item = work.running()
    page.goto("/queue")
    # Signed out, the queue is the sign-in page ...
    expect(page).to_have_url(re.compile(r"/login\?next=/queue$"))
    expect(page.locator("#login-form")).to_be_visible()
    expect(page.locator("#running")).to_have_count(0)

    # ... and the API refuses the request the button would send, with or without a
    # made-up CSRF token or a wrong bearer token.
    statuses = page.evaluate(
        """async (url) => {
            const post = (headers) => fetch(url, { method: "POST", headers })
                .then((r) => r.status);
            return [
                await post({}),
                await post({ "X-CSRF-Token": "made-up" }),
                await post({ Authorization: "Bearer sl_not-a-token" }),
            ];
        }""",
        f"/api/items/{item.item_id}/cancel",
    )

    assert statuses == [401, 401, 401]
    assert work.status(item) == ("running", False)
    # The three refusals, as Chromium logs each failed request.
    refused = [p for p in page_problems if "401" in p]
    assert len(refused) == 3, page_problems
    page_problems[:] = [p for p in page_problems if p not in refused]


def test_a_signed_in_action_without_its_csrf_token_is_refused(
    page: Page, site: Site, work: Queue, page_problems: list[str]
) -> None:
    item = work.running()
    page.goto("/queue")
    expect(running_row(page, item)).to_be_visible()

    # The session cookie goes with the request, but not the page's CSRF token.
    status = page.evaluate(
        "(url) => fetch(url, { method: 'POST', credentials: 'same-origin' }).then((r) => r.status)",
        f"/api/items/{item.item_id}/cancel",
    )

    assert status == 403
    assert work.status(item) == ("running", False)
    page_problems[:] = [p for p in page_problems if "403" not in p]


def test_a_page_without_the_csrf_token_says_to_sign_in_again_to_act(
    page: Page, site: Site, work: Queue
) -> None:
    """The token lives only in the origin's storage, where the sign-in page's script put
    it: a page without it (storage cleared, or a sign-in with no script) cannot act, says
    so, and its button leads to the sign-in page, which gives a new one."""
    item = work.running()
    page.goto("/queue")
    page.evaluate("() => window.localStorage.clear()")
    page.reload()
    button = running_row(page, item).locator("button[data-action]")
    expect(button).to_have_text("sign in again to act")
    assert "csrf" not in page.content().lower()  # never in the page

    button.click()
    expect(page).to_have_url(re.compile(r"/login\?next=%2Fqueue$"))
    page.locator("#login-username").fill(ADMIN)
    page.locator("#login-password").fill(PASSWORD)
    page.locator("#login-submit").click()
    expect(page).to_have_url(re.compile(r"/queue$"))
    expect(running_row(page, item).get_by_role("button", name="cancel")).to_be_visible()
