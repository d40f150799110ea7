"""The embedded PostgreSQL answers only to safelight's user (issue 12, part 5).

Real servers, real OS users: as root (as CI runs) the other user is ``nobody``, run with
``runuser``; the tests that need a second user or root's powers skip otherwise. Every
check here reads the system (``/proc``, modes, the server's settings), not safelight's
own idea of what it did.
"""

from __future__ import annotations

import grp
import os
import pwd
import shlex
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict

from safelight.db import embedded
from safelight.db.embedded import (
    DATA_FOLDER,
    LEGACY_SERVER_USER,
    EmbeddedDatabaseError,
    account_for,
    server_user_name,
    start_embedded,
    venv_pginstall,
)
from safelight.testing.legacypgserver import fetch_legacy_pgserver, legacy_bin
from tests.reaper import remove_folder, temporary_folder

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
as_root = pytest.mark.skipif(os.geteuid() != 0, reason="needs root (another OS user)")


@pytest.fixture
def scratch() -> Iterator[Path]:
    """Not pytest's tmp_path (0700, reset at session start): as root the server's own
    user must be able to enter the home."""
    folder = temporary_folder("safelight-private-", homes=True)  # tied to the session
    folder.chmod(0o755)
    try:
        yield folder
    finally:
        remove_folder(folder, homes=True)


@pytest.fixture(scope="session")
def legacy_pgserver() -> Iterator[Path]:
    """pgserver 0.1.4 unpacked (see ``safelight.testing.legacypgserver``)."""
    folder = temporary_folder("safelight-legacy-pgserver-")  # tied to the session
    try:
        yield fetch_legacy_pgserver(folder)
    finally:
        remove_folder(folder)


def long_home(scratch: Path, length: int) -> Path:
    """A home whose path is ``length`` characters long."""
    padding = length - len(str(scratch)) - 1
    assert padding > 0
    home = scratch / ("h" * padding)
    assert len(str(home)) == length
    return home


def socket_folder(url: str) -> Path:
    host: str = conninfo_to_dict(url)["host"]  # type: ignore[assignment]  # a URL with a host
    return Path(host)


def private_runtime_bases() -> list[Path]:
    """Folders only this user (or root) may write to: where a socket may go instead."""
    if os.geteuid() == 0:
        return [Path("/run")]
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    return [Path(runtime)] if runtime else []


def pg_bin() -> Path:
    return venv_pginstall() / "bin"


def server_version(url: str) -> str:
    with psycopg.connect(url) as conn:
        row = conn.execute("SHOW server_version").fetchone()
    assert row is not None
    return str(row[0])


def owners(folder: Path) -> set[int]:
    """The owners of ``folder`` and of everything in it."""
    found = {os.lstat(folder).st_uid}
    for parent, dirs, files in os.walk(folder):
        found.update(os.lstat(os.path.join(parent, n)).st_uid for n in dirs + files)
    return found


def postmaster_pid(home: Path) -> int:
    return int((home / DATA_FOLDER / "postmaster.pid").read_text().split()[0])


def modes(paths: list[Path]) -> dict[Path, int]:
    return {p: stat.S_IMODE(p.stat().st_mode) for p in paths}


def test_a_home_of_89_characters_has_its_socket_in_the_home(scratch: Path) -> None:
    home = long_home(scratch, 89)
    url, handle = start_embedded(home)
    try:
        folder = socket_folder(url)
        assert folder == home / "run"
        assert (folder / ".s.PGSQL.5432").is_socket()
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    finally:
        handle.cleanup()


def test_a_long_home_keeps_its_socket_in_a_private_folder_never_in_tmp(scratch: Path) -> None:
    home = long_home(scratch, 120)
    try:
        url, handle = start_embedded(home)
    except EmbeddedDatabaseError as exc:
        # No private runtime folder on this machine: the clear error is the other outcome.
        assert not private_runtime_bases()
        assert "SAFELIGHT_HOME" in str(exc) and str(home / "run") in str(exc)
        return
    try:
        folder = socket_folder(url)
        assert (folder / ".s.PGSQL.5432").is_socket()
        assert folder.is_relative_to(home) or any(
            folder.is_relative_to(base) for base in private_runtime_bases()
        ), folder
        assert not folder.is_relative_to("/tmp")
        st = folder.stat()
        assert stat.S_IMODE(st.st_mode) == 0o700
        assert st.st_uid == os.stat(home / DATA_FOLDER).st_uid  # the server's own user
        # No folder on the way can be written by anyone but root or this user.
        for above in folder.parents:
            above_st = above.stat()
            assert above_st.st_uid in (0, os.geteuid()), above
            assert not above_st.st_mode & 0o022, above
        with psycopg.connect(url) as conn:
            assert conn.execute("SELECT 1").fetchone() == (1,)
    finally:
        handle.cleanup()
    assert not folder.exists()  # a runtime folder does not outlive its server


