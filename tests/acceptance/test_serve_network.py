"""``safelight serve`` on the home network, as a process (ADR 0042): beyond loopback it
refuses to start without the names it answers to; with them its first line (the ready
signal) is a URL with a real name, a warning says who can reach it and, without TLS,
that passwords need it; a foreign ``Host`` is answered 421, the allowed one 200; with a
certificate it serves HTTPS; TLS files that cannot serve are one line and exit 2."""

from __future__ import annotations

import http.client
import queue
import re
import signal
import ssl
import subprocess
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from safelight.testing.selfsigned import NAME, make_certificate
from tests.acceptance.harness import safelight_process, start_safelight

pytestmark = pytest.mark.acceptance

# A real guard for a process that would otherwise hang a broken test; no tested deadline.
GUARD_SECONDS = 90
READY = re.compile(r"^safelight serve: (https?)://([^/]+):(\d+)/ \(Ctrl-C stops\)$")


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

    def rest(self) -> list[str]:
        """The lines read so far and not yet taken (call once the process ended)."""
        taken = []
        while not self._lines.empty():
            taken.append(self._lines.get_nowait())
        return taken


def env_of(cli_env: dict[str, str | None]) -> dict[str, str]:
    return {k: v for k, v in cli_env.items() if v is not None}


@contextmanager
def serving(env: dict[str, str], *args: str) -> Iterator[tuple[subprocess.Popen[str], Lines]]:
    with start_safelight("serve", "--port", "0", *args, env=env) as process:
        try:
            yield process, Lines(process)
        finally:
            if process.poll() is None:
                process.kill()
            process.wait(GUARD_SECONDS)


def get(port: int, host: str, path: str, tls: ssl.SSLContext | None = None) -> tuple[int, bytes]:
    """GET ``path`` from 127.0.0.1:``port`` with the test's own ``Host``."""
    connection: http.client.HTTPConnection
    if tls is None:
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=GUARD_SECONDS)
    else:
        connection = http.client.HTTPSConnection(
            "127.0.0.1", port, timeout=GUARD_SECONDS, context=tls
        )
    try:
        connection.request("GET", path, headers={"Host": host})
        response = connection.getresponse()
        return response.status, response.read()
    finally:
        connection.close()


def one_error_line(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    line = result.stderr.strip().splitlines()[-1]
    assert line.startswith("safelight: error: ")
    return line.removeprefix("safelight: error: ")


@pytest.mark.parametrize(
    ("args", "extra"),
    [(("--host", "0.0.0.0"), {}), ((), {"SAFELIGHT_WEB_HOST": "::"})],
)
def test_beyond_loopback_without_names_it_does_not_start(
    cli_env: dict[str, str | None], args: tuple[str, ...], extra: dict[str, str]
) -> None:
    result = safelight_process("serve", "--port", "0", *args, env={**env_of(cli_env), **extra})
    assert one_error_line(result) == (
        "listening beyond this machine (web_host) needs the names the dashboard answers to: "
        "add --allow-host NAME (one per name, like nas.local or 192.168.1.5) or set "
        "SAFELIGHT_WEB_ALLOWED_HOSTS=NAME,NAME"
    )
    assert result.stdout == ""


def test_settings_that_cannot_serve_are_one_line(
    cli_env: dict[str, str | None], tmp_path: Path
) -> None:
    env = env_of(cli_env)
    garbage = tmp_path / "garbage.pem"
    garbage.write_text("not a certificate\n")
    made = make_certificate(tmp_path / "tls")
    for args, expected in (
        (("--allow-host", "guessed-name.lan:8470"), "entry 1 has a port"),
        (("--tls-cert", str(made.cert)), "go together: give both for HTTPS, or neither"),
        (("--tls-cert", str(garbage), "--tls-key", str(made.key)), "must be a PEM certificate"),
    ):
        line = one_error_line(safelight_process("serve", "--port", "0", *args, env=env))
        assert expected in line
        assert "guessed-name" not in line


def test_on_every_address_it_answers_its_names_and_warns(
    cli_env: dict[str, str | None],
) -> None:
    with serving(env_of(cli_env), "--host", "0.0.0.0", "--allow-host", "nas.example") as (
        process,
        lines,
    ):
        ready = READY.match(lines.next())
        assert ready is not None and ready.group(1, 2) == ("http", "nas.example")
        port = int(ready.group(3))
        warning = (
            f"the dashboard listens on 0.0.0.0 port {port}, beyond this machine: every "
            "machine that can reach it may open its pages at nas.example; without TLS, "
            "passwords cannot be used from other machines: give --tls-cert and --tls-key, or "
            "--behind-proxy ADDRESS of a reverse proxy serving HTTPS (docs/web.md)"
        )
        status, body = get(port, f"nas.example:{port}", "/static/blurhash.js")
        assert status == 200 and b"decode83" in body
        for foreign in ("rebound.attacker.example", f"0.0.0.0:{port}"):
            status, body = get(port, foreign, "/static/blurhash.js")
            assert status == 421 and b"attacker" not in body
        process.send_signal(signal.SIGTERM)
        assert process.wait(GUARD_SECONDS) == 0
        assert process.stderr is not None
        stderr = process.stderr.read().splitlines()
    # Printed once on stderr, and logged once (the log line is the text after its prefix).
    assert stderr.count(f"warning: {warning}") == 1
    logged = [line for line in stderr if line.endswith(warning) and not line.startswith("warn")]
    assert len(logged) == 1 and "WARNING" in logged[0]
    assert "warning" not in "".join(lines.rest())


def test_with_a_certificate_it_serves_https(cli_env: dict[str, str | None], tmp_path: Path) -> None:
    made = make_certificate(tmp_path / "tls")
    made.key.chmod(0o644)
    args = ("--host", "0.0.0.0", "--allow-host", NAME)
    tls = ("--tls-cert", str(made.cert), "--tls-key", str(made.key))
    with serving(env_of(cli_env), *args, *tls) as (process, lines):
        ready = READY.match(lines.next())
        assert ready is not None and ready.group(1, 2) == ("https", NAME)
        port = int(ready.group(3))
        trusting = ssl.create_default_context(cafile=str(made.cert))
        status, body = get(port, NAME, "/static/blurhash.js", tls=trusting)
        assert status == 200 and b"decode83" in body
        status, _ = get(port, "rebound.attacker.example", "/", tls=trusting)
        assert status == 421
        process.send_signal(signal.SIGTERM)
        assert process.wait(GUARD_SECONDS) == 0
        assert process.stderr is not None
        warnings = [
            line for line in process.stderr.read().splitlines() if line.startswith("warning: ")
        ]
    assert warnings[0].startswith(f"warning: the dashboard listens on 0.0.0.0 port {port}")
    assert "without TLS" not in warnings[0]
    assert warnings[1:] == [
        f"warning: the TLS key {made.key} is readable by every user of this machine: "
        "make it readable by its owner only (chmod 600)"
    ]
