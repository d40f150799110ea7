"""The dashboard on the home network, served by the real :class:`WebServer` on a free
port (ADR 0042): the names it answers to, over a real socket with the test's own
``Host``; HTTPS with a certificate made for the test; and the scheme and client a
trusted reverse proxy forwards, believed from it and from no other peer."""

from __future__ import annotations

import asyncio
import json
import socket
import ssl
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from psycopg_pool import AsyncConnectionPool

from safelight.core.connections import ConnectionLimits
from safelight.db.database import Database
from safelight.settings import Settings
from safelight.testing.selfsigned import NAME, make_certificate
from safelight.testing.web import TODAY, clock_on, web_settings
from safelight.web.app import create_app
from safelight.web.guard import MISDIRECTED
from safelight.web.server import WebServer
from safelight.web.tls import server_context

pytestmark = pytest.mark.integration

LIMITS = ConnectionLimits(16, 30.0)
# A bound on a hang, never a tested deadline.
GUARD_SECONDS = 30


@dataclass(frozen=True, slots=True)
class Answer:
    status: int
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


async def ask(
    port: int,
    host: str,
    path: str = "/",
    *,
    headers: dict[str, str] | None = None,
    tls: ssl.SSLContext | None = None,
) -> Answer:
    """GET ``path`` from 127.0.0.1:``port`` over a real socket, with ``Host: host``."""
    reader, writer = await asyncio.open_connection(
        "127.0.0.1", port, ssl=tls, server_hostname=NAME if tls else None
    )
    try:
        lines = [f"GET {path} HTTP/1.1", f"Host: {host}", "Connection: close"]
        lines += [f"{name}: {value}" for name, value in (headers or {}).items()]
        writer.write(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1"))
        await writer.drain()
        raw = await asyncio.wait_for(reader.read(), GUARD_SECONDS)
    finally:
        writer.close()
        with suppress(ConnectionError, ssl.SSLError):
            await writer.wait_closed()
    head, _, body = raw.partition(b"\r\n\r\n")
    return Answer(int(head.split(b" ", 2)[1]), body)


@asynccontextmanager
async def serving(server: WebServer) -> AsyncIterator[WebServer]:
    task = asyncio.create_task(server.serve())
    try:
        yield server
    finally:
        server.stop()
        await asyncio.wait_for(task, GUARD_SECONDS)


def dashboard(pool: AsyncConnectionPool[Any], settings: Settings, **options: Any) -> WebServer:
    """The dashboard ``safelight serve`` builds, on ``settings``' address, any port."""
    app = create_app(
        Database(url=str(settings.database_url), pool=pool),
        settings,
        clock=clock_on(TODAY),
    )
    return WebServer(app, settings.web_host, 0, LIMITS, access_log=False, **options)


class Echo:
    """A test-only app: answers with the scheme, client and Host the request reached it
    with, as the dashboard's routes would read them (``request.url.scheme``,
    ``request.client.host``)."""

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        headers = dict(scope["headers"])
        body = json.dumps(
            {
                "scheme": scope["scheme"],
                "client": scope["client"][0],
                "host": headers.get(b"host", b"").decode("latin-1"),
            }
        ).encode()
        start = [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(body))]
        await send({"type": "http.response.start", "status": 200, "headers": start})
        await send({"type": "http.response.body", "body": body})


# --- the names it answers to --------------------------------------------------------


async def test_on_every_address_only_the_allowed_names_are_answered(
    pool: AsyncConnectionPool[Any], database_url: str, tmp_path: Path
) -> None:
    settings = web_settings(
        database_url, tmp_path, web_host="0.0.0.0", web_allowed_hosts=("nas.example",)
    )
    async with serving(dashboard(pool, settings)) as server:
        port = server.port
        assert server.url == f"http://127.0.0.1:{port}/"
        for host in ("nas.example", f"nas.example:{port}", f"NAS.Example:{port}", "localhost"):
            answer = await ask(port, host, "/static/blurhash.js")
            assert answer.status == 200 and b"decode83" in answer.body, host
        for host in (
            "rebound.attacker.example",
            f"rebound.attacker.example:{port}",
            f"0.0.0.0:{port}",
            "192.168.1.5",
        ):
            answer = await ask(port, host, "/static/blurhash.js")
            assert answer.status == 421, host
            assert answer.body == MISDIRECTED.encode()
        # Every route is refused alike, before it reads anything.
        assert (await ask(port, "rebound.attacker.example", "/api/status")).status == 421


# --- HTTPS ------------------------------------------------------------------------