def test_the_socket_s_name_too_long_with_no_private_folder_is_a_clear_error(
    scratch: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from safelight.db import embedded

    monkeypatch.setattr(embedded, "private_runtime_base", lambda: None)
    home = long_home(scratch, 100)
    with pytest.raises(EmbeddedDatabaseError) as failure:
        start_embedded(home)
    message = str(failure.value)
    assert str(home / "run" / ".s.PGSQL.5432") in message
    assert "set SAFELIGHT_HOME to a path of at most 89 bytes" in message
    assert not (home / DATA_FOLDER / "postmaster.pid").exists()


@as_root
def test_another_os_user_cannot_connect(scratch: Path) -> None:
    # Long enough that a socket in the home is impossible: the case that once went to a
    # 0777 folder of /tmp.
    home = long_home(scratch, 100)
    url, handle = start_embedded(home)
    try:
        psql = [str(pg_bin() / "psql"), url, "-Atc", "SELECT current_user"]

        def as_nobody() -> subprocess.CompletedProcess[str]:
            return subprocess.run(
                ["runuser", "-u", "nobody", "--", *psql],
                capture_output=True,
                text=True,
                timeout=30,
                cwd="/",
                env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "PGCONNECT_TIMEOUT": "5"},
            )

        mine = subprocess.run(psql, capture_output=True, text=True, timeout=30, check=False)
        assert mine.returncode == 0 and mine.stdout.strip() == "postgres", mine.stderr
        refused = as_nobody()
        assert refused.returncode != 0, refused.stdout
        # Behind the closed folder, authentication refuses nobody too.
        folder = socket_folder(url)
        folder.chmod(0o711)
        (folder / ".s.PGSQL.5432").chmod(0o777)
        try:
            refused = as_nobody()
        finally:
            (folder / ".s.PGSQL.5432").chmod(0o700)
            folder.chmod(0o700)
        assert refused.returncode != 0, refused.stdout
        assert 'Peer authentication failed for user "postgres"' in refused.stderr
    finally:
        handle.cleanup()


def test_no_tcp_listener_and_no_trust_for_anyone(scratch: Path) -> None:
    home = scratch / "home"
    url, handle = start_embedded(home)
    try:
        with psycopg.connect(url) as conn:
            assert conn.execute("SHOW listen_addresses").fetchone() == ("",)
            rules = conn.execute(
                "SELECT type, auth_method, error FROM pg_hba_file_rules"
            ).fetchall()
        assert rules and all(t == "local" and m != "trust" and e is None for t, m, e in rules)
        hba = (home / DATA_FOLDER / "pg_hba.conf").read_text()
        live = [line for line in hba.splitlines() if line.strip() and not line.startswith("#")]
        assert live and not any("trust" in line.split() for line in live)
    finally:
        handle.cleanup()


@as_root
def test_as_root_the_server_runs_as_its_own_user_with_no_groups(scratch: Path) -> None:
    home = scratch / "home"
    _, handle = start_embedded(home)
    try:
        status = Path(f"/proc/{postmaster_pid(home)}/status").read_text().splitlines()
        fields = {line.split(":")[0]: line.split(":", 1)[1].split() for line in status}
        uids, gids = {int(u) for u in fields["Uid"]}, {int(g) for g in fields["Gid"]}
        assert len(uids) == 1 and len(gids) == 1  # real, effective, saved, fs alike
        (uid,), (gid,) = uids, gids
        assert uid != 0 and gid != 0
        assert fields["Groups"] == []
        account = pwd.getpwuid(uid)
        assert account.pw_gid == gid
        assert account.pw_shell in ("/usr/sbin/nologin", "/bin/false")  # no login
        assert os.stat(home / DATA_FOLDER).st_uid == uid
        # The home's own user (ADR 0037), named for it, and the only member of its group.
        assert account.pw_name == server_user_name(home) != LEGACY_SERVER_USER
        assert account.pw_gecos == f"safelight embedded PostgreSQL of {home}"
        group = grp.getgrgid(gid)
        assert group.gr_name == account.pw_name and group.gr_mem == []
        assert not [g.gr_name for g in grp.getgrall() if account.pw_name in g.gr_mem]
    finally:
        handle.cleanup()


