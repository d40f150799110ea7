"""Nothing a test session starts outlives it (ADR 0049).

Each test process has one reaper: a small process of its own (``python -m tests.reaper``)
that reads, on its stdin, what the tests start which could outlive them: a process
group (a Worker, a ``safelight`` command, each started in a session of its own), a
PostgreSQL server (by its data folder: ``pg_ctl`` daemonises it, so it is no child of
anyone here), a folder. A test that stops one normally tells the reaper to forget it.

When the test process ends, however it ends (SIGKILL, SIGTERM, a crash, or a normal
exit), the kernel closes its end of that pipe, the reaper reads end-of-file, and then:
it kills every process group still registered (SIGKILL, then SIGCONT, so a SIGSTOP'd
one dies too), stops every server still registered (an immediate shutdown, SIGQUIT to
the postmaster found by its ``postmaster.pid``; SIGKILL if it does not stop in time),
and removes every folder still registered (and, as root, the embedded servers' system
users whose homes are gone). Then it exits.

Why a pipe and not ``PR_SET_PDEATHSIG`` (which the decode pool sets): the death signal
fires when the *thread* that started the child exits, and the suites start servers
from worker threads (``asyncio.to_thread``); and a daemonised postmaster is no child of
the test process at all. End-of-file on a pipe only the test process holds follows
that process, whichever thread wrote to it. The reaper runs in a session of its own,
so a Ctrl-C to the terminal's process group reaches the tests, not it.

Never by name, never by a pid alone: a process group is killed only while its leader
is the process registered (same start time) or, the leader gone, while members remain
(the kernel reuses no pid that is still some group's id); a postmaster only if its
working folder is the registered data folder (``db.embedded.is_postmaster_of``).
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
SERVER_STOP_SECONDS = 10.0


def start_time(pid: int) -> int | None:
    """The process's start time (clock ticks since boot, ``/proc/<pid>/stat`` field
    22), or None if there is no such process."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return int(stat[stat.rindex(")") + 2 :].split()[19])


def group_members(pgid: int) -> list[int]:
    members = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        if int(stat[stat.rindex(")") + 2 :].split()[2]) == pgid:
            members.append(int(entry.name))
    return members


class Reaper:
    """The test process's side: registers what it starts, forgets what it stopped."""

    def __init__(self) -> None:
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), str(REPO / "src")])}
        self.process = subprocess.Popen(
            [sys.executable, "-m", "tests.reaper"],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            cwd=REPO,
            env=env,
            start_new_session=True,
        )
        self._lock = threading.Lock()

    def _send(self, message: dict[str, Any]) -> None:
        stdin = self.process.stdin
        assert stdin is not None
        with self._lock:
            stdin.write(json.dumps(message).encode() + b"\n")
            stdin.flush()

    def group(self, pgid: int, *, forget: bool = False) -> None:
        """A process group (its leader's pid) to SIGKILL if the tests die first."""
        self._send({"group": pgid, "start": start_time(pgid), "forget": forget})

    def server(self, pgdata: Path, *, forget: bool = False) -> None:
        """A PostgreSQL server, by its data folder, to stop if the tests die first."""
        self._send({"server": str(pgdata), "forget": forget})

    def folder(self, path: Path, *, home: bool = False, forget: bool = False) -> None:
        """A folder to remove if the tests die first (``home``: an embedded server's
        home, whose system user goes too, as root)."""
        self._send({"folder": str(path), "home": home, "forget": forget})


_reaper: Reaper | None = None
_reaper_pid = 0


def reaper() -> Reaper:
    """This process's reaper, started on first use (a forked child gets its own)."""
    global _reaper, _reaper_pid
    if _reaper is None or _reaper_pid != os.getpid():
        _reaper, _reaper_pid = Reaper(), os.getpid()
    return _reaper


def temporary_folder(prefix: str, *, homes: bool = False) -> Path:
    """A new folder in the system's temp folder, removed by the reaper (every server
    whose data folder lies in it stopped first) if the tests die before
    :func:`remove_folder`. ``homes``: it holds embedded servers' homes, whose system
    users (as root, ADR 0037) go with it."""
    folder = Path(tempfile.mkdtemp(prefix=prefix))
    reaper().folder(folder, home=homes)
    return folder


def remove_folder(folder: Path, *, homes: bool = False) -> None:
    shutil.rmtree(folder, ignore_errors=True)
    if homes:
        from safelight.testing.serverusers import remove_users_of_gone_homes

        remove_users_of_gone_homes(folder)
    reaper().folder(folder, home=homes, forget=True)


# --- the reaper's own side --------------------------------------------------------------


def kill_group(pgid: int, started: int | None) -> None:
    leader = start_time(pgid)
    if leader is not None and leader != started:
        return  # that pid is another process now: the group is long gone
    if leader is None and not group_members(pgid):
        return
    for sig in (signal.SIGKILL, signal.SIGCONT):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pgid, sig)


def stop_server(pgdata: Path) -> None:
    """An immediate shutdown (what ``pg_ctl stop -m immediate`` sends), then SIGKILL."""
    from safelight.db.embedded import is_postmaster_of, read_postmaster

    running = read_postmaster(pgdata)
    if running is None:
        return
    try:
        pidfd = os.pidfd_open(running.pid)
    except ProcessLookupError:
        return
    try:
        if not is_postmaster_of(running.pid, pgdata):
            return
        for sig in (signal.SIGQUIT, signal.SIGKILL):
            with contextlib.suppress(ProcessLookupError):
                signal.pidfd_send_signal(pidfd, sig)
            poller = select.poll()
            poller.register(pidfd, select.POLLIN)
            if poller.poll(int(SERVER_STOP_SECONDS * 1000)):
                return
    finally:
        os.close(pidfd)


def reap(groups: dict[int, int | None], servers: set[str], folders: dict[str, bool]) -> None:
    for pgid, started in groups.items():
        kill_group(pgid, started)
    for pgdata in servers:
        stop_server(Path(pgdata))
    for folder in folders:
        # A server a test started in a folder of its own, registered or not.
        for pidfile in Path(folder).glob("**/postmaster.pid"):
            stop_server(pidfile.parent)
    # A server's backends leave with their postmaster; give a killed group's members a
    # moment to be gone before their folders are (a bound, not a wait on time).
    deadline = time.monotonic() + SERVER_STOP_SECONDS
    while any(group_members(g) for g in groups) and time.monotonic() < deadline:
        time.sleep(0.05)
    for folder, home in folders.items():
        shutil.rmtree(folder, ignore_errors=True)
        if home:
            from safelight.testing.serverusers import remove_users_of_gone_homes

            remove_users_of_gone_homes(Path(folder))


def main() -> None:
    # Signals meant for the tests are not for the reaper; end-of-file is its one cue.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    groups: dict[int, int | None] = {}
    servers: set[str] = set()
    folders: dict[str, bool] = {}
    for line in sys.stdin.buffer:
        message = json.loads(line)
        forget = message.get("forget", False)
        if "group" in message:
            if forget:
                groups.pop(message["group"], None)
            else:
                groups[message["group"]] = message["start"]
        elif "server" in message:
            (servers.discard if forget else servers.add)(message["server"])
        elif "folder" in message:
            if forget:
                folders.pop(message["folder"], None)
            else:
                folders[message["folder"]] = message["home"]
    reap(groups, servers, folders)


if __name__ == "__main__":
    main()
