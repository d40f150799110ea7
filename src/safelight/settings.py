"""One frozen, validated settings object, built at the edge and passed down.

Precedence: explicit values (command-line flags), then ``SAFELIGHT_*`` environment
variables (the field's name in upper case), then the defaults below. Units are in the
names. An invalid value is a :class:`SettingsError` naming the setting, raised before
anything starts.
"""

from __future__ import annotations

import dataclasses
import grp
import os
import stat
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from safelight.core.connections import ConnectionLimits, beyond_loopback
from safelight.core.filemodes import FileModes
from safelight.core.filemodes import make_folder as make_private_folder
from safelight.core.hostnames import (
    ANY_ADDRESS,
    LOOPBACK_ADDRESS,
    host_name_problem,
    proxy_address_problem,
    url_of,
)
from safelight.library.faces.models import missing as missing_for_faces
from safelight.library.files.limits import (
    DEFAULT_DECODE_MEMORY_MIB,
    MIB,
    MIN_DECODE_MEMORY_MIB,
    available_cores,
    available_memory_bytes,
    decode_processes_for,
)

if TYPE_CHECKING:
    from safelight.library.render.images import ProxySpec
    from safelight.work.executor import ExecutorSettings
    from safelight.work.hours import HeavyWindow
    from safelight.work.retry import RetryPolicy
    from safelight.work.worker import WorkerSettings

# The engine's modules (the decoder, the executor, psycopg) are imported by the methods
# that build their configs, not here: every command reads the settings, and `--help`
# shows their defaults, in well under a second (ADR 0063).

ENV_PREFIX = "SAFELIGHT_"


class SettingsError(ValueError):
    """A setting has a value safelight cannot use; the message names the setting."""


ROOT_HOME = Path("/var/lib/safelight")

# SAFELIGHT_WEB_TOKEN, when given, is the token of serve's first-admin link (ADR 0045):
# whoever holds it becomes the admin, so it must not be guessable from the network. A
# given one is at least this long, of at least this many different characters (one made
# at start is 43 characters, 256 random bits; `openssl rand -hex 16` is 32 characters of
# about 14 different ones). No rule measures randomness; these refuse the obvious
# non-secrets ("aaaa...", "abab...", a short word).
MIN_WEB_TOKEN_LENGTH = 32
MIN_WEB_TOKEN_DISTINCT = 8


def web_token_problem(token: str) -> str | None:
    """Why ``token`` is too weak to be SAFELIGHT_WEB_TOKEN, as the end of a sentence that
    names neither the token nor how it fell short (a count of its characters would help
    a guess); None if it will do."""
    if len(token) < MIN_WEB_TOKEN_LENGTH or len(set(token)) < MIN_WEB_TOKEN_DISTINCT:
        return (
            f"must be a random secret of at least {MIN_WEB_TOKEN_LENGTH} characters, at least "
            f"{MIN_WEB_TOKEN_DISTINCT} of them different (`openssl rand -hex 32` makes one)"
        )
    return None


def _default_home() -> Path:
    """``~/.local/share/safelight``; for root, ``/var/lib/safelight``.

    As root, the embedded PostgreSQL runs as a system user of its own, which must be
    able to enter every folder on the way to its data; safelight never opens one for it
    (ADR 0014). ``/root`` is closed to other users, so a home under it would not start;
    the folders above ``/var/lib/safelight`` are open already.
    """
    if os.geteuid() == 0:
        return ROOT_HOME
    return Path.home() / ".local" / "share" / "safelight"


def default_decode_processes(decode_memory_mib: int = DEFAULT_DECODE_MEMORY_MIB) -> int:
    """One decode process per core this process may run on, but no more than the
    memory available now holds at ``decode_memory_mib`` each; at least one."""
    return decode_processes_for(
        available_cores(), available_memory_bytes(), decode_memory_mib * MIB
    )


