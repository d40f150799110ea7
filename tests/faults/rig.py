"""A small rig of real ``safelight worker`` processes on the suite's own PostgreSQL, for
tests that place one fault deterministically (the regression tests, the broken builds):
a config of generated photos, Workers started directly or through a TCP proxy that can
cut their link, optionally as a build of ``tests/faults/builds``, and the checker run
over what they did."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psycopg

from safelight.testing.samplegen import generate_jpegs
from tests.faults import checker
from tests.faults.cluster import PrivateCluster
from tests.faults.effects import Effect, effects_of, read_lines
from tests.faults.netproxy import TcpProxy
from tests.faults.processes import WorkerProcess, start_worker

BUILDS = Path(__file__).resolve().parent / "builds"

LEASE_SECONDS = 2.0
RECOVERY_SECONDS = 0.5


@dataclass
class Rig:
    cluster: PrivateCluster
    url: str
    folder: Path
    config_id: str = ""
    workers: list[WorkerProcess] = field(default_factory=list)
    proxies: list[TcpProxy] = field(default_factory=list)

    def env(self, url: str) -> dict[str, str]:
        return {
            "SAFELIGHT_DATABASE_URL": url,
            "SAFELIGHT_HOME": str(self.folder / "home"),
            "SAFELIGHT_PROXY_ROOT": str(self.folder / "proxies"),
            "SAFELIGHT_LEASE_SECONDS": str(LEASE_SECONDS),
            "SAFELIGHT_HEARTBEAT_SECONDS": "0.5",
            "SAFELIGHT_POLL_SECONDS": "0.5",
            "SAFELIGHT_RECOVERY_INTERVAL_SECONDS": str(RECOVERY_SECONDS),
            "SAFELIGHT_SHUTDOWN_GRACE_SECONDS": "1",
            "SAFELIGHT_MAX_CONCURRENT_FILES": "1",
        }

    def start(
        self,
        name: str,
        *,
        through_proxy: bool = False,
        build: str | None = None,
        stop_after: str | None = None,
    ) -> tuple[WorkerProcess, TcpProxy | None]:
        """Start a Worker; ``build`` names a folder of ``tests/faults/builds`` to run it
        as, and ``stop_after`` its fault point (``faultpoints``: it then needs a build,
        ``intact`` for the real one)."""
        proxy = None
        url = self.url
        if through_proxy:
            proxy = TcpProxy("127.0.0.1", self.cluster.port)
            self.proxies.append(proxy)
            url = url.replace(f":{self.cluster.port}/", f":{proxy.port}/")
        env = self.env(url)
        if build is not None:
            env["PYTHONPATH"] = str(BUILDS / build)
        if stop_after is not None:
            assert build is not None, "a fault point is installed by a build's sitecustomize"
            env["FAULTS_STOP_AFTER"] = stop_after
        worker = start_worker(name, self.folder / "workers", env)
        self.workers.append(worker)
        return worker, proxy

    def query(self, sql: str, *params: Any) -> list[tuple[Any, ...]]:
        with psycopg.connect(self.url) as conn:
            return conn.execute(sql, params).fetchall()

    def add_config(self, photos: int) -> None:
        library = self.folder / "library"
        generate_jpegs(library, photos, 0.3, seed=9, per_folder=10)
        with psycopg.connect(self.url, autocommit=True) as conn:
            row = conn.execute(
                "INSERT INTO storage_configs (owner, root_path, created_at) "
                "VALUES ('alice', %s, now()) RETURNING id",
                (str(library.resolve()),),
            ).fetchone()
            assert row is not None
            self.config_id = str(row[0])
            # No crawl from the Workers' scheduler beside the test's own.
            conn.execute(
                "INSERT INTO work_schedules (name, kind, storage_config_id, next_run_at) "
                "VALUES (%s, 'crawl', %s, now() + interval '1 day')",
                (f"crawl:{self.config_id}", self.config_id),
            )

    def enqueue_crawl(self) -> int:
        with psycopg.connect(self.url, autocommit=True) as conn:
            row = conn.execute(
                "INSERT INTO work_items (kind, storage_config_id, requested_at) "
                "VALUES ('crawl', %s, now()) RETURNING id",
                (self.config_id,),
            ).fetchone()
        assert row is not None
        return int(row[0])

    def idle(self) -> bool:
        """Every Worker is up (it logs so once its database is open) and every item,
        the Workers' start-up schedule included, is finished."""
        if not all(f"worker(s) {w.name} serving" in w.log_text() for w in self.workers):
            return False
        rows = self.query(
            "SELECT count(*) FILTER (WHERE status IN ('queued', 'running')), count(*) "
            "FROM work_items"
        )
        unfinished: int = rows[0][0]
        items: int = rows[0][1]
        return unfinished == 0 and items > 0

    def status(self, item_id: int) -> tuple[str, int, str | None]:
        ((status, attempt, worker),) = self.query(
            "SELECT status::text, attempt, worker_id FROM work_items WHERE id = %s", item_id
        )
        return status, attempt, worker

    def effects(self) -> list[Effect]:
        died = {w.pid: w.died_at for w in self.workers}
        return effects_of(read_lines(w.journal for w in self.workers), died)

    def effects_outside_leases(self) -> list[checker.Violation]:
        with psycopg.connect(self.url) as conn:
            return checker.check_effects_within_lease(conn, self.effects())

    def check_everything(self) -> tuple[list[checker.Violation], list[checker.Explained]]:
        """Every check of a fault run, over what the Workers did (stop them first)."""
        freezes = {w.pid: w.freezes for w in self.workers}
        with psycopg.connect(self.url) as conn:
            return checker.check_everything(conn, self.effects(), freezes, self.folder / "proxies")
