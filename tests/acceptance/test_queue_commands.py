"""The operator's commands on the queue: enqueue, worker --until-idle, items, items show,
cancel, status; and storage configs: config add, list, disable."""

from __future__ import annotations

import asyncio
from pathlib import Path

import psycopg
import pytest

from safelight.app import app_store
from safelight.core.clock import SystemClock
from safelight.db.database import open_database
from safelight.settings import Settings
from safelight.testing.invoking import Invoke
from tests.acceptance.harness import json_of, safelight_process

pytestmark = pytest.mark.acceptance


def last_line(text: str) -> str:
    return text.strip().splitlines()[-1]


def test_enqueue_run_and_inspect_a_noop(invoke: Invoke) -> None:
    enqueued = invoke("enqueue", "noop", "--payload", '{"seconds": 0.05}')
    assert enqueued.exit_code == 0, enqueued.output
    item_id = int(last_line(enqueued.stdout))

    queued = json_of(invoke("items", "show", str(item_id), "--json"))
    assert queued["status"] == "queued" and queued["attempts"] == []
    assert queued["payload"] == {"seconds": 0.05}

    worked = invoke("worker", "--until-idle", "--concurrency", "2")
    assert worked.exit_code == 0, worked.output
    assert worked.stdout == ""  # a Worker logs to stderr only

    shown = json_of(invoke("items", "show", str(item_id), "--json"))
    assert shown["status"] == "succeeded" and shown["result"] == {"slept": 0.05}
    (attempt,) = shown["attempts"]
    assert attempt["attempt"] == 1 and attempt["outcome"] == "succeeded"
    assert attempt["worker_id"] == shown["worker_id"]

    listed = json_of(invoke("items", "--json", "--kind", "noop", "--status", "succeeded"))
    assert [i["id"] for i in listed] == [item_id]
    assert json_of(invoke("items", "--json", "--status", "queued")) == []

    human = invoke("items", "show", str(item_id))
    assert human.exit_code == 0 and "attempts" in human.stdout and "succeeded" in human.stdout
    table = invoke("items")
    assert "noop" in table.stdout and str(item_id) in table.stdout


def test_a_dedup_key_queues_one_item(invoke: Invoke) -> None:
    first = last_line(invoke("enqueue", "noop", "--dedup-key", "k1").stdout)
    second = last_line(invoke("enqueue", "noop", "--dedup-key", "k1").stdout)
    assert first == second
    assert len(json_of(invoke("items", "--json"))) == 1


def test_enqueue_of_a_payload_its_kind_does_not_take_is_one_line_exit_2_and_queues_nothing(
    invoke: Invoke, database_url: str
) -> None:
    result = invoke("enqueue", "noop", "--payload", '{"seconds": "abc"}')
    assert result.exit_code == 2, result.output
    assert result.stdout == ""
    assert result.stderr == (
        'safelight: error: enqueue noop: payload field "seconds": expected a number, got "abc"\n'
    )
    result = invoke("enqueue", "proxy_deletion", "--payload", '{"asset_ids": [1, "2"]}')
    assert result.exit_code == 2, result.output
    assert result.stderr == (
        "safelight: error: enqueue proxy_deletion: payload field "
        '"asset_ids[1]": expected a whole number, got "2"\n'
    )
    with psycopg.connect(database_url) as conn:
        assert conn.execute("SELECT count(*) FROM work_items").fetchone() == (0,)


def test_enqueue_of_a_noop_beyond_an_hour_or_a_payload_nested_20000_deep_is_exit_2(
    invoke: Invoke, database_url: str
) -> None:
    result = invoke("enqueue", "noop", "--payload", '{"seconds": 3601}')
    assert result.exit_code == 2, result.output
    assert result.stderr == (
        'safelight: error: enqueue noop: payload field "seconds": expected a number <= 3600,'
        " got 3601\n"
    )
    deep = '{"result": ' + '{"a": ' * 20_000 + "1" + "}" * 20_001
    result = invoke("enqueue", "noop", "--payload", deep)
    assert result.exit_code == 2, result.output
    assert result.stderr == "safelight: error: --payload is nested more than 32 levels deep\n"
    with psycopg.connect(database_url) as conn:
        assert conn.execute("SELECT count(*) FROM work_items").fetchone() == (0,)


