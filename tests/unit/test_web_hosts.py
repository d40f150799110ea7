"""The dashboard on the home network, without a server (ADR 0042): the names it answers
to and the proxies it trusts as settings, what ``serve`` refuses, the URL it prints, the
Host guard as an ASGI app, and its TLS files read at start."""

from __future__ import annotations

import os
from collections.abc import MutableMapping
from pathlib import Path
from typing import Any

import pytest

from safelight.core.hostnames import canonical_host, host_name_problem, proxy_address_problem
from safelight.settings import Settings, SettingsError
from safelight.testing.selfsigned import encrypt_key, make_certificate
from safelight.web.guard import MISDIRECTED, SECURITY_HEADERS, Guard, answered_hosts, host_name
from safelight.web.server import trusted_peers
from safelight.web.tls import key_readable_by_others, server_context


def settings(**values: Any) -> Settings:
    return Settings.load(values, env={})


# --- names, as settings ------------------------------------------------------------


@pytest.mark.parametrize(
    "name",
    [
        "nas.local",
        "NAS.Local",
        "photos.example.org.",
        "nas",
        "my_nas-2.lan",
        "192.168.1.5",
        "::1",
        "fe80::1",
        "[2001:db8::5]",
        "fe80::1%eth0",
    ],
)
def test_host_names_and_ip_literals_are_names_to_answer_to(name: str) -> None:
    assert host_name_problem(name) is None


@pytest.mark.parametrize(
    ("name", "problem"),
    [
        ("", "is empty"),
        ("http://nas.local", "scheme"),
        ("nas.local/photos", "scheme or a path"),
        ("*.local", "wildcard"),
        ("nas.local:8470", "has a port"),
        ("192.168.1.5:80", "has a port"),
        ("[192.168.1.5]", "not an IPv6 address"),
        ("nas..local", "not a host name"),
        ("-nas.local", "not a host name"),
        ("nas local", "not a host name"),
        ("a" * 64 + ".local", "not a host name"),
    ],
)
def test_what_is_not_a_name_is_said(name: str, problem: str) -> None:
    found = host_name_problem(name)
    assert found is not None and problem in found


@pytest.mark.parametrize(
    ("address", "problem"),
    [
        ("127.0.0.1", None),
        ("::1", None),
        ("192.168.1.0/24", None),
        ("*", "wildcard"),
        ("proxy.lan", "not an IP address"),
        ("192.168.1.1/33", "not an IP address"),
        ("", "is empty"),
    ],
)
def test_a_trusted_proxy_is_an_address_or_a_network(address: str, problem: str | None) -> None:
    found = proxy_address_problem(address)
    assert (found is None) if problem is None else (found is not None and problem in found)


def test_the_names_come_from_the_environment_or_the_flags() -> None:
    from_env = Settings.load(
        {},
        {
            "SAFELIGHT_WEB_ALLOWED_HOSTS": " nas.local, 192.168.1.5 ,,",
            "SAFELIGHT_WEB_BEHIND_PROXY": "127.0.0.1,::1",
        },
    )
    assert from_env.web_allowed_hosts == ("nas.local", "192.168.1.5")
    assert from_env.web_behind_proxy == ("127.0.0.1", "::1")
    from_flags = Settings.load(
        {"web_allowed_hosts": ("photos.lan",), "web_behind_proxy": ("10.0.0.2",)},
        {"SAFELIGHT_WEB_ALLOWED_HOSTS": "nas.local"},
    )
    assert from_flags.web_allowed_hosts == ("photos.lan",)
    assert from_flags.web_behind_proxy == ("10.0.0.2",)
    assert settings().web_allowed_hosts == () and settings().web_behind_proxy == ()


@pytest.mark.parametrize(
    ("variable", "value", "expected"),
    [
        (
            "SAFELIGHT_WEB_ALLOWED_HOSTS",
            "nas.local,secret-guess.lan:8470",
            "web_allowed_hosts (SAFELIGHT_WEB_ALLOWED_HOSTS, --allow-host): entry 2 has a port",
        ),
        (
            "SAFELIGHT_WEB_ALLOWED_HOSTS",
            "*.secret-guess",
            "web_allowed_hosts (SAFELIGHT_WEB_ALLOWED_HOSTS, --allow-host): entry 1 has a wildcard",
        ),
        (
            "SAFELIGHT_WEB_BEHIND_PROXY",
            "secret-guess.lan",
            "web_behind_proxy (SAFELIGHT_WEB_BEHIND_PROXY, --behind-proxy): entry 1 is not an "
            "IP address",
        ),
    ],
)
def test_a_bad_name_is_one_error_that_never_quotes_it(
    variable: str, value: str, expected: str
) -> None:
    with pytest.raises(SettingsError) as raised:
        Settings.load({}, {variable: value})
    assert str(raised.value).startswith(expected)
    assert "secret-guess" not in str(raised.value)