@as_root
def test_a_closed_folder_above_the_home_stays_closed_and_is_named(scratch: Path) -> None:
    closed = scratch / "closed"
    closed.mkdir(mode=0o700)
    home = closed / "home"
    before = modes([*home.parent.parents, closed])
    with pytest.raises(EmbeddedDatabaseError) as failure:
        start_embedded(home)
    assert f"cannot enter {closed} (mode 0700)" in str(failure.value)
    assert f"chmod o+x {closed}" in str(failure.value)
    assert modes([*home.parent.parents, closed]) == before


@as_root
def test_a_venv_in_a_closed_folder_stays_closed(scratch: Path) -> None:
    """A checkout of mode 0700: the server runs from a copy of the binaries in the home,
    and no folder above the venv or the home changes its mode."""
    closed = scratch / "checkout"
    closed.mkdir(mode=0o700)
    venv = closed / "venv"
    # The venv, linked file by file: the same installation, inside a closed folder.
    subprocess.run(["cp", "-al", str(Path(sys.prefix)), str(venv)], check=True)
    home = scratch / "home"
    home.mkdir()
    watched = [*home.parents, home, *venv.parents, venv]
    before = modes(watched)
    code = (
        "import os, sys; from pathlib import Path;"
        "from safelight.db.embedded import start_embedded;"
        "home = Path(sys.argv[1]); url, handle = start_embedded(home);"
        f"pid = int((home / {DATA_FOLDER!r} / 'postmaster.pid').read_text().split()[0]);"
        "print(os.readlink(f'/proc/{pid}/exe')); handle.cleanup()"
    )
    done = subprocess.run(
        [str(venv / "bin" / "python"), "-c", code, str(home)],
        capture_output=True,
        text=True,
        timeout=180,
        cwd=ROOT,
    )
    assert modes(watched) == before
    assert done.returncode == 0, done.stderr
    assert Path(done.stdout.strip()).is_relative_to(home), done.stdout


def test_a_data_folder_made_by_pgserver_is_converted_and_keeps_its_data(
    scratch: Path, legacy_pgserver: Path
) -> None:
    """pgserver's own start (before ADR 0014), with PostgreSQL 16.2: the new server opens
    it with its data, and its trust line is gone."""
    home = scratch / "home"
    pgdata = home / DATA_FOLDER
    pgdata.mkdir(parents=True)
    # The old way, with the real package: trust, and (as root) the user "pgserver".
    legacy = (
        "import sys, warnings; warnings.simplefilter('ignore'); import pgserver, psycopg;"
        "server = pgserver.get_server(sys.argv[1]);"
        "conn = psycopg.connect(server.get_uri(), autocommit=True);"
        "conn.execute('CREATE TABLE kept (photo text)');"
        "conn.execute(\"INSERT INTO kept VALUES ('IMG_0001.HEIC')\");"
        "print(conn.execute('SHOW server_version').fetchone()[0]); conn.close()"
    )
    made = subprocess.run(
        [sys.executable, "-c", legacy, str(pgdata)],
        capture_output=True,
        text=True,
        timeout=180,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(legacy_pgserver)},
    )
    assert made.returncode == 0, made.stderr
    assert made.stdout.strip() == "16.2"
    assert "trust" in (pgdata / "pg_hba.conf").read_text()

    url, handle = start_embedded(home)
    try:
        with psycopg.connect(url) as conn:
            assert conn.execute("SELECT photo FROM kept").fetchall() == [("IMG_0001.HEIC",)]
            methods = {m for (m,) in conn.execute("SELECT auth_method FROM pg_hba_file_rules")}
        assert "trust" not in methods
        assert server_version(url) == installed_version()
        hba = (pgdata / "pg_hba.conf").read_text()
        assert not any(
            "trust" in line.split() for line in hba.splitlines() if not line.startswith("#")
        )
        owner = os.stat(pgdata).st_uid
        for folder, dirs, files in os.walk(pgdata):
            for name in [folder, *(os.path.join(folder, n) for n in dirs + files)]:
                assert os.lstat(name).st_uid == owner, name
        if os.geteuid() == 0:
            assert pwd.getpwuid(owner).pw_name == server_user_name(home)
    finally:
        handle.cleanup()