@dataclass(frozen=True, slots=True)
class Settings:
    """Every setting, each default written here and only here; each component gets its own
    frozen config from the methods below (its config has no defaults of its own)."""

    # Where the queue lives. None: the embedded PostgreSQL under ``home``.
    database_url: str | None = None
    home: Path = field(default_factory=_default_home)
    # Proxies go here, and only here. None: ``<home>/proxies``.
    proxy_root: Path | None = None
    # The group a separate web server or reverse proxy runs as, which may read the home
    # and the proxies (folders 0750, files 0640, of this group); None: only safelight's
    # user reads them (0700, 0600). ADR 0043, core.filemodes.
    read_group: str | None = None

    lease_seconds: float = 60.0
    heartbeat_seconds: float = 10.0
    poll_seconds: float = 5.0
    recovery_interval_seconds: float = 15.0
    shutdown_grace_seconds: float = 10.0
    max_stalls: int = 3
    # The retry policy of every kind that declares none of its own (its Kind row), for
    # failures that may pass (safelight.work.retry, ADR 0024): at most this many failed
    # attempts; after the nth, a wait of retry_delay_seconds * 2**(n-1), at most
    # retry_max_delay_seconds, less up to retry_jitter of it at random. 30 s, 1, 2 and
    # 4 min: a NAS that restarts is back within the 7.5 min they add up to.
    retry_max_attempts: int = 5
    retry_delay_seconds: float = 30.0
    retry_max_delay_seconds: float = 3600.0
    retry_jitter: float = 0.25
    # While the database is away, each task of a Worker process (the Workers, the
    # listener, lease recovery, the presence, the scheduler) tries again after its own
    # period, twice that after the next failure, and so on up to this (work.backoff).
    outage_backoff_max_seconds: float = 60.0

    # ``safelight worker`` serves /metrics and /healthz on this port (0: any free one,
    # logged); None: no metrics server. Only where its owner can reach it by default:
    # the loopback address; 0.0.0.0 (or ::) opens it to the network.
    metrics_port: int | None = None
    metrics_host: str = "127.0.0.1"
    # A scrape is answered from the queue as the metrics port last read it, on a
    # database connection of its own (never the Workers' pool), read again at most this
    # often however many scrapes come: Prometheus scrapes every 15 s by default.
    metrics_refresh_seconds: float = 5.0
    # Connections each server holds at once; one more is closed as it is accepted (each
    # is a descriptor of the process: a Worker's must go to its photos). A scraper and a
    # probe need a few; the dashboard's browsers open about six each.
    metrics_max_connections: int = 64
    web_max_connections: int = 128
    # Both servers close a connection that has not sent a whole request head this long
    # after it opened, or after its last answer (a slow-header client, "slowloris").
    request_head_seconds: float = 5.0
    # ``safelight health`` fails when no Worker process has written its presence for
    # this long; each writes it every recovery_interval_seconds.
    health_worker_seen_seconds: float = 120.0
    # ``safelight serve``: the web dashboard (safelight.web, ADR 0031), on the loopback
    # address unless told otherwise (0: any free port, printed). web_token: the token of
    # the one-time link that makes the first admin while no user exists (ADR 0045); None:
    # one made at each start and printed once in that link. Never logged, and not in
    # this object's repr.
    web_host: str = "127.0.0.1"
    web_port: int = 8470
    web_token: str | None = None
    # Listening beyond the loopback address, the names the dashboard answers to (ADR
    # 0042): host names or IP literals; a request whose Host names anything else (a
    # DNS-rebinding page's name) is answered 421. The loopback names, and the one
    # address it listens on (unless every address), are answered as well. ``serve``
    # refuses to listen beyond loopback without one (check_web_reach).
    web_allowed_hosts: tuple[str, ...] = ()
    # HTTPS, served by uvicorn: a PEM certificate (chain) and its unencrypted key; both
    # or neither (safelight.web.tls reads them at start).
    web_tls_cert: Path | None = None
    web_tls_key: Path | None = None
    # Reverse proxies (IP addresses or networks) whose X-Forwarded-Proto and
    # X-Forwarded-For are believed: behind one, a request's scheme and client are the
    # ones the proxy saw. From any other peer those headers are ignored.
    web_behind_proxy: tuple[str, ...] = ()

    max_concurrent_files: int = 4
    # A symbolic link in a library is never followed, only listed in the crawl's
    # "skipped". True: a link to a regular file that resolves inside the same storage
    # root is crawled as a file at the link's path, read from the target (or, if the
    # crawl lists the target itself, counted as its duplicate). Links to folders, and
    # links out of the root, are refused either way.
    follow_links_inside_root: bool = False
    # Processes that decode photos and make their proxies, shared by a process's
    # Workers (ADR 0010). 0: in threads of the Worker process (one core's worth, the GIL).
    # Unset, ``load`` sizes it for the decode_memory_mib it was given.
    decode_processes: int = field(default_factory=default_decode_processes)
    # Memory one decode may take: photos that would need more (decoded whole: all but
    # JPEGs) fail with a per-file error; also each decode process's address-space limit
    # (plus room for its code), and what sizes the pool (safelight.library.files.limits).
    decode_memory_mib: int = DEFAULT_DECODE_MEMORY_MIB
    crawl_interval_seconds: float = 4 * 3600.0
    token_cleanup_interval_seconds: float = 86400.0
    proxy_sweep_interval_seconds: float = 3600.0
    retention_interval_seconds: float = 86400.0
    work_retention_days: float = 7.0
    # A file a crawl could not ingest is read again when it changes, when asked, or this
    # long after it failed, doubling with each crawl it fails, up to the longest
    # (ADR 0057, safelight.library.walk.failures).
    failed_file_retry_days: float = 1.0
    failed_file_retry_max_days: float = 30.0

    thumbnail_width: int = 300
    thumbnail_quality: int = 75
    preview_width: int = 1920
    preview_quality: int = 85

    log_format: str = "text"
    # The window of the day in which heavy kinds (a Kind row's ``heavy``: the crawl) may
    # start, as HH:MM-HH:MM in the machine's local time (22:00-06:00 wraps past
    # midnight); a crawl running when it ends stops after its current files and goes on
    # at the next window (ADR 0060). None: at any hour. Binds ``safelight worker``
    # serving until stopped; ``run`` and ``worker --until-idle`` ask for the work now.
    heavy_hours: str | None = None
    # Fault-injection runs only: a file that gets a JSON line before and after every
    # file side effect of every attempt (safelight.core.journal). None: off.
    side_effect_log: Path | None = None
    # A backup of the catalogue into <home>/backups this often, the newest this many
    # kept (ADR 0061, safelight.db.backups).
    backup_interval_seconds: float = 86400.0
    backups_kept: int = 7
    # The scrub of the originals (ADR 0062): one item per active config each interval,
    # reading at most scrub_bytes_per_hour times the interval (in hours) of its
    # originals, oldest check first, and comparing each one's content hash with the
    # recorded one. 2 GiB an hour re-reads a 500 GB library in about ten days.
    scrub_interval_seconds: float = 3600.0
    scrub_bytes_per_hour: int = 2 << 30
    # Finding the faces in photos and grouping them into people (ADR 0067, docs/faces.md):
    # opt-in, since it needs dlib and its models (`SAFELIGHT_FACES=1 scripts/setup`) and
    # costs about a second of CPU a photo. On, every crawl queues its config's faces.
    faces: bool = False

    def __post_init__(self) -> None:
        def positive(name: str) -> None:
            if not getattr(self, name) > 0:
                raise SettingsError(f"{name} must be greater than 0, not {getattr(self, name)}")

        for name in (
            "lease_seconds",
            "heartbeat_seconds",
            "poll_seconds",
            "recovery_interval_seconds",
            "outage_backoff_max_seconds",
            "health_worker_seen_seconds",
            "crawl_interval_seconds",
            "token_cleanup_interval_seconds",
            "proxy_sweep_interval_seconds",
            "retention_interval_seconds",
            "work_retention_days",
            "failed_file_retry_days",
            "failed_file_retry_max_days",
            "max_stalls",
            "retry_max_attempts",
            "retry_delay_seconds",
            "max_concurrent_files",
            "metrics_refresh_seconds",
            "metrics_max_connections",
            "web_max_connections",
            "request_head_seconds",
        ):
            positive(name)
        if self.failed_file_retry_max_days < self.failed_file_retry_days:
            raise SettingsError(
                "failed_file_retry_max_days must not be less than failed_file_retry_days"
            )
        if self.shutdown_grace_seconds < 0:
            raise SettingsError("shutdown_grace_seconds must not be negative")
        if self.decode_processes < 0:
            raise SettingsError(
                "decode_processes must be 0 (decode in threads) or more, "
                f"not {self.decode_processes}"
            )
        # Checked here too (the rule is the executor's) for a message naming the settings.
        from safelight.work.executor import longest_heartbeat

        if self.heartbeat_seconds > longest_heartbeat(self.lease_seconds):
            raise SettingsError(
                f"heartbeat_seconds ({self.heartbeat_seconds:g}) must be at most a quarter of "
                f"lease_seconds ({self.lease_seconds:g}), well under the half-lease self-stop"
            )
        if self.retry_max_delay_seconds < self.retry_delay_seconds:
            raise SettingsError(
                f"retry_max_delay_seconds ({self.retry_max_delay_seconds:g}) must not be less "
                f"than retry_delay_seconds ({self.retry_delay_seconds:g})"
            )
        if not 0 <= self.retry_jitter <= 1:
            raise SettingsError(f"retry_jitter must be between 0 and 1, not {self.retry_jitter}")
        try:
            self.proxy_spec()  # the proxies' rules (sizes, qualities, memory) live there
        except ValueError as exc:
            raise SettingsError(str(exc)) from None
        if self.metrics_port is not None and not 0 <= self.metrics_port <= 65535:
            raise SettingsError(
                f"metrics_port must be a TCP port, 0 to 65535, not {self.metrics_port}"
            )
        if not self.metrics_host.strip():
            raise SettingsError("metrics_host must name an address to listen on, not nothing")
        if not 0 <= self.web_port <= 65535:
            raise SettingsError(f"web_port must be a TCP port, 0 to 65535, not {self.web_port}")
        if not self.web_host.strip():
            raise SettingsError("web_host must name an address to listen on, not nothing")
        if self.web_token is not None and (problem := web_token_problem(self.web_token)):
            # Says what is expected, never the token: a setting error is printed.
            raise SettingsError(
                f"web_token ({ENV_PREFIX}WEB_TOKEN) {problem}; or leave it unset for one "
                "made at start"
            )
        for setting, flag, entries, problem_of in (
            ("web_allowed_hosts", "--allow-host", self.web_allowed_hosts, host_name_problem),
            ("web_behind_proxy", "--behind-proxy", self.web_behind_proxy, proxy_address_problem),
        ):
            for number, entry in enumerate(entries, 1):
                problem = problem_of(entry)
                if problem is not None:
                    # Not the entry itself: say which one, and what is expected.
                    raise SettingsError(
                        f"{setting} ({ENV_PREFIX}{setting.upper()}, {flag}): entry {number} "
                        f"{problem}"
                    )
        if (self.web_tls_cert is None) != (self.web_tls_key is None):
            raise SettingsError(
                f"web_tls_cert and web_tls_key ({ENV_PREFIX}WEB_TLS_CERT and "
                f"{ENV_PREFIX}WEB_TLS_KEY, --tls-cert and --tls-key) go together: give both "
                "for HTTPS, or neither"
            )
        if self.health_worker_seen_seconds <= 2 * self.recovery_interval_seconds:
            # A Worker writes its presence each recovery interval: a window of fewer than
            # two of them would call a live Worker gone after one late write.
            raise SettingsError(
                f"health_worker_seen_seconds ({self.health_worker_seen_seconds:g}) must be "
                "more than twice recovery_interval_seconds "
                f"({self.recovery_interval_seconds:g}), how often a Worker says it is alive"
            )
        if self.read_group is not None:
            _check_read_group(self.read_group)
        for name in ("scrub_interval_seconds", "scrub_bytes_per_hour"):
            positive(name)
        if self.heavy_hours is not None:
            from safelight.work.hours import HeavyHours

            try:
                HeavyHours.parse(self.heavy_hours)
            except ValueError as exc:
                raise SettingsError(f"heavy_hours ({ENV_PREFIX}HEAVY_HOURS) {exc}") from None
        if self.log_format not in ("text", "json"):
            raise SettingsError(f"log_format must be 'text' or 'json', not {self.log_format!r}")
        for name in ("backup_interval_seconds", "backups_kept"):
            positive(name)
        if self.database_url is not None:
            from safelight.db.urls import url_problem

            problem = url_problem(self.database_url)
            if problem is not None:
                # Not the URL itself, masked or not: a mistyped one may hold anything.
                raise SettingsError(
                    f"database_url ({ENV_PREFIX}DATABASE_URL) is not a PostgreSQL connection "
                    f"string: {problem}; give postgresql://user@host:port/dbname, or leave it "
                    "unset for the embedded PostgreSQL"
                )

    def executor(self, heavy_kinds: frozenset[str] = frozenset()) -> ExecutorSettings:
        """``heavy_kinds``: the kinds kept to :meth:`heavy_window` (none: no window)."""
        from safelight.work.executor import ExecutorSettings

        return ExecutorSettings(
            lease_seconds=self.lease_seconds,
            heartbeat_seconds=self.heartbeat_seconds,
            shutdown_grace_seconds=self.shutdown_grace_seconds,
            heavy=self.heavy_window(heavy_kinds),
        )

    def heavy_window(self, heavy_kinds: frozenset[str]) -> HeavyWindow | None:
        """The heavy kinds' window, or None when heavy_hours is unset or none is heavy."""
        from safelight.work.hours import HeavyHours, HeavyWindow

        if self.heavy_hours is None or not heavy_kinds:
            return None
        return HeavyWindow(HeavyHours.parse(self.heavy_hours), heavy_kinds)

    def retry_policy(self) -> RetryPolicy:
        """The retry policy of a kind whose ``Kind`` row declares none."""
        from safelight.work.retry import RetryPolicy

        return RetryPolicy(
            max_attempts=self.retry_max_attempts,
            delay_seconds=self.retry_delay_seconds,
            max_delay_seconds=self.retry_max_delay_seconds,
            jitter=self.retry_jitter,
        )

    def worker(
        self,
        worker_id: str,
        kinds: frozenset[str],
        *,
        owner: str | None = None,
        until_idle: bool = False,
        heavy_kinds: frozenset[str] = frozenset(),
    ) -> WorkerSettings:
        """A Worker's config: ``owner`` None serves every user's configs; ``heavy_kinds``
        are claimed only inside :meth:`heavy_window`."""
        from safelight.work.worker import WorkerSettings

        return WorkerSettings(
            worker_id=worker_id,
            kinds=kinds,
            owner=owner,
            lease_seconds=self.lease_seconds,
            poll_seconds=self.poll_seconds,
            until_idle=until_idle,
            backoff_max_seconds=self.outage_backoff_max_seconds,
            heavy=self.heavy_window(heavy_kinds),
        )

    def metrics_limits(self) -> ConnectionLimits:
        """What the metrics port allows its clients."""
        return ConnectionLimits(self.metrics_max_connections, self.request_head_seconds)

    def web_limits(self) -> ConnectionLimits:
        """What the dashboard allows its clients."""
        return ConnectionLimits(self.web_max_connections, self.request_head_seconds)

    @property
    def web_scheme(self) -> str:
        """``https`` when the dashboard serves TLS itself, else ``http``."""
        return "http" if self.web_tls_cert is None else "https"

    def web_beyond_loopback(self) -> bool:
        """Whether the dashboard's address lets other machines reach it."""
        return beyond_loopback(self.web_host)

    def check_web_reach(self) -> None:
        """Raise :class:`SettingsError` when the dashboard would listen beyond loopback
        without the names it answers to: it would answer none but the loopback's
        (``safelight serve`` checks before it starts; other commands never listen)."""
        if self.web_allowed_hosts or not self.web_beyond_loopback():
            return
        raise SettingsError(
            "listening beyond this machine (web_host) needs the names the dashboard answers "
            "to: add --allow-host NAME (one per name, like nas.local or 192.168.1.5) or set "
            f"{ENV_PREFIX}WEB_ALLOWED_HOSTS=NAME,NAME"
        )

    def web_url(self, port: int) -> str:
        """The dashboard's URL as a person opens it, on ``port``: at the first allowed
        name when it listens beyond loopback, else at its loopback address (never at
        0.0.0.0); ``https`` with TLS."""
        if self.web_allowed_hosts and self.web_beyond_loopback():
            host = self.web_allowed_hosts[0].strip()
        elif self.web_host.strip("[]") in ANY_ADDRESS:
            host = LOOPBACK_ADDRESS
        else:
            host = self.web_host
        return url_of(self.web_scheme, host, port)

    def proxy_spec(self) -> ProxySpec:
        """Sizes and qualities of a photo's (and a video poster's) proxies."""
        from safelight.library.render.images import ProxySpec

        return ProxySpec(
            thumbnail_width=self.thumbnail_width,
            thumbnail_quality=self.thumbnail_quality,
            preview_width=self.preview_width,
            preview_quality=self.preview_quality,
            decode_memory_mib=self.decode_memory_mib,
        )

    def file_modes(self) -> FileModes:
        """The modes of the home, the proxy root and what is written in them."""
        gid = None if self.read_group is None else grp.getgrnam(self.read_group).gr_gid
        return FileModes.of_process(gid)

    @property
    def proxies(self) -> Path:
        """The proxy root, resolved. By default ``<home>/proxies`` for the embedded
        database and ``<home>/proxies-<database>`` for a server's: a proxy root belongs
        to one database (``library.proxystore.proxyroot``), and one home may serve both."""
        if self.proxy_root is not None:
            return self.proxy_root.expanduser().resolve()
        from safelight.db.urls import database_key

        folder = (
            "proxies"
            if self.database_url is None
            else (f"proxies-{database_key(self.database_url)}")
        )
        return (self.home / folder).expanduser().resolve()

    @property
    def database_display(self) -> str:
        """The database as it may be printed or logged: never with its password."""
        from safelight.db.embedded import DATA_FOLDER
        from safelight.db.urls import mask_url

        if self.database_url is None:
            return f"embedded PostgreSQL in {self.home / DATA_FOLDER}"
        return mask_url(self.database_url)

    def __repr__(self) -> str:
        # The dataclass repr would print the database URL, password and all.
        from safelight.db.urls import mask_url

        shown = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        shown["database_url"] = None if self.database_url is None else mask_url(self.database_url)
        shown["web_token"] = None if self.web_token is None else "***"
        return "Settings(" + ", ".join(f"{k}={v!r}" for k, v in shown.items()) + ")"

    @classmethod
    def default(cls, name: str) -> Any:
        """The default of setting ``name`` (one with a fixed default), as help texts show it."""
        (found,) = (f for f in dataclasses.fields(cls) if f.name == name)
        if found.default is dataclasses.MISSING:
            raise ValueError(f"{name} has no fixed default")
        return found.default

    @classmethod
    def load(
        cls, overrides: Mapping[str, Any] | None = None, env: Mapping[str, str] | None = None
    ) -> Settings:
        """Build settings from flags (``overrides``; None values are ignored), then the
        environment, then the defaults."""
        env = os.environ if env is None else env
        values: dict[str, Any] = {}
        for f in dataclasses.fields(cls):
            raw: Any = None
            if overrides is not None and overrides.get(f.name) is not None:
                raw = overrides[f.name]
            elif (ENV_PREFIX + f.name.upper()) in env and env[ENV_PREFIX + f.name.upper()] != "":
                raw = env[ENV_PREFIX + f.name.upper()]
            if raw is None:
                continue
            values[f.name] = _convert(f.name, f.type, raw)
        if "decode_processes" not in values and "decode_memory_mib" in values:
            values["decode_processes"] = default_decode_processes(
                max(MIN_DECODE_MEMORY_MIB, values["decode_memory_mib"])
            )
        settings = cls(**values)
        if settings.faces:
            _check_faces_installed()
        check_folder("home", settings.home)
        if settings.proxy_root is not None:
            check_folder("proxy_root", settings.proxy_root)
        return settings