def test_tls_needs_both_files_or_neither(tmp_path: Path) -> None:
    for given in ({"web_tls_cert": tmp_path / "c.pem"}, {"web_tls_key": tmp_path / "k.pem"}):
        with pytest.raises(SettingsError, match=r"go together: give both for HTTPS, or neither"):
            settings(**given)
    both = settings(web_tls_cert=tmp_path / "c.pem", web_tls_key=tmp_path / "k.pem")
    assert both.web_scheme == "https" and settings().web_scheme == "http"


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "192.168.1.5", "[2001:db8::5]"])
def test_beyond_loopback_serve_needs_the_names_it_answers_to(host: str) -> None:
    with pytest.raises(SettingsError) as raised:
        settings(web_host=host).check_web_reach()
    assert str(raised.value) == (
        "listening beyond this machine (web_host) needs the names the dashboard answers to: "
        "add --allow-host NAME (one per name, like nas.local or 192.168.1.5) or set "
        "SAFELIGHT_WEB_ALLOWED_HOSTS=NAME,NAME"
    )
    settings(web_host=host, web_allowed_hosts=("nas.local",)).check_web_reach()


@pytest.mark.parametrize("host", ["127.0.0.1", "127.0.0.2", "::1", "localhost"])
def test_on_loopback_no_name_is_needed(host: str) -> None:
    settings(web_host=host).check_web_reach()


@pytest.mark.parametrize(
    ("values", "url"),
    [
        ({}, "http://127.0.0.1:8470/"),
        ({"web_host": "::1"}, "http://[::1]:8470/"),
        (
            {"web_host": "0.0.0.0", "web_allowed_hosts": ("nas.local", "x.lan")},
            "http://nas.local:8470/",
        ),
        ({"web_host": "::", "web_allowed_hosts": ("fe80::1",)}, "http://[fe80::1]:8470/"),
        (
            {"web_host": "192.168.1.5", "web_allowed_hosts": ("192.168.1.5",)},
            "http://192.168.1.5:8470/",
        ),
        # Listening on loopback behind a proxy: the names are the proxy's, the URL is here.
        ({"web_allowed_hosts": ("photos.example.org",)}, "http://127.0.0.1:8470/"),
        ({"web_tls_cert": Path("c"), "web_tls_key": Path("k")}, "https://127.0.0.1:8470/"),
    ],
)
def test_the_url_names_a_real_host(values: dict[str, Any], url: str) -> None:
    assert settings(**values).web_url(8470) == url
    assert "0.0.0.0" not in url


# --- the Host guard ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("header", "name"),
    [
        ("127.0.0.1:8470", "127.0.0.1"),
        ("localhost", "localhost"),
        ("NAS.Local:443", "nas.local"),
        ("nas.local.", "nas.local"),
        ("[::1]:8470", "::1"),
        ("[::1]", "::1"),
        ("::1", "::1"),
        ("[0:0::1]", "::1"),
        ("", None),
        ("nas.local:", None),
        ("nas.local:84x0", None),
        ("nas.local:8470:1", None),
        ("[::1", None),
        ("[::1]x", None),
    ],
)
def test_host_names(header: str, name: str | None) -> None:
    assert host_name(header) == name


def test_the_names_answered() -> None:
    loopback = frozenset({"127.0.0.1", "localhost", "::1"})
    assert answered_hosts(settings()) == loopback
    assert answered_hosts(settings(web_host="[::1]")) == loopback
    assert answered_hosts(settings(web_host="127.0.0.2")) == loopback | {"127.0.0.2"}
    assert answered_hosts(
        settings(web_host="0.0.0.0", web_allowed_hosts=("NAS.local", "[2001:DB8::5]"))
    ) == loopback | {"nas.local", "2001:db8::5"}
    assert answered_hosts(
        settings(web_host="192.168.1.5", web_allowed_hosts=("nas.local",))
    ) == loopback | {"192.168.1.5", "nas.local"}
    assert canonical_host("[2001:DB8:0::5]") == "2001:db8::5"


class Answered:
    """The app behind the guard: answers 200, counting the requests that reach it."""

    def __init__(self) -> None:
        self.reached = 0

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        self.reached += 1
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"ok"})


