"""``safelight health`` (exit 0 or 1, one line, ``--json``) for each of its reasons, and a
real ``safelight worker --metrics-port`` process: its presence, /metrics and /healthz."""

from __future__ import annotations

import json
import signal
import socket
import time
import urllib.error
import urllib.request
from pathlib import Path

import psycopg
import pytest
from prometheus_client.parser import text_string_to_metric_families

from safelight.cli.health import NO_WORKER_MEANS
from safelight.testing.invoking import Invoke
from tests.acceptance.harness import safelight_process, start_safelight
from tests.faults.cluster import free_port

pytestmark = pytest.mark.acceptance

SECRET = "s3cret-Passw0rd"


def execute(database_url: str, sql: str, *params: object) -> None:
    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute(sql, params)


def seen(database_url: str, worker_id: str, seconds_ago: float) -> None:
    execute(
        database_url,
        "INSERT INTO workers (worker_id, started_at, last_seen_at)"
        " VALUES (%s, now() - interval '1 hour', now() - make_interval(secs => %s))",
        worker_id,
        seconds_ago,
    )


def test_health_without_any_worker_is_unhealthy(invoke: Invoke) -> None:
    result = invoke("health")
    assert result.exit_code == 1
    assert (
        result.stdout
        == f"unhealthy: no Worker seen in the last 120 s (none is running): {NO_WORKER_MEANS}\n"
    )
    # What it means where only `run` is used, and the way on: one line still.
    assert "only 'safelight run'" in result.stdout and "'safelight worker'" in result.stdout


def test_health_with_a_worker_seen_recently_is_healthy_and_says_so_in_json(
    invoke: Invoke, database_url: str
) -> None:
    seen(database_url, "nas:41/0", 5)
    seen(database_url, "nas:41/1", 5)
    result = invoke("health")
    assert result.exit_code == 0, result.output
    assert result.stdout == (
        "healthy: the database answers, no lease is overdue, 2 Workers seen in the last 120 s\n"
    )
    document = json.loads(invoke("health", "--json").stdout)
    assert document["healthy"] is True and document["reason"] == result.stdout.strip()
    checks = document["checks"]
    assert checks["database"] == {"ok": True}
    assert checks["leases"] == {
        "ok": True,
        "overdue": 0,
        "most_overdue_id": None,
        "most_overdue_seconds": None,
    }
    assert checks["workers"]["ok"] is True and checks["workers"]["seen"] == 2
    assert 4 <= checks["workers"]["seconds_ago"] < 60


def test_health_when_the_last_worker_was_seen_long_ago(invoke: Invoke, database_url: str) -> None:
    seen(database_url, "nas:41", 600)
    result = invoke("health")
    assert result.exit_code == 1
    assert result.stdout == (
        f"unhealthy: no Worker seen in the last 120 s (last seen 600 s ago): {NO_WORKER_MEANS}\n"
    )
    # The window is a setting.
    assert invoke("health", env={"SAFELIGHT_HEALTH_WORKER_SEEN_SECONDS": "900"}).exit_code == 0


def test_health_with_a_lease_overdue_past_recovery(invoke: Invoke, database_url: str) -> None:
    seen(database_url, "nas:41", 1)
    enqueued = invoke("enqueue", "noop")
    item_id = int(enqueued.stdout.strip().splitlines()[-1])
    # Claimed by a Worker that died 60 s ago: its lease expired 60 s ago, and lease
    # recovery (every 15 s) would have taken it back were any Worker running it.
    execute(
        database_url,
        "UPDATE work_items SET status = 'running', attempt = 1, worker_id = 'gone',"
        " started_at = now() - interval '2 minutes', heartbeat_at = now() - interval '2 minutes',"
        " lease_expires_at = now() - interval '60 seconds' WHERE id = %s",
        item_id,
    )
    result = invoke("health")
    assert result.exit_code == 1
    assert result.stdout == (
        f"unhealthy: 1 running item has a lease expired more than 15 s ago (item {item_id}, "
        "60 s): is lease recovery running?\n"
    )
    leases = json.loads(invoke("health", "--json").stdout)["checks"]["leases"]
    assert (leases["ok"], leases["overdue"], leases["most_overdue_id"]) == (False, 1, item_id)
    # Expired, but not yet past a recovery interval: recovery has not had its turn.
    execute(
        database_url,
        "UPDATE work_items SET lease_expires_at = now() - interval '5 seconds' WHERE id = %s",
        item_id,
    )
    assert invoke("health").exit_code == 0