def test_cancel_a_queued_item_then_again(invoke: Invoke) -> None:
    item_id = last_line(invoke("enqueue", "noop").stdout)
    cancelled = invoke("cancel", item_id)
    assert cancelled.exit_code == 0 and "cancelled item" in cancelled.stdout
    assert json_of(invoke("items", "show", item_id, "--json"))["status"] == "cancelled"
    again = invoke("cancel", item_id)
    assert again.exit_code == 0 and "already finished" in again.stdout
    missing = invoke("cancel", "999999")
    assert missing.exit_code == 2
    assert missing.stderr == "safelight: error: there is no work item 999999\n"


def test_status_shows_counts_running_items_and_failures(
    invoke: Invoke, database_url: str, small_library: Path
) -> None:
    config_id = last_line(invoke("config", "add", str(small_library)).stdout)
    # Fails: a malformed payload, queued before payloads were checked at enqueue.
    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute(
            "INSERT INTO work_items (kind, payload, requested_at)"
            " VALUES ('noop', '{\"seconds\": -1}', clock_timestamp())"
        )
    assert invoke("worker", "--until-idle").exit_code == 0
    running_id = int(last_line(invoke("enqueue", "crawl", "--config", config_id).stdout))

    async def claim() -> None:
        database = await open_database(database_url, Path("/nonexistent"))
        try:
            store = app_store(database, Settings(), SystemClock())
            item = await store.claim("test-worker", ["crawl"], lease_seconds=600)
            assert item is not None and item.id == running_id
        finally:
            await database.close()

    asyncio.run(claim())

    status = json_of(invoke("status", "--json"))
    assert status["totals"] == {"failed": 1, "running": 1}
    assert {(c["kind"], c["status"], c["count"]) for c in status["counts"]} == {
        ("noop", "failed", 1),
        ("crawl", "running", 1),
    }
    (running,) = status["running"]
    assert running["id"] == running_id and running["worker_id"] == "test-worker"
    assert running["storage_config_id"] == config_id and running["lease_expires_at"]
    assert running["root_path"] == str(small_library.resolve())
    (failure,) = status["failures"]
    assert failure["kind"] == "noop" and "seconds" in failure["error"]
    assert status["stalls"]["stalled_attempts"] == 0

    human = invoke("status")
    assert human.exit_code == 0
    for text in ("test-worker", config_id[:8], "last failures", "noop", "stalls"):
        assert text in human.stdout

    # A running item is asked to stop rather than cancelled outright.
    requested = invoke("cancel", str(running_id))
    assert requested.exit_code == 0 and "next heartbeat" in requested.stdout