async def through_guard(hosts: list[bytes]) -> tuple[int, dict[bytes, bytes], bytes, int]:
    app = Answered()
    guard = Guard(
        app, answered_hosts(settings(web_host="0.0.0.0", web_allowed_hosts=("nas.example",)))
    )
    sent: list[MutableMapping[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: MutableMapping[str, Any]) -> None:
        sent.append(message)

    scope = {
        "type": "http",
        "method": "GET",
        "path": "/",
        "headers": [(b"host", host) for host in hosts],
    }
    await guard(scope, receive, send)
    start, body = sent[0], b"".join(m.get("body", b"") for m in sent[1:])
    return start["status"], dict(start["headers"]), body, app.reached


@pytest.mark.parametrize(
    "host", [b"nas.example", b"NAS.example:8470", b"nas.example:443", b"localhost:8470", b"[::1]"]
)
async def test_the_guard_answers_its_names_on_any_port(host: bytes) -> None:
    status, headers, body, reached = await through_guard([host])
    assert (status, body, reached) == (200, b"ok", 1)
    assert all(headers[name] == value for name, value in SECURITY_HEADERS)


@pytest.mark.parametrize(
    "hosts",
    [
        [b"rebound.attacker.example"],
        [b"rebound.attacker.example:8470"],
        [b"nas.example.attacker.example"],
        [b"0.0.0.0:8470"],
        [b"nas.example:x"],
        [],
        [b"nas.example", b"rebound.attacker.example"],
    ],
)
async def test_the_guard_answers_421_to_any_other_host(hosts: list[bytes]) -> None:
    status, headers, body, reached = await through_guard(hosts)
    assert (status, reached) == (421, 0)
    assert body == MISDIRECTED.encode()
    assert b"attacker" not in body and b"nas.example" not in body
    assert all(headers[name] == value for name, value in SECURITY_HEADERS)


# --- trusted proxies -----------------------------------------------------------------


def test_an_ipv4_proxy_is_trusted_as_its_mapped_address_too() -> None:
    assert trusted_peers(("127.0.0.1", "192.168.1.0/24", "::1")) == [
        "127.0.0.1",
        "::ffff:7f00:1/128",
        "192.168.1.0/24",
        "::ffff:c0a8:100/120",
        "::1",
    ]
    assert trusted_peers(()) == []


# --- TLS files ---------------------------------------------------------------------


def tls_settings(cert: Path, key: Path) -> Settings:
    return settings(web_tls_cert=cert, web_tls_key=key)


def test_a_certificate_and_its_key_make_the_context(tmp_path: Path) -> None:
    made = make_certificate(tmp_path)
    context = server_context(tls_settings(made.cert, made.key))
    assert context is not None and context.get_ca_certs() == []
    assert server_context(settings()) is None
    assert not key_readable_by_others(tls_settings(made.cert, made.key))
    made.key.chmod(0o644)
    assert key_readable_by_others(tls_settings(made.cert, made.key))
    made.key.chmod(0o640)  # a group's (Debian's ssl-cert) is not everyone's
    assert not key_readable_by_others(tls_settings(made.cert, made.key))


def test_tls_files_that_cannot_serve_are_one_clear_error(tmp_path: Path) -> None:
    made = make_certificate(tmp_path / "one")
    other = make_certificate(tmp_path / "other")
    garbage = tmp_path / "garbage.pem"
    garbage.write_text("not a certificate\n")
    encrypted = encrypt_key(made.key, tmp_path / "encrypted.key")
    cases = [
        (tls_settings(tmp_path / "missing.crt", made.key), "does not exist"),
        (tls_settings(tmp_path, made.key), "is not a file"),
        (tls_settings(made.cert, other.key), "is not the key of the certificate"),
        (tls_settings(garbage, made.key), "must be a PEM certificate"),
        (tls_settings(made.cert, garbage), "must be a PEM certificate"),
        (tls_settings(made.cert, encrypted), "is encrypted: give the key without a passphrase"),
    ]
    for given, expected in cases:
        with pytest.raises(SettingsError) as raised:
            server_context(given)
        assert expected in str(raised.value)
        assert "BEGIN" not in str(raised.value)


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads every file")
def test_an_unreadable_key_is_said(tmp_path: Path) -> None:
    made = make_certificate(tmp_path)
    made.key.chmod(0)
    with pytest.raises(SettingsError, match="cannot be read by this user"):
        server_context(tls_settings(made.cert, made.key))