def installed_version() -> str:
    """The version of the venv's PostgreSQL, from its own binary: ``16.14``."""
    out = subprocess.run(
        [str(pg_bin() / "postgres"), "--version"], capture_output=True, text=True, check=True
    ).stdout
    return out.split()[-1]


def a_home_of_today_s_release(
    home: Path, bin_dir: Path, account: embedded.Account, *, left_running: bool
) -> None:
    """A home as the releases before ADR 0037 leave it: safelight's own start (ADR 0014,
    the same code as today's), from pgserver 0.1.4's PostgreSQL 16.2 (``bin_dir``), run
    as ``account`` (as root, the one user ``safelight-pg`` of every home); with a table
    of data. The server stopped, or ``left_running`` (as a process killed with SIGKILL
    leaves it)."""
    pgdata, run = home / DATA_FOLDER, home / "run"
    home.mkdir()
    embedded._private_folder(run, account)
    embedded._prepare_data(pgdata, bin_dir, account)
    embedded.start_postmaster(pgdata, pgdata / "log", run, bin_dir, account)
    running = embedded.read_postmaster(pgdata)
    assert running is not None
    try:
        url = f"postgresql://postgres@/postgres?host={run}"
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("CREATE TABLE kept (photo text PRIMARY KEY)")
            conn.execute("INSERT INTO kept VALUES ('IMG_0001.HEIC'), ('IMG_0002.DNG')")
        assert server_version(url) == "16.2"
    finally:
        if not left_running:
            embedded.stop_postmaster(running.pid, pgdata)
    assert owners(pgdata) == {account.uid}


@pytest.mark.parametrize(
    ("left_running", "by_the_home_s_user"),
    [(False, False), (True, False), (True, True)],
    ids=["stopped", "left-running", "left-running-by-the-home-s-user"],
)
def test_a_data_folder_of_today_s_release_is_opened_with_its_data(
    scratch: Path, legacy_pgserver: Path, left_running: bool, by_the_home_s_user: bool
) -> None:
    """PostgreSQL 16.2's data folder, opened by the package's current 16.x (the same
    major version: no pg_upgrade). As root the data folder moves from ``safelight-pg`` to
    the home's own user, every file of it. A 16.2 server still running is stopped and
    the new one started, even when it runs as the user the new one would (not root, or
    a home already moved): it runs other binaries."""
    home = scratch / "home"
    if by_the_home_s_user:
        account = embedded.server_account(home)
    else:
        account = account_for(LEGACY_SERVER_USER, "safelight's embedded PostgreSQL")
    a_home_of_today_s_release(home, legacy_bin(legacy_pgserver), account, left_running=left_running)
    before = embedded.read_postmaster(home / DATA_FOLDER)

    url, handle = start_embedded(home)
    try:
        assert server_version(url) == installed_version() != "16.2"
        with psycopg.connect(url) as conn:
            rows = conn.execute("SELECT photo FROM kept ORDER BY photo").fetchall()
            # The index is read too: an index scan finds a row through it.
            conn.execute("SET enable_seqscan = off")
            by_key = conn.execute("SELECT photo FROM kept WHERE photo = 'IMG_0002.DNG'")
            assert by_key.fetchall() == [("IMG_0002.DNG",)]
        assert rows == [("IMG_0001.HEIC",), ("IMG_0002.DNG",)]
        now = embedded.read_postmaster(home / DATA_FOLDER)
        assert now is not None
        if left_running:
            assert before is not None and now.pid != before.pid  # 16.2 stopped, 16.x started
        if os.geteuid() == 0:
            mine = pwd.getpwnam(server_user_name(home)).pw_uid
            assert owners(home / DATA_FOLDER) == {mine}
            assert os.stat(f"/proc/{now.pid}").st_uid == mine
            assert os.stat(home / "run").st_uid == mine
    finally:
        handle.cleanup()