async def test_with_a_certificate_it_serves_https(tmp_path: Path) -> None:
    made = make_certificate(tmp_path / "tls")
    settings = Settings(
        home=tmp_path / "home",
        web_host="0.0.0.0",
        web_allowed_hosts=(NAME,),
        web_tls_cert=made.cert,
        web_tls_key=made.key,
        decode_processes=0,
    )
    tls = server_context(settings)
    server = WebServer(Echo(), "127.0.0.1", 0, LIMITS, access_log=False, tls=tls)
    trusting = ssl.create_default_context(cafile=str(made.cert))
    async with serving(server):
        assert server.url == f"https://127.0.0.1:{server.port}/"
        answer = await ask(server.port, NAME, tls=trusting)
        assert answer.status == 200
        assert answer.json() == {"scheme": "https", "client": "127.0.0.1", "host": NAME}
        # Plain HTTP on the TLS port is never answered as a page.
        reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
        writer.write(f"GET / HTTP/1.1\r\nHost: {NAME}\r\nConnection: close\r\n\r\n".encode())
        await writer.drain()
        raw = await asyncio.wait_for(reader.read(), GUARD_SECONDS)
        writer.close()
        assert b"HTTP/1.1 200" not in raw and b"scheme" not in raw
        # A client that does not trust the certificate is refused by its own TLS.
        with pytest.raises(ssl.SSLCertVerificationError):
            await ask(server.port, NAME, tls=ssl.create_default_context())


async def test_the_dashboard_over_https_answers_its_names(
    pool: AsyncConnectionPool[Any], database_url: str, tmp_path: Path
) -> None:
    made = make_certificate(tmp_path / "tls")
    settings = web_settings(
        database_url,
        tmp_path,
        web_host="0.0.0.0",
        web_allowed_hosts=(NAME,),
        web_tls_cert=made.cert,
        web_tls_key=made.key,
    )
    trusting = ssl.create_default_context(cafile=str(made.cert))
    async with serving(dashboard(pool, settings, tls=server_context(settings))) as server:
        assert (await ask(server.port, NAME, "/static/blurhash.js", tls=trusting)).status == 200
        assert (await ask(server.port, "evil.example", "/", tls=trusting)).status == 421


# --- behind a reverse proxy ---------------------------------------------------------

FORWARDED = {"X-Forwarded-Proto": "https", "X-Forwarded-For": "203.0.113.7"}


@pytest.mark.parametrize(
    ("trusted", "expected"),
    [
        # The test connects from 127.0.0.1: the proxy it trusts.
        (("127.0.0.1",), {"scheme": "https", "client": "203.0.113.7"}),
        (("127.0.0.0/8",), {"scheme": "https", "client": "203.0.113.7"}),
        # Another address is trusted: from this peer the headers are anyone's.
        (("192.0.2.1",), {"scheme": "http", "client": "127.0.0.1"}),
        # No proxy trusted at all: never believed.
        ((), {"scheme": "http", "client": "127.0.0.1"}),
    ],
)
async def test_forwarded_headers_are_believed_from_the_trusted_proxy_only(
    trusted: tuple[str, ...], expected: dict[str, str]
) -> None:
    server = WebServer(Echo(), "127.0.0.1", 0, LIMITS, access_log=False, trusted_proxies=trusted)
    async with serving(server):
        answer = await ask(server.port, "photos.example", headers=FORWARDED)
        assert answer.json() == {**expected, "host": "photos.example"}
        plain = await ask(server.port, "photos.example")
        assert plain.json() == {"scheme": "http", "client": "127.0.0.1", "host": "photos.example"}


def ipv6_available() -> bool:
    try:
        with socket.socket(socket.AF_INET6) as probe:
            probe.bind(("::", 0))
    except OSError:
        return False
    return True


@pytest.mark.skipif(not ipv6_available(), reason="no IPv6 on this machine")
async def test_on_a_dual_stack_socket_an_ipv4_proxy_is_still_trusted() -> None:
    # Bound to ::, a connection from 127.0.0.1 reports its peer as ::ffff:127.0.0.1.
    server = WebServer(Echo(), "::", 0, LIMITS, access_log=False, trusted_proxies=("127.0.0.1",))
    async with serving(server):
        answer = await ask(server.port, "photos.example", headers=FORWARDED)
        assert answer.json()["scheme"] == "https"
        assert answer.json()["client"] == "203.0.113.7"


async def test_behind_the_proxy_the_forwarded_host_is_the_one_checked(
    pool: AsyncConnectionPool[Any], database_url: str, tmp_path: Path
) -> None:
    # Caddy or nginx on this machine, the dashboard on loopback: the names are the proxy's.
    settings = web_settings(
        database_url,
        tmp_path,
        web_allowed_hosts=("photos.example.org",),
        web_behind_proxy=("127.0.0.1",),
    )
    options = {"trusted_proxies": settings.web_behind_proxy}
    async with serving(dashboard(pool, settings, **options)) as server:
        ok = await ask(server.port, "photos.example.org", "/static/blurhash.js", headers=FORWARDED)
        assert ok.status == 200
        refused = await ask(
            server.port, "rebound.example", "/static/blurhash.js", headers=FORWARDED
        )
        assert refused.status == 421
