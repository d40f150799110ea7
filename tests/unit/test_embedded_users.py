"""Who runs a root home's embedded server (ADR 0034): a user per home, named by the
home's real path; and which users the tests may remove."""

from __future__ import annotations

import os
import pwd
import shutil
from pathlib import Path

import pytest

from safelight.db import embedded
from safelight.db.embedded import (
    LEGACY_SERVER_USER,
    Account,
    ident_conf,
    is_server_user,
    server_user_name,
)
from safelight.testing.serverusers import home_of


def test_a_home_s_user_is_named_by_a_digest_of_its_path_within_useradd_s_limit() -> None:
    name = server_user_name(Path("/var/lib/safelight"))
    assert name.startswith("safelight-pg-") and len(name) == 25 <= 32
    assert is_server_user(name)
    assert name != server_user_name(Path("/var/lib/safelight2"))
    assert name == server_user_name(Path("/var/lib/safelight"))


def test_a_home_reached_through_a_link_or_spelled_two_ways_has_one_user(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (tmp_path / "link").symlink_to(home)
    names = {
        server_user_name(home),
        server_user_name(tmp_path / "link"),
        server_user_name(tmp_path / "home" / ".." / "home"),
    }
    assert len(names) == 1


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("safelight-pg-0123456789ab", True),
        (LEGACY_SERVER_USER, False),  # the shared user of earlier releases
        ("safelight-pg-0123456789a", False),
        ("safelight-pg-0123456789abc", False),
        ("safelight-pg-0123456789AB", False),
        ("safelight-pg-0123456789ag", False),
        ("safelight-faults-pg", False),
        ("xsafelight-pg-0123456789ab", False),
        ("postgres", False),
    ],
)
def test_which_names_are_a_home_s_server_user(name: str, expected: bool) -> None:
    assert is_server_user(name) is expected


def test_the_user_s_comment_names_its_home_when_the_field_can_hold_it(tmp_path: Path) -> None:
    plain = tmp_path / "home"
    assert embedded._comment_naming(plain) == f"safelight embedded PostgreSQL of {plain}"
    for odd in ("a:b", "a,b", "a=b", "a\\b", "a\nb", "a\tb", "fotos-été"):
        assert embedded._comment_naming(tmp_path / odd) == "safelight embedded PostgreSQL"


def test_a_home_s_peer_map_lets_in_the_invoking_user_and_its_own_user_only() -> None:
    """The invoking user: root, when the server runs as a home's user."""
    me = pwd.getpwuid(os.geteuid()).pw_name
    account = Account("safelight-pg-0123456789ab", 4242, 4242, switch=True)
    lines = [line for line in ident_conf(account).splitlines() if not line.startswith("#")]
    assert lines == [
        f'safelight "{me}" postgres',
        'safelight "safelight-pg-0123456789ab" postgres',
    ]


def passwd(name: str, gecos: str) -> pwd.struct_passwd:
    return pwd.struct_passwd((name, "x", 4242, 4242, gecos, "/nonexistent", "/bin/false"))


def test_only_a_user_whose_name_its_commented_home_gives_is_taken_for_that_home() -> None:
    home = Path("/tmp/safelight-test-x/home")
    name = server_user_name(home)
    assert home_of(passwd(name, f"safelight embedded PostgreSQL of {home}")) == home
    # The comment alone is not trusted: another name, another home's comment.
    other = server_user_name(Path("/tmp/other"))
    assert home_of(passwd(other, f"safelight embedded PostgreSQL of {home}")) is None
    assert home_of(passwd(name, "safelight embedded PostgreSQL")) is None
    assert home_of(passwd(LEGACY_SERVER_USER, f"safelight embedded PostgreSQL of {home}")) is None
    assert home_of(passwd(name, f"someone else of {home}")) is None


def test_a_running_server_is_ours_only_if_it_runs_the_same_binary(tmp_path: Path) -> None:
    """The same file (a link, a hard-linked copy) or the same bytes; read, never run."""
    exe = os.path.realpath(f"/proc/{os.getpid()}/exe")
    same, copy, other, longer = (tmp_path / n for n in ("same", "copy", "other", "longer"))
    for folder in (same, copy, other, longer):
        folder.mkdir()
    (same / "postgres").symlink_to(exe)
    shutil.copy2(exe, copy / "postgres")
    data = bytearray(Path(exe).read_bytes())
    data[len(data) // 2] ^= 0xFF  # the same size, one byte changed
    (other / "postgres").write_bytes(bytes(data))
    (longer / "postgres").write_bytes(Path(exe).read_bytes() + b"\0")
    assert embedded._runs_binary_of(os.getpid(), same)
    assert embedded._runs_binary_of(os.getpid(), copy)
    assert not embedded._runs_binary_of(os.getpid(), other)
    assert not embedded._runs_binary_of(os.getpid(), longer)
    assert not embedded._runs_binary_of(os.getpid(), tmp_path)  # no postgres there
