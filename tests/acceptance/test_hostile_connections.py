"""1,100 idle connections to a Worker's metrics port and to the dashboard while the
Worker crawls a few hundred photos (issue #27): once, the metrics port took every
descriptor the Worker had and the crawl "succeeded" with hundreds of "Too many open
files" errors. Both servers run as real processes with a hard limit of 1,024 open files
(systemd's soft default), so that connections they did not cap would exhaust them; the
test process holds the 2,200 client sockets, its own soft limit raised to its hard one.
"""

from __future__ import annotations

import asyncio
import contextlib
import resource
import signal
import socket
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from safelight.core.clock import SystemClock
from safelight.handlers.crawl.result import CrawlResult
from safelight.testing.invoking import Invoke
from safelight.testing.rows import add_config
from safelight.testing.tinylibrary import generate_tree
from tests.faults.cluster import free_port
from tests.faults.processes import REPO, clean_env, wait_for

pytestmark = pytest.mark.acceptance

PHOTOS = 300
IDLE = 1100
SERVER_FILES_LIMIT = 1024
GUARD_SECONDS = 120.0  # a bound on a hang, never a tested deadline


@pytest.fixture
def many_sockets() -> Iterator[None]:
    """This process's soft limit raised to its hard one, for 2,200 client sockets."""
    before = resource.getrlimit(resource.RLIMIT_NOFILE)
    needed = 2 * IDLE + 200
    if before[1] != resource.RLIM_INFINITY and before[1] < needed:
        pytest.skip(f"the hard open files limit ({before[1]}) is below {needed}")
    resource.setrlimit(resource.RLIMIT_NOFILE, (before[1], before[1]))
    yield
    resource.setrlimit(resource.RLIMIT_NOFILE, before)


def low_files_limit() -> None:
    resource.setrlimit(resource.RLIMIT_NOFILE, (SERVER_FILES_LIMIT, SERVER_FILES_LIMIT))


def start(args: list[str], env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    with log.open("ab") as out:
        return subprocess.Popen(
            [sys.executable, "-m", "safelight", *args],
            env=clean_env(env),
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            cwd=REPO,
            start_new_session=True,
            preexec_fn=low_files_limit,
        )


def stop(process: subprocess.Popen[bytes]) -> int:
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=30)
    return int(process.returncode)


def answered(url: str) -> bool:
    """Whether a real request is answered (200 or any other status)."""
    try:
        with urllib.request.urlopen(url, timeout=10) as response:
            return bool(response.status)
    except urllib.error.HTTPError:
        return True
    except OSError:
        return False  # refused at the cap, or not listening yet


def idle_connections(port: int, count: int) -> list[socket.socket]:
    """``count`` connections that send nothing (those past the cap are closed by the
    server; the test keeps its end open all the same)."""
    held = []
    for _ in range(count):
        held.append(socket.create_connection(("127.0.0.1", port), timeout=30))
    return held


def test_idle_connections_by_the_thousand_cost_the_crawl_nothing(
    many_sockets: None, database_url: str, tmp_path: Path
) -> None:
    library = tmp_path / "library"
    generate_tree(library, PHOTOS, per_folder=100)
    metrics_port, web_port = free_port(), free_port()
    env = {
        "SAFELIGHT_DATABASE_URL": database_url,
        "SAFELIGHT_HOME": str(tmp_path / "home"),
        "SAFELIGHT_METRICS_PORT": str(metrics_port),
        "SAFELIGHT_WEB_PORT": str(web_port),
        "SAFELIGHT_POLL_SECONDS": "0.2",
        "SAFELIGHT_DECODE_PROCESSES": "1",
        # Idle clients are dropped after a second: a real request gets in meanwhile.
        "SAFELIGHT_REQUEST_HEAD_SECONDS": "1",
    }
    worker = start(["worker", "--name", "flooded"], env, tmp_path / "worker.log")
    dashboard = start(["serve", "--read-only"], env, tmp_path / "serve.log")
    metrics = f"http://127.0.0.1:{metrics_port}/metrics"
    web = f"http://127.0.0.1:{web_port}/static/blurhash.js"
    held: list[socket.socket] = []
    try:
        wait_for("the metrics port", lambda: answered(metrics), GUARD_SECONDS)
        wait_for("the dashboard", lambda: answered(web), GUARD_SECONDS)
        held = idle_connections(metrics_port, IDLE) + idle_connections(web_port, IDLE)
        config = asyncio.run(add_config(database_url, SystemClock(), "alice", str(library)))
        with psycopg.connect(database_url, autocommit=True) as conn:
            conn.execute(
                "INSERT INTO work_items (kind, storage_config_id, dedup_key, requested_at)"
                " VALUES ('crawl', %s, %s, now()) ON CONFLICT DO NOTHING",
                (config, f"crawl:{config}"),
            )
        # During the crawl, both servers answer a real request.
        wait_for("a scrape during the flood", lambda: answered(metrics), GUARD_SECONDS)
        wait_for("the dashboard during the flood", lambda: answered(web), GUARD_SECONDS)

        def crawl_result() -> tuple[str, dict[str, object] | None, str | None] | None:
            with psycopg.connect(database_url) as conn:
                rows = conn.execute(
                    "SELECT status::text, result, error FROM work_items"
                    " WHERE kind = 'crawl' AND storage_config_id = %s"
                    " AND status NOT IN ('queued', 'running') ORDER BY id LIMIT 1",
                    (config,),
                ).fetchall()
            return rows[0] if rows else None

        status, result, error = wait_for("the crawl", crawl_result, GUARD_SECONDS)
        assert worker.poll() is None and dashboard.poll() is None
        assert status == "succeeded", error
        assert result is not None
        crawled = CrawlResult.from_json(result)
        assert crawled.found == PHOTOS
        assert crawled.errors == (), crawled.errors
        # And afterwards, with the client sockets still open.
        wait_for("a scrape after the crawl", lambda: answered(metrics), GUARD_SECONDS)
        wait_for("the dashboard after the crawl", lambda: answered(web), GUARD_SECONDS)
    finally:
        for sock in held:
            with contextlib.suppress(OSError):
                sock.close()
        codes = stop(worker), stop(dashboard)
    logs = (tmp_path / "worker.log").read_text(errors="replace")
    assert "Too many open files" not in logs
    assert codes == (0, 0), logs + (tmp_path / "serve.log").read_text(errors="replace")


def test_a_metrics_port_open_beyond_this_machine_is_warned_about(invoke: Invoke) -> None:
    port = str(free_port())
    result = invoke(
        "worker", "--until-idle", "--metrics-port", port, env={"SAFELIGHT_METRICS_HOST": "0.0.0.0"}
    )
    assert result.exit_code == 0, result.output
    warning = "the metrics port listens on 0.0.0.0, beyond this machine"
    # Printed by the command before it starts, and logged as the port opens.
    assert f"warning: {warning}" in result.stderr
    assert f"WARNING safelight.app: {warning}" in result.stderr
    quiet = invoke("worker", "--until-idle", "--metrics-port", str(free_port()))
    assert quiet.exit_code == 0 and "beyond this machine" not in quiet.stderr
