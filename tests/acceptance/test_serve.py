"""``safelight serve`` as a process: its first line is its URL once it listens, the next
how to sign in (the token printed only when it made one), it answers, and SIGTERM stops
it with exit 0; a port in use is one line and exit 2."""

from __future__ import annotations

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
    serving: tuple[subprocess.Popen[str], Lines],
) -> None:
    process, lines = serving
    first = lines.next()
    assert first.startswith("safelight serve: http://127.0.0.1:") and "(Ctrl-C stops)" in first
    url = first.split()[2]
    sign_in = lines.next()
    assert sign_in.startswith(f"sign in to act: {url}login#token=")
    token = sign_in.split("#token=", 1)[1]
    assert len(token) == 43
    with urllib.request.urlopen(url + "api/status", timeout=30) as response:
        document = json.loads(response.read())
    assert document["totals"] == {} and document["running"] == []
    request = urllib.request.Request(
        url + "api/items/1/cancel", method="POST", headers={"Authorization": f"Bearer {token}"}
    )
    with pytest.raises(urllib.error.HTTPError) as missing:
        urllib.request.urlopen(request, timeout=30)
    assert missing.value.code == 404  # authorized; there is no item 1
    missing.value.close()
    process.send_signal(signal.SIGTERM)
    assert process.wait(GUARD_SECONDS) == 0
    assert process.stderr is not None
    assert token not in process.stderr.read()


def test_a_given_token_is_not_printed_and_read_only_has_none(
    cli_env: dict[str, str | None],
) -> None:
    env = {k: v for k, v in cli_env.items() if v is not None}
    for extra, args, expected in (
        ({"SAFELIGHT_WEB_TOKEN": "a-token-given-by-the-operator"}, (), "SAFELIGHT_WEB_TOKEN"),
        ({}, ("--read-only",), "read-only"),
    ):
        with start_safelight("serve", "--port", "0", *args, env={**env, **extra}) as process:
            try:
                lines = Lines(process)
                assert lines.next().startswith("safelight serve: http://127.0.0.1:")
                second = lines.next()
                assert expected in second and "#token=" not in second
                assert "a-token-given-by-the-operator" not in second
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
