"""The attempt history an operator reads agrees with the rule (issue #13): real Worker
processes over several configs, then the operator's self-join of ``work_attempts``."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import psycopg
import pytest

from safelight.testing.invoking import Invoke
from tests.acceptance.harness import REPO, process_env

pytestmark = pytest.mark.acceptance

PROCESSES = 3
WORKER = [sys.executable, "-m", "safelight", "worker", "--until-idle", "--concurrency", "2"]
CONFIGS = 3
ITEMS = 40
# How long the test waits for the Workers to start and then to drain the queue.
START_SECONDS = 60.0
DRAIN_SECONDS = 60.0

# The query of the issue, as an operator would write it.
OPERATOR_QUERY = """
SELECT a.work_item_id, a.attempt, b.work_item_id, b.attempt
FROM work_attempts a JOIN work_attempts b
  ON a.storage_config_id = b.storage_config_id
 AND (a.work_item_id, a.attempt) <> (b.work_item_id, b.attempt)
WHERE a.claimed_at < b.ended_at AND b.claimed_at < a.ended_at
"""


def _wait_for_line(log: Path, needle: str, worker: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + START_SECONDS
    while time.monotonic() < deadline:
        if log.exists() and needle in log.read_text("utf-8", errors="replace"):
            return
        assert worker.poll() is None, log.read_text("utf-8", errors="replace")
        time.sleep(0.05)
    raise AssertionError(f"the Worker did not start: {log.read_text('utf-8', errors='replace')}")


def test_three_worker_processes_leave_a_history_without_overlaps(
    invoke: Invoke, database_url: str, home: Path, tmp_path: Path
) -> None:
    configs = []
    for n in range(CONFIGS):
        folder = tmp_path / "libraries" / f"lib{n}"
        folder.mkdir(parents=True)
        added = invoke("config", "add", str(folder))
        assert added.exit_code == 0, added.output
        configs.append(added.stdout.strip().splitlines()[-1])
    env = process_env(
        {
            "SAFELIGHT_DATABASE_URL": database_url,
            "SAFELIGHT_HOME": str(home),
            "SAFELIGHT_POLL_SECONDS": "0.2",
        }
    )
    workers: list[subprocess.Popen[str]] = []
    try:
        _run(database_url, configs, env, workers, tmp_path)
    finally:
        for worker in workers:  # only ours, and only if a failed check left them running
            if worker.poll() is None:
                worker.kill()
                worker.wait()


def _run(
    database_url: str,
    configs: list[str],
    env: dict[str, str],
    workers: list[subprocess.Popen[str]],
    tmp_path: Path,
) -> None:
    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute(
            "INSERT INTO work_items (kind, storage_config_id, payload, requested_at)"
            " SELECT 'noop', (%s::uuid[])[1 + n %% %s], '{\"seconds\": 0.03}', clock_timestamp()"
            " FROM generate_series(0, %s - 1) n",
            (configs, CONFIGS, ITEMS),
        )
        # Every item locked until all the Workers have started, so they race from the
        # first item on: their claims skip locked rows, and --until-idle still counts
        # the items as pending.
        with psycopg.connect(database_url) as gate:
            gate.execute("SELECT id FROM work_items FOR UPDATE").fetchall()
            try:
                for n in range(PROCESSES):
                    log = tmp_path / f"worker{n}.log"
                    with log.open("w") as stderr:
                        workers.append(
                            subprocess.Popen(
                                [*WORKER, "--name", f"p{n}"],
                                env=env,
                                stdout=subprocess.DEVNULL,
                                stderr=stderr,
                                text=True,
                                cwd=REPO,
                            )
                        )
                for n, worker in enumerate(workers):
                    _wait_for_line(tmp_path / f"worker{n}.log", "serving", worker)
            finally:
                gate.rollback()
            for worker in workers:
                assert worker.wait(timeout=DRAIN_SECONDS) == 0
        statuses = conn.execute("SELECT status::text, count(*) FROM work_items GROUP BY 1")
        assert dict(statuses.fetchall()) == {"succeeded": ITEMS}
        runners = conn.execute(
            "SELECT count(DISTINCT split_part(worker_id, '/', 1)) FROM work_attempts"
        ).fetchone()
        # More than one process ran items, or nothing raced.
        assert runners is not None and runners[0] >= 2
        assert conn.execute(OPERATOR_QUERY).fetchall() == []