@as_root
def test_two_homes_servers_cannot_reach_each_other(scratch: Path) -> None:
    """A database superuser of one home runs programs and reads files as its server's OS
    user (``COPY ... FROM PROGRAM``, ``pg_read_file``): from there, the other home's
    socket and data folder are closed, and behind its socket's folder its peer
    authentication refuses that user. The same, aimed at its own home, works: the test
    can fail."""
    home_a, home_b = scratch / "a", scratch / "b"
    url_a, handle_a = start_embedded(home_a)
    try:
        url_b, handle_b = start_embedded(home_b)
        try:
            user_a, user_b = server_user_name(home_a), server_user_name(home_b)
            assert user_a != user_b
            uid_a, uid_b = pwd.getpwnam(user_a).pw_uid, pwd.getpwnam(user_b).pw_uid
            assert uid_a != uid_b
            assert owners(home_a / DATA_FOLDER) == {uid_a}
            assert owners(home_b / DATA_FOLDER) == {uid_b}
            psql = str(handle_a.bin_dir / "psql")

            def from_a(statement: sql.Composed) -> list[str]:
                """Run ``statement`` as home A's database superuser; the lines it gives."""
                with psycopg.connect(url_a, autocommit=True) as conn:
                    conn.execute("CREATE TEMP TABLE seen (line text)")
                    conn.execute(statement)
                    return [line for (line,) in conn.execute("SELECT line FROM seen")]

            def psql_to(url: str) -> sql.Composed:
                command = shlex.join([psql, "-X", "-w", "-Atc", "SELECT 42", url])
                return sql.SQL("COPY seen FROM PROGRAM {}").format(sql.Literal(command))

            def read_file(path: Path) -> sql.Composed:
                return sql.SQL("INSERT INTO seen SELECT pg_read_file({})").format(
                    sql.Literal(str(path))
                )

            # Its own: reached.
            assert from_a(psql_to(url_a)) == ["42"]
            assert from_a(read_file(home_a / DATA_FOLDER / "PG_VERSION")) == ["16\n"]
            # The other home's: refused, both ways.
            with pytest.raises(psycopg.errors.ExternalRoutineException, match="failed"):
                from_a(psql_to(url_b))
            with pytest.raises(psycopg.Error, match="Permission denied"):
                from_a(read_file(home_b / DATA_FOLDER / "PG_VERSION"))

            # Behind the closed folder, home B's peer authentication refuses A's user.
            folder_b = socket_folder(url_b)
            folder_b.chmod(0o711)
            (folder_b / ".s.PGSQL.5432").chmod(0o777)
            try:
                refused = subprocess.run(
                    ["runuser", "-u", user_a, "--", psql, "-X", "-w", "-Atc", "SELECT 1", url_b],
                    capture_output=True,
                    text=True,
                    timeout=30,
                    cwd="/",
                )
            finally:
                (folder_b / ".s.PGSQL.5432").chmod(0o700)
                folder_b.chmod(0o700)
            assert refused.returncode != 0, refused.stdout
            assert 'Peer authentication failed for user "postgres"' in refused.stderr
            ident = (home_b / DATA_FOLDER / "pg_ident.conf").read_text()
            assert f'"{user_b}"' in ident and user_a not in ident
        finally:
            handle_b.cleanup()
    finally:
        handle_a.cleanup()


def test_a_moved_home_keeps_its_data_under_its_new_user(scratch: Path) -> None:
    """A home renamed has another digest, so (as root) another user: its data folder,
    of the old name's user, is given to the new one."""
    before, after = scratch / "before", scratch / "after"
    url, handle = start_embedded(before)
    try:
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("CREATE TABLE kept (photo text)")
            conn.execute("INSERT INTO kept VALUES ('IMG_0001.HEIC')")
    finally:
        handle.cleanup()
    old_owner = os.stat(before / DATA_FOLDER).st_uid
    # Looked up while its home exists: once renamed, another session's clean-up of the
    # users of gone homes (testing.serverusers) may remove it.
    old_user_uid = pwd.getpwnam(server_user_name(before)).pw_uid if os.geteuid() == 0 else None
    before.rename(after)

    url, handle = start_embedded(after)
    try:
        with psycopg.connect(url) as conn:
            assert conn.execute("SELECT photo FROM kept").fetchall() == [("IMG_0001.HEIC",)]
        if os.geteuid() == 0:
            new_owner = pwd.getpwnam(server_user_name(after)).pw_uid
            assert new_owner != old_owner == old_user_uid
            assert owners(after / DATA_FOLDER) == {new_owner}
    finally:
        handle.cleanup()
