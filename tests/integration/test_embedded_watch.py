"""The watch of the embedded server (``db.embeddedwatch``): it raises the moment the
postmaster ends, and at once when there is no postmaster of that data folder to watch.

A real embedded server, killed with SIGKILL as the OOM killer would; the watch is woken
by the postmaster's pidfd, so the test waits on the watch itself, never on a sleep.
"""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from safelight.db.embedded import read_postmaster, start_embedded
from safelight.db.embeddedwatch import EmbeddedServerStopped, _readable, watch_postmaster
from tests.reaper import remove_folder, temporary_folder

pytestmark = pytest.mark.integration

# Only a guard against a watch that never wakes: it wakes within milliseconds.
HANG_GUARD_SECONDS = 30


@pytest.fixture
def scratch() -> Iterator[Path]:
    # Not tmp_path: as root the server's own user must enter the home.
    folder = temporary_folder("safelight-watch-", homes=True)  # tied to the session
    folder.chmod(0o755)
    try:
        yield folder
    finally:
        remove_folder(folder, homes=True)


async def test_the_watch_raises_once_the_postmaster_is_killed(scratch: Path) -> None:
    _, server = start_embedded(scratch / "home")
    try:
        descriptors = len(os.listdir("/proc/self/fd"))
        watch = asyncio.create_task(watch_postmaster(server.pgdata))
        for _ in range(20):  # let it run up to its wait, and then some
            await asyncio.sleep(0)
        assert not watch.done()
        running = read_postmaster(server.pgdata)
        assert running is not None
        os.kill(running.pid, signal.SIGKILL)
        with pytest.raises(EmbeddedServerStopped) as raised:
            await asyncio.wait_for(watch, HANG_GUARD_SECONDS)
        assert raised.value.pgdata == server.pgdata
        assert str(raised.value) == (
            f"the embedded PostgreSQL in {server.pgdata} stopped while safelight was using "
            f"it (see {server.pgdata / 'log'}); nothing is lost: the next start of safelight "
            "starts it again and goes on where this one stopped"
        )
        assert len(os.listdir("/proc/self/fd")) == descriptors  # its pidfd is closed
    finally:
        server.cleanup()


async def test_the_wait_for_a_descriptor_leaves_no_reader_on_the_loop() -> None:
    loop = asyncio.get_running_loop()
    read, write = os.pipe()
    try:
        waiting = asyncio.create_task(_readable(read))
        for _ in range(20):
            await asyncio.sleep(0)
        assert not waiting.done()
        os.write(write, b"x")
        await asyncio.wait_for(waiting, HANG_GUARD_SECONDS)
        assert not loop.remove_reader(read)  # removed already
    finally:
        os.close(read)
        os.close(write)


async def test_without_a_postmaster_pid_file_the_watch_raises_at_once(tmp_path: Path) -> None:
    with pytest.raises(EmbeddedServerStopped):
        await watch_postmaster(tmp_path)


async def test_a_pid_that_is_not_the_folders_postmaster_is_not_watched(tmp_path: Path) -> None:
    """A stale postmaster.pid whose pid now belongs to another process (here: this one,
    which works elsewhere) is a server that stopped, not one to wait on."""
    (tmp_path / "postmaster.pid").write_text(f"{os.getpid()}\n{tmp_path}\n")
    with pytest.raises(EmbeddedServerStopped):
        await watch_postmaster(tmp_path)


def _free_pid() -> int:
    pid_max = int(Path("/proc/sys/kernel/pid_max").read_text())
    return next(p for p in range(pid_max - 1, 1, -1) if not Path(f"/proc/{p}").exists())


async def test_a_pid_of_no_process_is_not_watched(tmp_path: Path) -> None:
    (tmp_path / "postmaster.pid").write_text(f"{_free_pid()}\n{tmp_path}\n")
    with pytest.raises(EmbeddedServerStopped):
        await watch_postmaster(tmp_path)