def test_config_add_list_and_disable(invoke: Invoke, small_library: Path, tmp_path: Path) -> None:
    added = invoke("config", "add", str(small_library), "--user", "alice")
    assert added.exit_code == 0, added.output
    config_id = added.stdout.strip()
    assert "added" in added.stderr

    again = json_of(invoke("config", "add", str(small_library / "."), "--user", "alice", "--json"))
    assert again["id"] == config_id and again["created"] is False
    bob = json_of(invoke("config", "add", str(small_library), "--user", "bob", "--json"))
    assert bob["id"] != config_id

    listed = json_of(invoke("config", "list", "--json"))
    assert [(c["id"], c["owner"], c["active"]) for c in listed] == [
        (config_id, "alice", True),
        (bob["id"], "bob", True),
    ]
    assert "alice" in invoke("config", "list").stdout

    disabled = invoke("config", "disable", config_id[:8])
    assert disabled.exit_code == 0 and "disabled" in disabled.stdout
    refused = invoke("enqueue", "crawl", "--config", config_id)
    assert refused.exit_code == 2 and "disabled" in refused.stderr
    assert json_of(invoke("config", "list", "--json"))[0]["active"] is False
    readded = json_of(invoke("config", "add", str(small_library), "--user", "alice", "--json"))
    assert readded["id"] == config_id and readded["reactivated"] is True

    missing = invoke("config", "add", str(tmp_path / "nope"))
    assert missing.exit_code == 2 and "does not exist" in missing.stderr
    unknown = invoke("config", "disable", "00000000-0000-0000-0000-000000000000")
    assert unknown.exit_code == 2 and "no storage config" in unknown.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("enqueue", "bogus"), "unknown kind 'bogus'"),
        (("enqueue", "noop", "--payload", "{bad"), "--payload is not valid JSON"),
        (("enqueue", "noop", "--payload", "[1, 2]"), "--payload must be a JSON object"),
        (("enqueue", "crawl"), "needs a storage config"),
        (("enqueue", "noop", "--config", "12345678"), "no storage config whose id starts"),
        (("enqueue", "noop", "--config", "xy"), "is not a storage config id"),
        (("items", "show", "424242"), "there is no work item 424242"),
        (("items", "show", "abc"), "'abc' is not a valid integer"),
        (("items", "--status", "bogus"), "Invalid value for '--status'"),
        (("cancel",), "Missing argument 'ID'"),
        (("assets", "--config", "ffffffff"), "no storage config whose id starts"),
        (("purge", "ffffffff"), "no storage config whose id starts"),
        (("frobnicate",), "No such command 'frobnicate'"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(
    invoke: Invoke, args: tuple[str, ...], message: str
) -> None:
    result = invoke(*args)
    assert result.exit_code == 2, result.output
    assert result.stdout == ""
    (line,) = result.stderr.splitlines()
    assert line.startswith("safelight: error: ") and message in line


def _record_newer_migration(database_url: str) -> None:
    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute(
            "INSERT INTO schema_migrations (version, name, checksum)"
            " VALUES ('0099', '0099_future.sql', 'f00')"
        )


@pytest.mark.parametrize(
    "args", [("items",), ("status",), ("db", "migrate"), ("worker", "--until-idle")], ids=" ".join
)
def test_a_database_a_newer_release_migrated_is_one_line_and_exit_2(
    invoke: Invoke, database_url: str, args: tuple[str, ...]
) -> None:
    _record_newer_migration(database_url)
    result = invoke(*args)
    assert result.exit_code == 2, result.output
    assert result.stdout == ""
    (line,) = result.stderr.splitlines()
    assert line.startswith(
        "safelight: error: the database has migrations this safelight ("
    ) and line.endswith(
        "does not know: 0099_future.sql; it was migrated by a newer release: upgrade safelight"
    )


def test_a_changed_migration_file_is_one_line_and_exit_70(
    invoke: Invoke, database_url: str
) -> None:
    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute("UPDATE schema_migrations SET checksum = 'f00' WHERE version = '0002'")
    result = invoke("db", "migrate")
    assert result.exit_code == 70, result.output
    (line,) = result.stderr.splitlines()
    assert line.startswith(
        "safelight: error: migrations changed since they were applied to the database: "
        "0002_library.sql (recorded sha256 f00…, file "
    )
    assert "internal error" not in line


def test_a_worker_process_on_a_newer_schema_exits_2_without_a_traceback(
    database_url: str, tmp_path: Path
) -> None:
    _record_newer_migration(database_url)
    done = safelight_process(
        "worker",
        env={"SAFELIGHT_DATABASE_URL": database_url, "SAFELIGHT_HOME": str(tmp_path)},
    )
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    assert done.stderr.splitlines()[-1].startswith(
        "safelight: error: the database has migrations this safelight"
    )


def test_status_names_the_server_s_version(invoke: Invoke, database_url: str) -> None:
    with psycopg.connect(database_url) as conn:
        row = conn.execute("SHOW server_version").fetchone()
    assert row is not None
    expected = f"PostgreSQL {row[0]}"
    assert json_of(invoke("status", "--json"))["server_version"] == expected
    human = invoke("status")
    assert human.exit_code == 0
    assert f"server: {expected}" in human.stdout


def test_status_shows_an_item_held_beside_its_workers_last_outcome(
    invoke: Invoke, database_url: str
) -> None:
    """ADR 0069: a Worker's second running item has not started while the first is
    running; `safelight status` says so."""
    first = int(last_line(invoke("enqueue", "noop").stdout))
    held = int(last_line(invoke("enqueue", "noop").stdout))

    async def claim_both() -> None:
        database = await open_database(database_url, Path("/nonexistent"))
        try:
            store = app_store(database, Settings(), SystemClock())
            for expected in (first, held):
                item = await store.claim("held-worker", ["noop"], lease_seconds=600)
                assert item is not None and item.id == expected
        finally:
            await database.close()

    asyncio.run(claim_both())

    status = json_of(invoke("status", "--json"))
    assert {r["id"]: r["held"] for r in status["running"]} == {first: False, held: True}
    human = invoke("status")
    assert human.exit_code == 0
    lines = {
        n: line
        for line in human.stdout.splitlines()
        for n in (first, held)
        if line.strip().startswith(f"{n} ")
    }
    assert "not yet: held" in lines[held] and "not yet: held" not in lines[first]