def _check_faces_installed() -> None:
    """With faces on, what finding them needs is installed: else one line that says how."""
    lacking = missing_for_faces()
    if lacking is not None:
        raise SettingsError(f"faces ({ENV_PREFIX}FACES) is on, but {lacking}")


def check_folder(name: str, path: Path) -> None:
    """Raise :class:`SettingsError` naming setting ``name`` unless ``path`` is a folder,
    or one that can be made: the nearest part of it that exists is a folder this process
    may write in. Only looks (safelight makes its folders when it first needs them)."""
    setting = f"{name} ({ENV_PREFIX}{name.upper()})"
    wanted = Path(os.path.abspath(path))
    existing = wanted
    while True:
        try:
            st = os.stat(existing)
        except (FileNotFoundError, NotADirectoryError):
            if existing.parent == existing:
                return
            existing = existing.parent
            continue
        except OSError:
            return  # cannot look (a folder it may not enter): the first use will say
        break
    if not stat.S_ISDIR(st.st_mode):
        if existing == wanted:
            raise SettingsError(f"{setting} must be a folder, and {wanted} is not one")
        raise SettingsError(f"{setting} {wanted} cannot be made: {existing} is not a folder")
    if existing != wanted and not os.access(existing, os.W_OK | os.X_OK):
        raise SettingsError(
            f"{setting} {wanted} cannot be made: this user may not make folders in {existing}"
        )


