"""The fault-injection scenario: real Workers, real work, a nemesis, then the checks.

A private PostgreSQL cluster (:mod:`tests.faults.cluster`) holds the queue. Three
``safelight worker`` processes serve overlapping storage configs: two serve every user,
one serves only ``alice``. Each reaches PostgreSQL through a TCP proxy of its own
(:mod:`tests.faults.netproxy`), so the nemesis can cut it off without closing a socket.

While the run lasts, a workload enqueues real work (crawls of generated folders, purges,
burst detections, noop items of random length, scoped and unscoped, proxy sweeps) and
changes the originals the way a user does (deletes a photo, puts it back, moves it,
copies it, adds new ones), so that crawls soft-delete and re-ingest content and purges
have soft-deleted assets to purge, in the very proxy folders a crawl writes. A nemesis,
at random moments drawn from one seeded RNG:

- kills a Worker (SIGKILL to its process group) and starts a new one in its place;
- freezes a Worker (SIGSTOP) for longer than a lease, then resumes it;
- cuts a Worker off from PostgreSQL, for longer than a lease, then heals the link;
- restarts PostgreSQL (fast: clients disconnected; or immediate: crash recovery).

It prefers a Worker that is running an item of a storage config, so that the faults
land where the rule is at stake. Then every fault is healed, the Workers drain the
queue and are stopped, and :mod:`tests.faults.checker` runs.

Everything the run starts is stopped in ``finally`` blocks, by pid.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import random
import shutil
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from uuid import UUID

import psycopg
from psycopg.rows import dict_row

from safelight import settings as app_settings
from safelight.core.clock import SystemClock
from safelight.db.pool import open_pool
from safelight.handlers import KIND_SPECS
from safelight.testing.samplegen import generate_jpegs, generate_library
from safelight.work.store import WorkStore
from tests.faults import checker
from tests.faults.cluster import PrivateCluster
from tests.faults.effects import Effect, effects_of, read_lines
from tests.faults.netproxy import TcpProxy
from tests.faults.processes import WorkerProcess, start_worker
from tests.reaper import reaper, remove_folder, temporary_folder

_log = logging.getLogger("faults")

DATABASE = "safelight"


@dataclass(frozen=True)
class Settings:
    duration_seconds: float = 90.0
    seed: int = 1
    lease_seconds: float = 2.0
    heartbeat_seconds: float = 0.5
    poll_seconds: float = 0.5
    recovery_interval_seconds: float = 0.5
    shutdown_grace_seconds: float = 2.0
    max_stalls: int = 5
    max_concurrent_files: int = 2
    drain_timeout_seconds: float = 60.0
    # Seconds between the end of one fault and the start of the next.
    fault_gap_seconds: tuple[float, float] = (1.0, 4.0)
    # Seconds between two workload actions.
    work_gap_seconds: tuple[float, float] = (0.15, 0.6)
    # How many of each fault kind one bag holds (see Scenario._nemesis).
    fault_weights: tuple[tuple[str, int], ...] = (
        ("kill", 2),
        ("freeze", 2),
        ("cut", 2),
        ("pg_restart", 1),
    )
    keep_workdir: bool = False
    worker_pythonpath: str = ""
    """Put first on the Workers' PYTHONPATH: a folder of ``tests/faults/builds`` whose
    ``sitecustomize`` breaks the build, to show the run then fails."""
    database_sabotage: str = ""
    """SQL run in the suite's database before any Worker starts (e.g. dropping an index),
    for the same purpose."""

    def worker_env(self) -> dict[str, str]:
        return {
            "SAFELIGHT_LEASE_SECONDS": str(self.lease_seconds),
            "SAFELIGHT_HEARTBEAT_SECONDS": str(self.heartbeat_seconds),
            "SAFELIGHT_POLL_SECONDS": str(self.poll_seconds),
            "SAFELIGHT_RECOVERY_INTERVAL_SECONDS": str(self.recovery_interval_seconds),
            "SAFELIGHT_SHUTDOWN_GRACE_SECONDS": str(self.shutdown_grace_seconds),
            "SAFELIGHT_MAX_STALLS": str(self.max_stalls),
            "SAFELIGHT_MAX_CONCURRENT_FILES": str(self.max_concurrent_files),
            "SAFELIGHT_LOG_LEVEL": "info",
            **({"PYTHONPATH": self.worker_pythonpath} if self.worker_pythonpath else {}),
        }


@dataclass
class Report:
    settings: Settings
    faults: Counter[str] = field(default_factory=Counter)
    bites: Counter[str] = field(default_factory=Counter)
    """Faults that hit a Worker while it was running an item of a storage config."""
    work: Counter[str] = field(default_factory=Counter)
    """Workload actions: items enqueued by kind, changes to the originals."""
    items: Counter[str] = field(default_factory=Counter)
    """Items at the end, by ``kind status``."""
    attempts: Counter[str] = field(default_factory=Counter)
    """Attempts by outcome."""
    effects: int = 0
    assets: Counter[str] = field(default_factory=Counter)
    violations: list[checker.Violation] = field(default_factory=list)
    explained: list[checker.Explained] = field(default_factory=list)
    """Effects of stale attempts in the residual window that harm nothing by
    construction (``checker.Window``): reported, each with why, not violations."""
    drained: bool = False
    seconds: dict[str, float] = field(default_factory=dict)
    workdir: Path | None = None
    notes: list[str] = field(default_factory=list)

    def summary(self) -> str:
        lines = [
            f"seed {self.settings.seed}, {self.settings.duration_seconds:g} s of faults, "
            f"lease {self.settings.lease_seconds:g} s",
            "faults injected: " + _counts(self.faults),
            "of which hit a Worker running a scoped item: " + _counts(self.bites),
            "workload: " + _counts(self.work),
            "items at the end: " + _counts(self.items),
            "attempts: " + _counts(self.attempts),
            f"file side effects journalled: {self.effects}",
            "assets: " + _counts(self.assets),
            f"drained: {self.drained}",
            "seconds: " + ", ".join(f"{k} {v:.1f}" for k, v in self.seconds.items()),
            f"violations: {len(self.violations)}",
            *[f"  {v}" for v in self.violations],
            f"reported effects of the residual window, harmless by construction: "
            f"{len(self.explained)}",
            *[f"  {e}" for e in self.explained],
            *self.notes,
        ]
        return "\n".join(lines)


def _counts(counter: Counter[str]) -> str:
    return ", ".join(f"{k} {v}" for k, v in sorted(counter.items())) or "none"


@dataclass
class _Config:
    id: UUID
    owner: str
    root: Path
    stash: Path
    """Originals the "user" took out of the folder, to put back later."""


@dataclass
class _Role:
    """One Worker slot: who it serves and the proxy it reaches PostgreSQL through."""

    key: str
    user: str | None
    proxy: TcpProxy
    process: WorkerProcess | None = None
    generation: int = 0


class Scenario:
    def __init__(self, settings: Settings, workdir: Path) -> None:
        self.s = settings
        self.workdir = workdir
        self.rng = random.Random(settings.seed)
        self.report = Report(settings, workdir=workdir)
        self.cluster = PrivateCluster()
        self.roles: list[_Role] = []
        self.retired: list[WorkerProcess] = []
        self.configs: list[_Config] = []
        self.proxies = workdir / "proxies"
        self.journals = workdir / "workers"
        self.url = ""
        self.store: WorkStore | None = None
        self._stop = asyncio.Event()
        self._one_of_each = asyncio.Event()
        """Set once the nemesis has emptied its first bag: every kind of fault landed."""
        self._held: dict[str, list[checker.Span]] = defaultdict(list)
        """Per Worker, when it was frozen or cut off (wall clock): check 2 counts no
        time an item's own Worker may hold its row locked."""
        self._files = 0

    # --- the run -----------------------------------------------------------------------

    async def run(self) -> Report:
        started = time.monotonic()
        pool = None
        try:
            await asyncio.to_thread(self.cluster.start)
            self.url = await asyncio.to_thread(self._create_database)
            await asyncio.to_thread(self._make_configs)
            pool = await open_pool(self.url, min_size=1, max_size=4)
            self.store = WorkStore(
                pool, SystemClock(), KIND_SPECS, max_stalls=app_settings.Settings().max_stalls
            )
            self._start_workers()
            self.report.seconds["setup"] = time.monotonic() - started
            chaos = time.monotonic()
            tasks = [
                asyncio.create_task(self._workload(), name="workload"),
                asyncio.create_task(self._nemesis(), name="nemesis"),
                asyncio.create_task(self._supervise(), name="supervisor"),
            ]
            try:
                await asyncio.sleep(self.s.duration_seconds)
                # A loaded machine slows the faults down, not the clock: the run goes on
                # (up to as long again) until every kind of fault has landed once.
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._one_of_each.wait(), self.s.duration_seconds)
            finally:
                self._stop.set()
                await asyncio.gather(*tasks)
            self._heal_all()
            self.report.seconds["faults"] = time.monotonic() - chaos
            drain = time.monotonic()
            self.report.drained = await self._drain()
            self.report.seconds["drain"] = time.monotonic() - drain
            # Checked while the Workers still run: nothing is left running past its lease.
            await asyncio.to_thread(self._check_items)
            stopping = time.monotonic()
            await asyncio.to_thread(self._stop_workers)
            self.report.seconds["stop"] = time.monotonic() - stopping
            checks = time.monotonic()
            await asyncio.to_thread(self._check_all)
            self.report.seconds["checks"] = time.monotonic() - checks
        finally:
            for role in self.roles:
                role.proxy.heal()
            for process in self._processes():
                process.ensure_dead()
            if pool is not None:
                await pool.close()
            for role in self.roles:
                role.proxy.close()
            self.cluster.destroy()
            self.report.seconds["total"] = time.monotonic() - started
        return self.report

    def _processes(self) -> list[WorkerProcess]:
        return self.retired + [r.process for r in self.roles if r.process is not None]

    # --- setup -------------------------------------------------------------------------

    def _create_database(self) -> str:
        url = self.cluster.create_database(DATABASE)
        checker.install_audit(url)
        if self.s.database_sabotage:
            with psycopg.connect(url, autocommit=True) as conn:
                conn.execute(self.s.database_sabotage)
        return url

    def _make_configs(self) -> None:
        libraries = self.workdir / "libraries"

        def jpegs(count: int, seed: int) -> Callable[[Path], object]:
            return lambda root: generate_jpegs(root, count, 0.2, seed=seed, per_folder=12)

        layout: list[tuple[str, str, Callable[[Path], object]]] = [
            ("alice", "holidays", jpegs(48, 11)),
            ("alice", "phone", lambda root: generate_library(root, seed=3, ffmpeg=None)),
            ("bob", "camera", jpegs(48, 12)),
            ("bob", "scans", jpegs(32, 13)),
        ]
        with psycopg.connect(self.url, autocommit=True) as conn:
            for owner, name, make in layout:
                root = libraries / owner / name
                make(root)
                row = conn.execute(
                    "INSERT INTO storage_configs (owner, root_path, created_at) "
                    "VALUES (%s, %s, now()) RETURNING id",
                    (owner, str(root.resolve())),
                ).fetchone()
                assert row is not None
                stash = self.workdir / "stash" / owner / name
                stash.mkdir(parents=True)
                self.configs.append(_Config(row[0], owner, root, stash))

    def _start_workers(self) -> None:
        for key, user in (("all-1", None), ("all-2", None), ("alice", "alice")):
            proxy = TcpProxy("127.0.0.1", self.cluster.port)
            role = _Role(key, user, proxy)
            self.roles.append(role)
            self._spawn(role)

    def _spawn(self, role: _Role) -> None:
        role.generation += 1
        name = f"{role.key}.{role.generation}"
        env = {
            **self.s.worker_env(),
            "SAFELIGHT_DATABASE_URL": (
                f"postgresql://postgres@127.0.0.1:{role.proxy.port}/{DATABASE}"
            ),
            "SAFELIGHT_HOME": str(self.workdir / "home"),
            "SAFELIGHT_PROXY_ROOT": str(self.proxies),
        }
        role.process = start_worker(name, self.journals, env, user=role.user)

    async def _supervise(self) -> None:
        """Start again a Worker that exited by itself, as a service manager would (one
        started while PostgreSQL restarts waits for it, ADR 0038; a refusal that waiting
        would not mend exits 3: database unavailable)."""
        while not self._stop.is_set():
            for role in self.roles:
                process = role.process
                if process is not None and not process.alive():
                    process.died_at = time.monotonic()
                    process.how = f"exited {process.popen.returncode}"
                    self.report.notes.append(
                        f"worker {process.name} exited by itself ({process.popen.returncode}):"
                        f" {process.log_text().strip().splitlines()[-1:]}"
                    )
                    self.retired.append(process)
                    self._spawn(role)
            await self._pause(0.5)

    # --- the workload ------------------------------------------------------------------

    async def _workload(self) -> None:
        actions: list[tuple[Callable[[], Any], float]] = [
            (self._enqueue_crawl, 3.0),
            (self._enqueue_purge, 1.5),
            (self._enqueue_bursts, 0.8),
            (self._enqueue_scoped_noop, 2.0),
            (self._enqueue_unscoped, 0.8),
            (self._change_originals, 3.0),
        ]
        choices, weights = zip(*actions, strict=True)
        while not self._stop.is_set():
            action = self.rng.choices(choices, weights)[0]
            try:
                await action()
            except (psycopg.Error, OSError, TimeoutError) as exc:
                # The database is restarting: the workload tries again later.
                self.report.work["enqueue refused (database away)"] += 1
                _log.debug("workload: %s", exc)
            await self._pause(self.rng.uniform(*self.s.work_gap_seconds))

    async def _pause(self, seconds: float) -> None:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._stop.wait(), seconds)

    def _config(self) -> _Config:
        return self.rng.choice(self.configs)

    async def _enqueue(self, kind: str, **kwargs: Any) -> None:
        assert self.store is not None
        await asyncio.wait_for(self.store.enqueue(kind, **kwargs), 10)
        self.report.work[f"enqueued {kind}"] += 1

    async def _enqueue_crawl(self) -> None:
        config = self._config()
        await self._enqueue("crawl", config_id=config.id, dedup_key=f"crawl:{config.id}")

    async def _enqueue_purge(self) -> None:
        config = self._config()
        await self._enqueue("purge", config_id=config.id, dedup_key=f"purge:{config.id}")

    async def _enqueue_bursts(self) -> None:
        config = self._config()
        await self._enqueue(
            "burst_detection", config_id=config.id, dedup_key=f"burst_detection:{config.id}"
        )

    async def _enqueue_scoped_noop(self) -> None:
        seconds = round(self.rng.choice([0.0, self.rng.uniform(0, 0.5), self.rng.uniform(0, 3)]), 3)
        await self._enqueue("noop", config_id=self._config().id, payload={"seconds": seconds})

    async def _enqueue_unscoped(self) -> None:
        if self.rng.random() < 0.5:
            await self._enqueue("proxy_sweep")
        else:
            seconds = round(self.rng.uniform(0, 2), 3)
            await self._enqueue("noop", payload={"seconds": seconds})

    async def _change_originals(self) -> None:
        config = self._config()
        change = self.rng.choice(["remove", "restore", "restore", "move", "copy", "add"])
        done = await asyncio.to_thread(self._change, config, change)
        if done:
            self.report.work[f"originals {change}"] += 1

    def _change(self, config: _Config, change: str) -> bool:
        """One change a user makes to a folder of originals; False if there was none to make."""
        originals = sorted(p for p in config.root.rglob("*.jpg") if p.is_file())
        stashed = sorted(p for p in config.stash.rglob("*") if p.is_file())
        if change == "remove" and originals:
            self._move_some(originals, config.root, config.stash)
            return True
        if change == "restore" and stashed:
            # The same bytes come back: a crawl ingests them again into the proxy folders
            # the soft-deleted assets had (the purge-beside-crawl case of spec #337).
            self._move_some(stashed, config.stash, config.root)
            return True
        if change == "move" and originals:
            source = self.rng.choice(originals)
            target = source.with_name(f"moved-{self._next()}-{source.name}")
            source.rename(target)
            return True
        if change == "copy" and originals:
            source = self.rng.choice(originals)
            shutil.copy2(source, source.with_name(f"copy-{self._next()}-{source.name}"))
            return True
        if change == "add":
            folder = config.root / f"added-{self._next()}"
            scratch = Path(tempfile.mkdtemp(dir=self.workdir))
            generate_jpegs(scratch, 6, 0.2, seed=1000 + self._files, per_folder=6)
            shutil.move(scratch / "0000", folder)
            shutil.rmtree(scratch, ignore_errors=True)
            return True
        return False

    def _move_some(self, files: list[Path], source_root: Path, target_root: Path) -> None:
        """One of ``files``, or its whole folder (7 times in 10), moved to the same place
        under ``target_root``."""
        chosen = self.rng.choice(files)
        group = (
            [chosen] if self.rng.random() < 0.3 else [p for p in files if p.parent == chosen.parent]
        )
        for source in group:
            target = target_root / source.relative_to(source_root)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.move(source, target)

    def _next(self) -> int:
        self._files += 1
        return self._files

    # --- the nemesis -------------------------------------------------------------------

    async def _nemesis(self) -> None:
        """Faults drawn from a bag that holds each kind as often as its weight says,
        refilled and shuffled when empty: every kind comes up in every few faults, in
        a random order, however short the run."""
        bag: list[str] = []
        await self._pause(self.rng.uniform(2.0, 3.0))  # the Workers start first
        while not self._stop.is_set():
            if not bag:
                bag = [kind for kind, count in self.s.fault_weights for _ in range(count)]
                self.rng.shuffle(bag)
            fault = bag.pop()
            await getattr(self, f"_fault_{fault}")()
            self.report.faults[fault if fault != "pg_restart" else self._last_restart] += 1
            if not bag:
                self._one_of_each.set()
            await self._pause(self.rng.uniform(*self.s.fault_gap_seconds))

    _last_restart = "pg_restart"

    def _busy_workers(self) -> set[str]:
        try:
            with psycopg.connect(self.url, connect_timeout=3) as conn:
                rows = conn.execute(
                    "SELECT worker_id FROM work_items "
                    "WHERE status = 'running' AND kind IN ('crawl', 'purge')"
                ).fetchall()
        except psycopg.Error:
            return set()
        return {str(r[0]) for r in rows}

    async def _victim(self) -> tuple[_Role, bool]:
        """A Worker to hurt: preferably (waiting up to a few seconds for one) a Worker
        running an item with file side effects (a crawl or a purge)."""
        wait_until = time.monotonic() + 3.0
        want_busy = self.rng.random() < 0.85
        while True:
            busy = await asyncio.to_thread(self._busy_workers)
            live = [r for r in self.roles if r.process is not None and r.process.alive()]
            hit = [r for r in live if r.process is not None and r.process.name in busy]
            if hit and want_busy:
                return self.rng.choice(hit), True
            if not want_busy or time.monotonic() > wait_until or self._stop.is_set():
                role = self.rng.choice(live)
                return role, role.process is not None and role.process.name in busy
            await asyncio.sleep(0.05)

    def _fault_length(self) -> float:
        return self.rng.uniform(1.25, 2.5) * self.s.lease_seconds

    async def _fault_kill(self) -> None:
        role, busy = await self._victim()
        assert role.process is not None
        process = role.process
        _log.info("nemesis: SIGKILL %s", process.name)
        # Out of the role first, so the supervisor does not start a second one meanwhile.
        role.process = None
        self.retired.append(process)
        await asyncio.to_thread(process.kill)
        self.report.bites["kill"] += busy
        await self._pause(self.rng.uniform(0.0, 1.0))
        self._spawn(role)

    async def _fault_freeze(self) -> None:
        role, busy = await self._victim()
        process = role.process
        assert process is not None
        _log.info("nemesis: SIGSTOP %s", process.name)
        began = time.time()
        process.freeze()
        self.report.bites["freeze"] += busy
        await asyncio.sleep(self._fault_length())
        process.thaw()
        self._held[process.name].append((began, time.time()))

    async def _fault_cut(self) -> None:
        role, busy = await self._victim()
        _log.info("nemesis: cut %s off", role.key)
        began = time.time()
        # Whoever the role's Worker is until the heal (a cut outlives no kill: one
        # fault at a time).
        name = role.process.name if role.process is not None else ""
        role.proxy.cut()
        self.report.bites["cut"] += busy
        await asyncio.sleep(self._fault_length())
        role.proxy.heal()
        self._held[name].append((began, time.time()))

    async def _fault_pg_restart(self) -> None:
        mode = self.rng.choice(["fast", "immediate"])
        self._last_restart = f"pg_restart_{mode}"
        busy = await asyncio.to_thread(self._busy_workers)
        self.report.bites[self._last_restart] += bool(busy)
        _log.info("nemesis: restart PostgreSQL (%s)", mode)
        await asyncio.to_thread(self.cluster.restart, mode)

    def _heal_all(self) -> None:
        for role in self.roles:
            role.proxy.heal()
            if role.process is not None and role.process.frozen_since is not None:
                role.process.thaw()

    # --- the end -----------------------------------------------------------------------

    def _progress(self) -> tuple[int, int]:
        """Items still queued or running, and attempts ended so far."""
        with psycopg.connect(self.url, connect_timeout=5) as conn:
            row = conn.execute(
                "SELECT (SELECT count(*) FROM work_items WHERE status IN ('queued', 'running')),"
                " (SELECT count(*) FROM work_attempts WHERE ended_at IS NOT NULL)"
            ).fetchone()
        assert row is not None
        return int(row[0]), int(row[1])

    async def _drain(self) -> bool:
        """Wait for the queue to empty while it moves: fail once no attempt ended for
        ``drain_timeout_seconds`` (a queue that stopped moving), not merely because a
        loaded machine is slow to work through it; never past ten such spans."""
        began = time.monotonic()
        moved = began
        ended = -1
        while True:
            now = time.monotonic()
            if now - moved > self.s.drain_timeout_seconds:
                return False
            if now - began > 10 * self.s.drain_timeout_seconds:
                return False
            try:
                unfinished, done = await asyncio.to_thread(self._progress)
            except psycopg.OperationalError:
                unfinished, done = -1, ended
            if unfinished == 0:
                return True
            if done > ended:
                ended, moved = done, time.monotonic()
            await asyncio.sleep(0.25)

    def _stop_workers(self) -> None:
        live = [r.process for r in self.roles if r.process is not None]
        for process in live:
            process.request_stop()
        for process in live:
            code = process.terminate()
            if code != 0:
                self.report.notes.append(f"worker {process.name} exited {code} on SIGTERM")

    def _check_items(self) -> None:
        with psycopg.connect(self.url) as conn:
            self.report.violations += checker.check_items(
                conn,
                lease_seconds=self.s.lease_seconds,
                recovery_seconds=self.s.recovery_interval_seconds,
            )
            self.report.violations += checker.check_liveness(
                conn,
                self._held,
                recovery_seconds=self.s.recovery_interval_seconds,
                backoff_max_seconds=app_settings.Settings().outage_backoff_max_seconds,
            )

    def effects(self) -> list[Effect]:
        died = {p.pid: p.died_at for p in self._processes()}
        lines = read_lines(sorted(self.journals.glob("journal-*.jsonl")))
        return effects_of(lines, died)

    def _check_all(self) -> None:
        effects = self.effects()
        self.report.effects = len(effects)
        found = self.report.violations
        freezes = {p.pid: p.freezes for p in self._processes()}
        with psycopg.connect(self.url) as conn:
            violations, explained = checker.check_everything(conn, effects, freezes, self.proxies)
            found += violations
            self.report.explained += explained
            self._dump(conn)
            for kind, status, count in conn.execute(
                "SELECT kind, status::text, count(*) FROM work_items GROUP BY 1, 2"
            ):
                self.report.items[f"{kind} {status}"] = count
            for outcome, count in conn.execute(
                "SELECT coalesce(outcome::text, 'open'), count(*) FROM work_attempts GROUP BY 1"
            ):
                self.report.attempts[outcome] = count
            for deleted, count in conn.execute(
                "SELECT is_deleted, count(*) FROM assets GROUP BY 1"
            ):
                self.report.assets["soft-deleted" if deleted else "live"] = count

    def _dump(self, conn: psycopg.Connection[Any]) -> None:
        """The queue's history, for a post-mortem (kept with the journals)."""
        dump = {
            table: [
                {k: str(v) for k, v in row.items()}
                for row in conn.cursor(row_factory=dict_row).execute(
                    f"SELECT * FROM {table} ORDER BY 1"
                )
            ]
            for table in ("work_items", "work_attempts", "faults_transitions")
        }
        (self.workdir / "queue.json").write_text(json.dumps(dump, indent=1))


async def run_scenario(settings: Settings, workdir: Path | None = None) -> Report:
    """Run one scenario in ``workdir`` (a new temporary folder by default, removed at the
    end unless ``settings.keep_workdir`` or a violation was found)."""
    own = workdir is None
    folder = workdir or temporary_folder("safelight-faults-")
    report = await Scenario(settings, folder).run()
    if own and not settings.keep_workdir and not report.violations:
        remove_folder(folder)
    elif own:
        reaper().folder(folder, forget=True)  # kept, for the post-mortem
    return report