def test_health_of_an_unreachable_database_is_one_line_and_exit_1(invoke: Invoke) -> None:
    url = f"postgresql://safelight:{SECRET}@127.0.0.1:{free_port()}/safelight"
    started = time.monotonic()
    result = invoke("health", env={"SAFELIGHT_DATABASE_URL": url})
    assert time.monotonic() - started < 10
    assert result.exit_code == 1
    (line,) = result.stdout.splitlines()
    assert line.startswith("unhealthy: the database does not answer: OperationalError: ")
    document = json.loads(invoke("health", "--json", env={"SAFELIGHT_DATABASE_URL": url}).stdout)
    assert document["healthy"] is False and document["checks"]["database"]["ok"] is False
    assert set(document["checks"]) == {"database"}  # nothing else could be checked
    assert SECRET not in result.output and SECRET not in json.dumps(document)


def test_health_of_a_database_not_migrated_to_this_release(
    invoke: Invoke, database_url: str
) -> None:
    execute(database_url, "DELETE FROM schema_migrations WHERE version = '0009'")
    execute(database_url, "DROP TABLE workers")
    result = invoke("health")
    assert result.exit_code == 1
    assert result.stdout == (
        "unhealthy: the database is not migrated to this release (0009_workers.sql not "
        "applied): run 'safelight db migrate', or start a Worker\n"
    )


def test_a_bad_setting_is_still_a_usage_error(invoke: Invoke) -> None:
    result = invoke("health", env={"SAFELIGHT_HEALTH_WORKER_SEEN_SECONDS": "10"})
    assert result.exit_code == 2
    assert "health_worker_seen_seconds (10) must be more than twice" in result.output


# --- a real Worker process -----------------------------------------------------------------


def get(port: int, path: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=10) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


def test_a_worker_process_serves_metrics_and_health_and_leaves_when_stopped(
    database_url: str, tmp_path: Path
) -> None:
    env = {"SAFELIGHT_HOME": str(tmp_path), "SAFELIGHT_DATABASE_URL": database_url}
    enqueued = safelight_process("enqueue", "noop", env=env)
    assert enqueued.returncode == 0, enqueued.stderr
    port = free_port()
    process = start_safelight("worker", "--name", "watched", "--metrics-port", str(port), env=env)
    try:
        deadline = time.monotonic() + 60
        while True:
            assert process.poll() is None, process.communicate()
            assert time.monotonic() < deadline, "the worker never became healthy"
            try:
                status, _ = get(port, "/healthz")
            except OSError:
                status = 0  # not listening yet
            if status == 200 and safelight_process("health", env=env).returncode == 0:
                break
            time.sleep(0.05)
        # The noop ran: the scrape says so, with the queue read from the database.
        while True:
            status, text = get(port, "/metrics")
            assert status == 200
            scraped = {
                (s.name, frozenset(s.labels.items())): s.value
                for family in text_string_to_metric_families(text)
                for s in family.samples
            }
            done = frozenset({("kind", "noop"), ("outcome", "succeeded")})
            if scraped.get(("safelight_item_duration_seconds_count", done)) == 1:
                break
            assert time.monotonic() < deadline, "the noop never ran"
            time.sleep(0.05)
        depth = frozenset({("kind", "noop"), ("status", "succeeded")})
        assert scraped[("safelight_queue_items", depth)] == 1
        process.send_signal(signal.SIGTERM)
        _, stderr = process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    assert process.returncode == 0, stderr
    assert f"metrics on http://127.0.0.1:{port}/metrics" in stderr
    # Stopped cleanly, it took its presence with it: no Worker is running now.
    after = safelight_process("health", env=env)
    assert after.returncode == 1
    assert (
        after.stdout
        == f"unhealthy: no Worker seen in the last 120 s (none is running): {NO_WORKER_MEANS}\n"
    )


def test_a_metrics_port_already_taken_is_a_usage_error(database_url: str, tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = safelight_process(
            "worker",
            "--until-idle",
            env={
                "SAFELIGHT_HOME": str(tmp_path),
                "SAFELIGHT_DATABASE_URL": database_url,
                "SAFELIGHT_METRICS_PORT": str(port),
            },
        )
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    assert done.stderr.splitlines()[-1].startswith(
        f"safelight: error: metrics_port (SAFELIGHT_METRICS_PORT): cannot listen on 127.0.0.1 "
        f"port {port}: "
    )