def make_folder(name: str, path: Path, modes: FileModes) -> None:
    """Make the folder of setting ``name`` (and its parents) if it is missing, private
    (``modes.home``: ADR 0043); an error (a file in the way, a read-only or virtual file
    system) is a :class:`SettingsError` naming the setting."""
    try:
        make_private_folder(path, modes.home, modes.gid)
    except OSError as error:
        reason = error.strerror or type(error).__name__
        raise SettingsError(
            f"{name} ({ENV_PREFIX}{name.upper()}) {path} cannot be made: {reason}"
        ) from None


def _check_read_group(name: str) -> None:
    """The read group exists and this process may give its files to it (root, or a
    member). The name is not repeated: it came from the command line or environment."""
    setting = f"read_group ({ENV_PREFIX}READ_GROUP)"
    try:
        gid = grp.getgrnam(name).gr_gid
    except KeyError:
        raise SettingsError(
            f"{setting} must name a group of this machine (getent group lists them), "
            "and no group has that name"
        ) from None
    if os.geteuid() != 0 and gid != os.getegid() and gid not in os.getgroups():
        raise SettingsError(
            f"{setting} must be a group this user is in, so that safelight may give its "
            "files to it: add the user to it (usermod -aG GROUP USER, then sign in again), "
            "or run as root"
        )


