"""The reaper kills a registered process group only while it is still the one
registered: never a process that took over its pid (tests/reaper.py, ADR 0049)."""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Iterator

import pytest

from tests.reaper import group_members, kill_group, start_time


@pytest.fixture
def sleeper() -> Iterator[subprocess.Popen[bytes]]:
    process = subprocess.Popen(["sleep", "600"], start_new_session=True)
    try:
        yield process
    finally:
        process.kill()
        process.wait()


def test_a_group_whose_leader_is_the_process_registered_is_killed(
    sleeper: subprocess.Popen[bytes],
) -> None:
    kill_group(sleeper.pid, start_time(sleeper.pid))
    assert sleeper.wait(timeout=30) == -9
    assert group_members(sleeper.pid) == []


def test_a_pid_taken_by_another_process_is_left_alone(
    sleeper: subprocess.Popen[bytes], monkeypatch: pytest.MonkeyPatch
) -> None:
    signalled: list[tuple[int, int]] = []
    monkeypatch.setattr(os, "killpg", lambda pgid, sig: signalled.append((pgid, sig)))
    started = start_time(sleeper.pid)
    assert started is not None
    kill_group(sleeper.pid, started - 1)  # as if registered for an earlier process
    assert signalled == []
    kill_group(sleeper.pid, started)
    assert signalled == [(sleeper.pid, signal.SIGKILL), (sleeper.pid, signal.SIGCONT)]
