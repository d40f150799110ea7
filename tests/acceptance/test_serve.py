"""``safelight serve`` as a process: its first line is its URL once it listens, the next
the way in (with no user yet, the one-time link that makes the admin, its token printed
only when serve made it), it answers, and SIGTERM stops it with exit 0; a port in use is
one line and exit 2."""

from __future__ import annotations

import asyncio
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
from safelight.cli.admin import os_user
from safelight.core.clock import SystemClock
from safelight.db.pool import open_pool
from tests.acceptance.harness import (
    follow_welcome_link,
    link_in,
    safelight_process,
    start_safelight,
)

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


def token_of(database_url: str, name: str, *, add: bool = False) -> str:
    """A personal token of the user ``name`` (with ``add``: made first, an admin with no
    password)."""

    async def main() -> str:
        pool = await open_pool(database_url, min_size=1, max_size=1)
        try:
            accounts = Accounts(pool, SystemClock())
            if add:
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


def test_serve_prints_its_url_and_the_first_admin_link_answers_and_stops_on_sigterm(
    serving: tuple[subprocess.Popen[str], Lines], database_url: str
) -> None:
    process, lines = serving
    first = lines.next()
    assert first.startswith("safelight serve: http://127.0.0.1:") and "(Ctrl-C stops)" in first
    url = first.split()[2]
    offer = lines.next()
    assert offer.startswith(f"no user yet: this link makes you the admin, {os_user()}")
    link = link_in(offer)
    assert link.startswith(f"{url}welcome#token=")
    token = link.split("#token=", 1)[1]
    assert len(token) == 43
    with pytest.raises(urllib.error.HTTPError) as unsigned:
        urllib.request.urlopen(url + "api/status", timeout=30)
    assert unsigned.value.code == 401
    unsigned.value.close()

    browsing = follow_welcome_link(link)

    document = browsing.get_json("api/status")
    assert document["totals"] == {} and document["running"] == []
    request = urllib.request.Request(
        url + "api/items/1/cancel", method="POST", headers={"X-CSRF-Token": browsing.csrf}
    )
    with pytest.raises(urllib.error.HTTPError) as missing:
        browsing.opener.open(request, timeout=30)
    assert missing.value.code == 404  # authorized; there is no item 1
    missing.value.close()
    # The admin's personal token acts too, for a script.
    assert post(url + "api/items/1/cancel", token_of(database_url, os_user())) == 404
    process.send_signal(signal.SIGTERM)
    assert process.wait(GUARD_SECONDS) == 0
    assert process.stderr is not None
    assert token not in process.stderr.read()


GIVEN_TOKEN = "a-token-given-by-the-operator-0123456789"


def test_a_given_token_is_not_printed_and_makes_the_admin(
    cli_env: dict[str, str | None],
) -> None:
    env = {k: v for k, v in cli_env.items() if v is not None}
    with start_safelight(
        "serve", "--port", "0", env={**env, "SAFELIGHT_WEB_TOKEN": GIVEN_TOKEN}
    ) as process:
        try:
            lines = Lines(process)
            url = lines.next().split()[2]
            second = lines.next()
            assert "SAFELIGHT_WEB_TOKEN" in second and f"{url}welcome " in second
            assert "#token=" not in second and GIVEN_TOKEN not in second
            browsing = follow_welcome_link(f"{url}welcome#token={GIVEN_TOKEN}")
            assert browsing.get_json("api/account")["is_admin"] is True
            process.send_signal(signal.SIGINT)
            assert process.wait(GUARD_SECONDS) == 0
        finally:
            if process.poll() is None:
                process.kill()
            process.wait(GUARD_SECONDS)


def test_read_only_says_so_offers_the_passwordless_admin_a_link_and_refuses_every_action(
    cli_env: dict[str, str | None], database_url: str
) -> None:
    env = {k: v for k, v in cli_env.items() if v is not None}
    token = token_of(database_url, "alice", add=True)
    with start_safelight("serve", "--port", "0", "--read-only", env=env) as process:
        try:
            lines = Lines(process)
            url = lines.next().split()[2]
            assert lines.next() == "read-only: started with --read-only, nobody can act"
            offer = lines.next()
            assert offer.startswith("sign in as alice, who has no password yet")
            assert lines.next() == (
                f"then set a password at {url}account to sign in from other devices"
            )
            assert post(url + "api/items/1/cancel", token) == 403
            browsing = follow_welcome_link(link_in(offer))
            assert browsing.get_json("api/account")["name"] == "alice"
            process.send_signal(signal.SIGINT)
            assert process.wait(GUARD_SECONDS) == 0
        finally:
            if process.poll() is None:
                process.kill()
            process.wait(GUARD_SECONDS)


def test_once_users_have_passwords_serve_prints_where_to_sign_in_on_the_day(
    cli_env: dict[str, str | None],
) -> None:
    env = {k: v for k, v in cli_env.items() if v is not None}
    added = safelight_process(
        "user", "add", "alice", "--password-stdin", env=env, input="correct horse battery\n"
    )
    assert added.returncode == 0, added.stderr
    with start_safelight("serve", "--port", "0", "--day", "2025-06-15", env=env) as process:
        try:
            lines = Lines(process)
            url = lines.next().split()[2]
            assert lines.next() == (
                f"sign in at {url}login?next=/%3Fdate%3D2025-06-15 "
                "(`safelight user add NAME` makes an account)"
            )
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
