"""Real ``safelight worker`` processes, each in a process group of its own, and the
faults a test does to them: freeze (SIGSTOP), thaw (SIGCONT), kill (SIGKILL), stop
(SIGTERM). Every process is stopped by its own pid and group, never by name.

Each Worker gets its own side-effect journal and its own log file (never a pipe: a
Worker blocked on a full pipe nobody reads would look frozen). The times a test needs
afterwards (when a process was frozen, thawed, known dead) are ``time.monotonic()``,
the clock the journals use (Linux CLOCK_MONOTONIC, system-wide).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from tests.reaper import reaper

REPO = Path(__file__).resolve().parents[2]
T = TypeVar("T")


def wait_for(what: str, probe: Callable[[], T | None], timeout: float = 60) -> T:
    """Poll ``probe`` until it returns something truthy; fail after ``timeout`` seconds.

    A bound on a condition, not a wait for time to pass: real processes, real clocks.
    """
    deadline = time.monotonic() + timeout
    while True:
        value = probe()
        if value:
            return value
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.02)


def clean_env(extra: Mapping[str, str]) -> dict[str, str]:
    """The environment of a child: no SAFELIGHT_* setting of the developer's shell."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("SAFELIGHT_")}
    env.update(extra)
    return env


@dataclass
class WorkerProcess:
    name: str
    popen: subprocess.Popen[bytes]
    journal: Path
    log: Path
    user: str | None
    started_at: float
    frozen_since: float | None = None
    freezes: list[tuple[float, float]] = field(default_factory=list)
    died_at: float | None = None
    """When the process was known dead (after it was reaped): the end of any effect it
    left open."""
    how: str = ""
    _stop_requested: bool = False

    @property
    def pid(self) -> int:
        return self.popen.pid

    def alive(self) -> bool:
        return self.popen.poll() is None

    def freeze(self) -> None:
        os.killpg(self.pid, signal.SIGSTOP)
        self.frozen_since = time.monotonic()

    def thaw(self) -> None:
        os.killpg(self.pid, signal.SIGCONT)
        assert self.frozen_since is not None
        self.freezes.append((self.frozen_since, time.monotonic()))
        self.frozen_since = None

    def stopped(self) -> bool:
        """Whether the process is stopped (by a signal; ``/proc``'s state ``T``)."""
        try:
            stat = Path(f"/proc/{self.pid}/stat").read_text()
        except OSError:
            return False
        return stat[stat.rindex(")") + 2 :].startswith("T")

    def wait_until_it_stops_itself(self, timeout: float = 60) -> None:
        """Wait for the process to stop at its fault point (``tests/faults/builds``'s
        ``faultpoints``); from then on it counts as frozen, to be thawed by the test."""
        wait_for(f"worker {self.name} to stop at its fault point", self.stopped, timeout)
        self.frozen_since = time.monotonic()

    def kill(self) -> None:
        """SIGKILL the process group and reap it."""
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.pid, signal.SIGKILL)
        self.popen.wait(timeout=30)
        self.died_at = time.monotonic()
        self.how = "killed"
        self.frozen_since = None
        self._forget()

    def _forget(self) -> None:
        """Reaped: the reaper need not kill its group any more."""
        reaper().group(self.pid, forget=True)

    def request_stop(self) -> None:
        """SIGTERM, once (a second one would mean "stop now")."""
        if self.frozen_since is not None:
            self.thaw()
        if self.alive() and not self._stop_requested:
            self._stop_requested = True
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGTERM)

    def terminate(self, timeout: float = 30) -> int:
        """SIGTERM (a graceful stop: running items are released) and wait; SIGKILL if
        it does not stop in time. Returns the exit code."""
        self.request_stop()
        if self.alive():
            try:
                self.popen.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.kill()
                return -9
        self.died_at = self.died_at or time.monotonic()
        self.how = self.how or "stopped"
        self._forget()
        return int(self.popen.returncode)

    def ensure_dead(self) -> None:
        """For finally blocks: whatever happened, nothing of this process survives."""
        if self.popen.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.pid, signal.SIGCONT)
                os.killpg(self.pid, signal.SIGKILL)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.popen.wait(timeout=30)
            self.died_at = self.died_at or time.monotonic()
        if self.popen.poll() is not None:
            self._forget()

    def log_text(self) -> str:
        try:
            return self.log.read_text(errors="replace")
        except OSError:
            return ""


def start_worker(
    name: str,
    folder: Path,
    env: Mapping[str, str],
    *,
    user: str | None = None,
) -> WorkerProcess:
    """Start ``python -m safelight worker --name NAME [--user USER]`` with ``env``; its
    journal and log go to ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    journal = folder / f"journal-{name}.jsonl"
    log = folder / f"worker-{name}.log"
    args = [sys.executable, "-m", "safelight", "worker", "--name", name]
    if user is not None:
        args += ["--user", user]
    with log.open("ab") as out:
        popen = subprocess.Popen(
            args,
            env=clean_env({**env, "SAFELIGHT_SIDE_EFFECT_LOG": str(journal)}),
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            cwd=REPO,
            start_new_session=True,
        )
    # Its group dies with the test process, however that ends (ADR 0049).
    reaper().group(popen.pid)
    return WorkerProcess(
        name=name,
        popen=popen,
        journal=journal,
        log=log,
        user=user,
        started_at=time.monotonic(),
    )
