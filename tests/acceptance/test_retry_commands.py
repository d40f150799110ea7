"""``items retry ID`` and ``items retry --failed [--kind K] [--config ID]``, and what
``items`` and ``items show`` say of an item's retries and the time it waits for
(ADR 0024)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import psycopg
import pytest

from safelight.testing.invoking import Invoke
from tests.acceptance.harness import json_of

pytestmark = pytest.mark.acceptance


def insert(database_url: str, status: str, kind: str = "noop", **columns: Any) -> int:
    """An item as a Worker would have left it: failed after 3 attempts, or queued."""
    values: dict[str, Any] = {"kind": kind, "attempt": 3, "stalls": 1, "retries": 1, **columns}
    finished = "now()" if status == "failed" else "NULL"
    names = ", ".join(values)
    params = ", ".join(f"%({name})s" for name in values)
    with psycopg.connect(database_url, autocommit=True) as conn:
        row = conn.execute(
            f"INSERT INTO work_items (status, requested_at, finished_at, error, {names})"
            f" VALUES (%(status)s, now(), {finished}, 'OSError: gone', {params}) RETURNING id",
            {"status": status, **values},
        ).fetchone()
    assert row is not None
    return int(row[0])


def status_of(invoke: Invoke, item_id: int) -> str:
    return str(json_of(invoke("items", "show", str(item_id), "--json"))["status"])


def test_items_retry_puts_a_failed_item_back_due_now(invoke: Invoke, database_url: str) -> None:
    item_id = insert(database_url, "failed")
    retried = invoke("items", "retry", str(item_id))
    assert (retried.exit_code, retried.stdout) == (0, f"item {item_id} is queued again, due now\n")
    shown = json_of(invoke("items", "show", str(item_id), "--json"))
    assert (shown["status"], shown["retries"], shown["stalls"], shown["not_before"]) == (
        "queued",
        0,
        0,
        None,
    )
    assert shown["finished_at"] is None and shown["attempt"] == 3

    ran = invoke("worker", "--until-idle")
    assert ran.exit_code == 0, ran.output
    assert status_of(invoke, item_id) == "succeeded"


def test_items_retry_refuses_an_item_it_cannot_retry_in_one_line(
    invoke: Invoke, database_url: str
) -> None:
    queued = insert(database_url, "queued")
    refused = invoke("items", "retry", str(queued))
    assert refused.exit_code == 2
    assert refused.stderr == (
        f"safelight: error: item {queued} is queued, not failed: nothing to retry\n"
    )
    missing = invoke("items", "retry", "999999")
    assert missing.exit_code == 2
    assert missing.stderr == "safelight: error: there is no work item 999999\n"

    held = insert(database_url, "failed", dedup_key="nightly")
    insert(database_url, "queued", dedup_key="nightly")
    kept = invoke("items", "retry", str(held))
    assert kept.exit_code == 2
    assert kept.stderr == (
        f"safelight: error: item {held} stays failed: its dedup key nightly already has a "
        "queued item, which does its work\n"
    )
    assert status_of(invoke, held) == "failed"


def test_items_retry_failed_requeues_every_matching_failed_item(
    invoke: Invoke, database_url: str, small_library: Path
) -> None:
    config_id = invoke("config", "add", str(small_library)).stdout.strip().splitlines()[-1]
    scoped = insert(database_url, "failed", storage_config_id=config_id)
    scoped_crawl = insert(database_url, "failed", "crawl", storage_config_id=config_id)
    unscoped = insert(database_url, "failed")
    other_kind = insert(database_url, "failed", "token_cleanup")
    insert(database_url, "failed", "token_cleanup", dedup_key="daily")
    insert(database_url, "queued", "token_cleanup", dedup_key="daily")

    by_both = invoke("items", "retry", "--failed", "--kind", "noop", "--config", config_id[:8])
    assert by_both.exit_code == 0, by_both.output
    assert by_both.stdout == "retried 1 failed item: queued again, due now\n"
    assert status_of(invoke, scoped) == "queued"
    assert status_of(invoke, scoped_crawl) == status_of(invoke, unscoped) == "failed"

    by_kind = invoke("items", "retry", "--failed", "--kind", "token_cleanup")
    assert by_kind.stdout == (
        "retried 1 failed item: queued again, due now; 1 stay failed: their dedup key "
        "already has a queued item, or a newer failed item of their key was retried\n"
    )
    assert status_of(invoke, other_kind) == "queued"

    every = invoke("items", "retry", "--failed")
    assert every.stdout.startswith("retried 2 failed items")
    assert status_of(invoke, scoped_crawl) == status_of(invoke, unscoped) == "queued"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((), "give an item ID, or --failed for every failed item"),
        (("7", "--failed"), "give an item ID or --failed, not both"),
        (("7", "--kind", "noop"), "--kind and --config go with --failed"),
        (("7", "--config", "abcd1234"), "--kind and --config go with --failed"),
    ],
)
def test_items_retry_wants_an_id_or_failed(
    invoke: Invoke, args: tuple[str, ...], message: str
) -> None:
    result = invoke("items", "retry", *args)
    assert result.exit_code == 2
    assert result.stderr == (f"safelight: error: {message} (see 'safelight items retry --help')\n")


def test_items_and_items_show_say_how_often_an_item_was_retried_and_until_when_it_waits(
    invoke: Invoke, database_url: str
) -> None:
    waiting = insert(database_url, "queued", retries=2, not_before="2031-05-01T12:00:00Z")
    shown = json_of(invoke("items", "show", str(waiting), "--json"))
    assert (shown["retries"], shown["stalls"]) == (2, 1)
    assert shown["not_before"].startswith("2031-05-01T12:00:00")
    human = invoke("items", "show", str(waiting)).stdout
    assert "retries" in human and "not_before" in human and "2031-05-01" in human
    listed = json_of(invoke("items", "--json"))
    assert [(i["id"], i["retries"], i["not_before"][:10]) for i in listed] == [
        (waiting, 2, "2031-05-01")
    ]
    table = invoke("items").stdout
    assert "retries" in table and "retry at 2031-05-01" in table


def test_status_counts_the_retries_waiting_for_their_time_soonest_first(
    invoke: Invoke, database_url: str
) -> None:
    later = insert(database_url, "queued", not_before="2999-01-02T00:00:00Z")
    sooner = insert(database_url, "queued", not_before="2999-01-01T00:00:00Z")
    insert(database_url, "queued", not_before="2000-01-01T00:00:00Z")  # due: not waiting
    insert(database_url, "queued")

    retries = json_of(invoke("status", "--json"))["retries"]
    assert retries["waiting"] == 2
    assert [(r["id"], r["retries"], r["error"]) for r in retries["soonest"]] == [
        (sooner, 1, "OSError: gone"),
        (later, 1, "OSError: gone"),
    ]
    assert all("waiting" not in r for r in retries["soonest"])

    human = invoke("status")
    assert human.exit_code == 0
    assert "retries: 2 queued items wait for their retry time" in human.stdout
    assert "next retries" in human.stdout and "2999-01-01" in human.stdout
