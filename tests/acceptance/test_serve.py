"""``safelight serve`` as a process: its first line is its URL once it listens, the next
where to sign in; it answers a user's personal token and nobody without one, and SIGTERM
stops it with exit 0; a port in use is one line and exit 2."""

from __future__ import annotations

import asyncio
import json
import queue
import signal
import socket
import subprocess
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator

import pytest

from safelight.accounts.store import Accounts
from safelight.core.clock import SystemClock
from safelight.db.pool import open_pool
from tests.acceptance.harness import safelight_process, start_safelight

pytestmark = pytest.mark.acceptance

# A real guard for a process that would otherwise hang a broken test; no tested deadline.
GUARD_SECONDS = 90


class Lines:
    """A process's stdout, line by line, read on a thread (readline has no timeout)."""

    def __init__(self, process: subprocess.Popen[str]) -> None:
        self._lines: queue.Queue[str] = queue.Queue()
        assert process.stdout is not None
        stdout = process.stdout

        def read() -> None:
            for line in stdout:
                self._lines.put(line.rstrip("\n"))

        threading.Thread(target=read, daemon=True).start()

    def next(self) -> str:
        return self._lines.get(timeout=GUARD_SECONDS)


def user_with_token(database_url: str, name: str) -> str:
    """A user ``name`` (an admin) in the database, and a personal token of theirs."""

    async def main() -> str:
        pool = await open_pool(database_url, min_size=1, max_size=1)
        try:
            accounts = Accounts(pool, SystemClock())
            await accounts.add(name, password=None, admin=True)
            return await accounts.new_token(name)
        finally:
            await pool.close()

    return asyncio.run(main())


def post(url: str, token: str) -> int:
    request = urllib.request.Request(
        url, method="POST", headers={"Authorization": f"Bearer {token}"}
    )
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(request, timeout=30)
    refused.value.close()
    return refused.value.code


@pytest.fixture
def serving(cli_env: dict[str, str | None]) -> Iterator[tuple[subprocess.Popen[str], Lines]]:
    env = {k: v for k, v in cli_env.items() if v is not None}
    with start_safelight("serve", "--port", "0", env=env) as process:
        try:
            yield process, Lines(process)
        finally:
            if process.poll() is None:
                process.kill()
            process.wait(GUARD_SECONDS)


def test_serve_prints_its_url_answers_and_stops_on_sigterm(
    serving: tuple[subprocess.Popen[str], Lines], database_url: str
) -> None:
    process, lines = serving
    token = user_with_token(database_url, "alice")
    first = lines.next()
    assert first.startswith("safelight serve: http://127.0.0.1:") and "(Ctrl-C stops)" in first
    url = first.split()[2]
    assert url + "login" in lines.next()
    with pytest.raises(urllib.error.HTTPError) as unsigned:
        urllib.request.urlopen(url + "api/status", timeout=30)
    assert unsigned.value.code == 401
    unsigned.value.close()
    request = urllib.request.Request(
        url + "api/status", headers={"Authorization": f"Bearer {token}"}
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        document = json.loads(response.read())
    assert document["totals"] == {} and document["running"] == []
    assert post(url + "api/items/1/cancel", token) == 404  # authorized; there is no item 1
    process.send_signal(signal.SIGTERM)
    assert process.wait(GUARD_SECONDS) == 0
    assert process.stderr is not None
    assert token not in process.stderr.read()


def test_read_only_says_so_and_refuses_every_action(
    cli_env: dict[str, str | None], database_url: str
) -> None:
    env = {k: v for k, v in cli_env.items() if v is not None}
    token = user_with_token(database_url, "alice")
    with start_safelight("serve", "--port", "0", "--read-only", env=env) as process:
        try:
            lines = Lines(process)
            first = lines.next()
            assert first.startswith("safelight serve: http://127.0.0.1:")
            assert "read-only" in lines.next()
            assert post(first.split()[2] + "api/items/1/cancel", token) == 403
            process.send_signal(signal.SIGINT)
            assert process.wait(GUARD_SECONDS) == 0
        finally:
            if process.poll() is None:
                process.kill()
            process.wait(GUARD_SECONDS)


def test_a_port_in_use_is_one_line_and_exit_2(cli_env: dict[str, str | None]) -> None:
    env = {k: v for k, v in cli_env.items() if v is not None}
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = safelight_process("serve", "--port", str(port), env=env)
    assert result.returncode == 2
    assert result.stderr.strip().splitlines()[-1] == (
        f"safelight: error: cannot listen on 127.0.0.1 port {port}: Address already in use"
    )
    assert "Traceback" not in result.stderr