def _convert(name: str, annotation: Any, raw: Any) -> Any:
    kind = str(annotation)
    try:
        if kind == "tuple[str, ...]":
            # A list from a flag given more than once, or comma-separated text.
            items = str(raw).split(",") if isinstance(raw, str) else [str(item) for item in raw]
            return tuple(item.strip() for item in items if item.strip())
        if "Path" in kind:
            return Path(str(raw)).expanduser()
        if kind == "bool":
            if isinstance(raw, bool):
                return raw
            text = str(raw).strip().lower()
            if text in _TRUE:
                return True
            if text in _FALSE:
                return False
            raise ValueError
        if kind == "float":
            value = float(raw)
            if value != value or value in (float("inf"), float("-inf")):
                raise ValueError
            return value
        if kind in ("int", "int | None"):
            if isinstance(raw, float) and not raw.is_integer():
                raise ValueError
            return int(raw)
        return str(raw)
    except (TypeError, ValueError):
        env_name = ENV_PREFIX + name.upper()
        shown = "***" if name in ("database_url", "web_token") else repr(raw)
        expected = {"float": "a number", "bool": "true or false"}.get(kind, "a whole number")
        raise SettingsError(f"{name} ({env_name}) must be {expected}, not {shown}") from None


_TRUE = frozenset({"1", "true", "yes", "on"})
_FALSE = frozenset({"0", "false", "no", "off"})
