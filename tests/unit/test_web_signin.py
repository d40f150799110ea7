"""The sign-in's pure parts: the origin a session is bound to and its cookie's name,
the CSRF check, the open paths, who is on this machine, a Bearer header, where to go
after signing in."""

from __future__ import annotations

import pytest
from starlette.datastructures import Headers
from starlette.requests import HTTPConnection

from safelight.web.auth import bearer_of, is_open, on_this_machine
from safelight.web.sessions import Session, cookie_name, digest, origin_of
from safelight.web.signin import safe_next
from safelight.web.viewer import Viewer


def connection(
    scheme: str, host: str, client: tuple[str, int] | None = ("127.0.0.1", 5000)
) -> HTTPConnection:
    return HTTPConnection(
        {
            "type": "http",
            "scheme": scheme,
            "method": "GET",
            "path": "/",
            "query_string": b"",
            "headers": [(b"host", host.encode())],
            "server": ("127.0.0.1", 8470),
            "client": client,
        }
    )


@pytest.mark.parametrize(
    ("scheme", "host", "origin", "cookie"),
    [
        ("http", "127.0.0.1:8470", "http://127.0.0.1:8470", "safelight_session_8470"),
        ("http", "LocalHost:9000", "http://localhost:9000", "safelight_session_9000"),
        ("http", "nas.local", "http://nas.local:80", "safelight_session_80"),
        ("https", "nas.local", "https://nas.local:443", "__Host-safelight_session_443"),
        ("https", "nas.local:8443", "https://nas.local:8443", "__Host-safelight_session_8443"),
        ("http", "[::1]:8470", "http://[::1]:8470", "safelight_session_8470"),
    ],
)
def test_the_origin_has_its_port_written_and_the_cookie_name_carries_it(
    scheme: str, host: str, origin: str, cookie: str
) -> None:
    conn = connection(scheme, host)
    assert origin_of(conn) == origin
    assert cookie_name(conn) == cookie


def test_a_csrf_token_matches_only_its_own_digest() -> None:
    session = Session(digest("id"), Viewer(1, "alice", False), digest("the-token"))
    assert session.csrf_matches("the-token")
    assert not session.csrf_matches("the-tokeN")
    assert not session.csrf_matches("")
    assert len(digest("x")) == 32 and digest("x") != digest("y")


@pytest.mark.parametrize(
    ("method", "path", "expected"),
    [
        ("GET", "/login", True),
        ("POST", "/login", True),
        ("POST", "/logout", True),
        ("GET", "/welcome", True),
        ("GET", "/healthz", True),
        ("GET", "/static/app.js", True),
        ("GET", "/", False),
        ("GET", "/api/status", False),
        ("GET", "/proxies/1/thumbnail/0123456789abcdef", False),
        ("DELETE", "/login", False),
        ("GET", "/login/x", False),
        ("GET", "/staticx", False),
    ],
)
def test_only_the_sign_in_static_files_and_the_probe_are_open(
    method: str, path: str, expected: bool
) -> None:
    assert is_open(method, path) is expected


@pytest.mark.parametrize(
    ("client", "expected"),
    [
        (("127.0.0.1", 1), True),
        (("127.8.9.10", 1), True),
        (("::1", 1), True),
        (("192.168.1.20", 1), False),
        (("::ffff:192.168.1.20", 1), False),
        (("testclient", 1), False),
        (None, False),
    ],
)
def test_on_this_machine_is_a_loopback_client(
    client: tuple[str, int] | None, expected: bool
) -> None:
    assert on_this_machine(connection("http", "x", client)) is expected


def test_a_bearer_header() -> None:
    assert bearer_of(Headers({})) is None
    assert bearer_of(Headers({"authorization": "Bearer sl_abc "})) == "sl_abc"
    assert bearer_of(Headers({"authorization": "bearer sl_abc"})) == "sl_abc"
    assert bearer_of(Headers({"authorization": "Basic dXNlcjpwdw=="})) == ""
    assert bearer_of(Headers({"authorization": "Bearer"})) == ""


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ("/queue?x=1", "/queue?x=1"),
        ("//evil.example/", "/"),
        ("http://evil.example/", "/"),
        ("/\\evil.example", "/"),
        ("", "/"),
        (None, "/"),
    ],
)
def test_after_sign_in_only_a_path_of_this_site(given: str | None, expected: str) -> None:
    assert safe_next(given) == expected
