"""``safelight serve``: the web dashboard (``safelight.web``, ADR 0031), on the home
network (ADR 0042), and how to get in (ADR 0045): with no user yet, a one-time link
that makes whoever opens it the admin."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from datetime import date, datetime
from pathlib import Path
from urllib.parse import quote

import click

from safelight.accounts.store import Accounts
from safelight.cli.admin import os_user
from safelight.cli.failures import Failure
from safelight.cli.state import CliState, pass_state
from safelight.db.database import Database
from safelight.logs import masker
from safelight.settings import Settings
from safelight.terminal import printable
from safelight.web.app import create_app
from safelight.web.server import WebServer
from safelight.web.tls import key_readable_by_others, server_context
from safelight.web.welcome import WelcomeLink, link_for

_log = logging.getLogger(__name__)


@click.command("serve")
@click.option(
    "--host",
    metavar="ADDRESS",
    default=None,
    help="Listen on this address [env SAFELIGHT_WEB_HOST; default 127.0.0.1: this machine "
    "only]. 0.0.0.0 or :: opens it to the network, with --allow-host.",
)
@click.option(
    "--port",
    type=click.IntRange(0, 65535),
    default=None,
    help="Listen on this port, 0 for any free one [env SAFELIGHT_WEB_PORT; default 8470].",
)
@click.option(
    "--allow-host",
    "allow_hosts",
    metavar="NAME",
    multiple=True,
    help="A name the dashboard answers to beyond this machine, as browsers will open it "
    "(nas.local, 192.168.1.5); repeatable, the first is the printed URL's; needed with a "
    "--host other than loopback [env SAFELIGHT_WEB_ALLOWED_HOSTS, comma-separated].",
)
@click.option(
    "--tls-cert",
    metavar="FILE",
    type=click.Path(path_type=Path, dir_okay=False),
    default=None,
    help="Serve HTTPS with this PEM certificate (chain), with --tls-key "
    "[env SAFELIGHT_WEB_TLS_CERT].",
)
@click.option(
    "--tls-key",
    metavar="FILE",
    type=click.Path(path_type=Path, dir_okay=False),
    default=None,
    help="The certificate's unencrypted private key [env SAFELIGHT_WEB_TLS_KEY].",
)
@click.option(
    "--behind-proxy",
    "behind_proxies",
    metavar="ADDRESS",
    multiple=True,
    help="The address (or network) of a reverse proxy whose X-Forwarded-Proto and "
    "X-Forwarded-For are believed; repeatable [env SAFELIGHT_WEB_BEHIND_PROXY, "
    "comma-separated]. The proxy must pass the Host it was sent.",
)
@click.option(
    "--read-only",
    is_flag=True,
    help="Nobody can cancel, retry or queue anything from the dashboard; users still sign in "
    "to read.",
)
@click.option(
    "--day",
    type=click.DateTime(formats=["%Y-%m-%d"]),
    default=None,
    metavar="YYYY-MM-DD",
    help="The links this prints open On this day on this day (safelight demo gives its "
    "busiest); default today.",
)
@pass_state
def serve(
    state: CliState,
    host: str | None,
    port: int | None,
    allow_hosts: tuple[str, ...],
    tls_cert: Path | None,
    tls_key: Path | None,
    behind_proxies: tuple[str, ...],
    read_only: bool,
    day: datetime | None,
) -> None:
    """Serve the web dashboard: On this day, the queue (live), the configs, and a JSON API.

    Everything needs a signed-in user; a user sees and acts on their own configs, an
    admin on all (safelight user add NAME makes one). With no user yet, prints a one-time
    link that makes whoever opens it the admin, named after the system user running
    this (SAFELIGHT_WEB_TOKEN, when set, is that link's token). Runs until Ctrl-C or
    SIGTERM. On the home network: --host 0.0.0.0 --allow-host nas.local, and
    --tls-cert/--tls-key or --behind-proxy (docs/web.md).
    """
    state.overrides = {
        **state.overrides,
        "web_host": host,
        "web_port": port,
        "web_allowed_hosts": allow_hosts or None,
        "web_tls_cert": tls_cert,
        "web_tls_key": tls_key,
        "web_behind_proxy": behind_proxies or None,
    }
    # Before the database opens: a setting that cannot serve is one line at once.
    checked = state.settings(default_log_level="info")
    checked.check_web_reach()
    tls = server_context(checked)
    next_path = on_this_day_path(None if day is None else day.date())

    async def body(database: Database, settings: Settings) -> None:
        link = await link_for(
            Accounts(database.pool, state.clock),
            admin=os_user(),
            given_token=settings.web_token,
            next_path=next_path,
        )
        if link is not None:
            masker.add(link.token)  # never in a log line
        app = create_app(database, settings, clock=state.clock, read_only=read_only, welcome=link)
        try:
            server = WebServer(
                app,
                settings.web_host,
                settings.web_port,
                settings.web_limits(),
                tls=tls,
                trusted_proxies=settings.web_behind_proxy,
            )
        except OSError as error:
            raise Failure(
                f"cannot listen on {settings.web_host} port {settings.web_port}: "
                f"{error.strerror or error}"
            ) from None
        url = settings.web_url(server.port)
        with server.stopped_by_signals():
            announce(
                url,
                link,
                read_only=read_only,
                given=settings.web_token is not None,
                next_path=next_path,
                warnings=reach_warnings(settings, server.port),
            )
            await server.serve()

    state.with_database(body, default_log_level="info", long_running=True)


def reach_warnings(settings: Settings, port: int) -> list[str]:
    """What an operator must know of how far the dashboard reaches, one line each."""
    found = []
    if settings.web_beyond_loopback():
        names = ", ".join(settings.web_allowed_hosts)
        reach = (
            f"the dashboard listens on {settings.web_host} port {port}, beyond "
            f"this machine: every machine that can reach it may open its pages at {names}"
        )
        if settings.web_tls_cert is None and not settings.web_behind_proxy:
            reach += (
                "; without TLS, passwords cannot be used from other machines: give "
                "--tls-cert and --tls-key, or --behind-proxy ADDRESS of a reverse proxy "
                "serving HTTPS (docs/web.md)"
            )
        found.append(reach)
    if key_readable_by_others(settings):
        found.append(
            f"the TLS key {settings.web_tls_key} is readable by every user of this machine: "
            "make it readable by its owner only (chmod 600)"
        )
    return [printable(line) for line in found]


def on_this_day_path(day: date | None) -> str:
    """The path of On this day on ``day`` (None: today)."""
    return "/" if day is None else f"/?date={day.isoformat()}"


def announce(
    url: str,
    link: WelcomeLink | None,
    *,
    read_only: bool,
    given: bool,
    next_path: str,
    warnings: Sequence[str] = (),
) -> None:
    """The first line is the ready signal: the socket listens from here on. Each
    warning goes to stderr, as a Worker's of its metrics port do, and to the log once
    (where a service's output is kept). Then the one way in this server offers now
    (printed on stdout only, once; never logged)."""
    click.echo(f"safelight serve: {url} (Ctrl-C stops)")
    for warning in warnings:
        click.echo(f"warning: {warning}", err=True)
        _log.warning("%s", warning)
    if read_only:
        click.echo("read-only: started with --read-only, nobody can act")
    if link is None:
        login = url + "login" + ("" if next_path == "/" else f"?next={quote(next_path, safe='/')}")
        click.echo(f"sign in at {login} (`safelight user add NAME` makes an account)")
    elif link.existing:
        click.echo(
            printable(
                f"sign in as {link.admin}, who has no password yet (this link works once): "
                f"{url}welcome#token={link.token}"
            )
        )
        click.echo(f"then set a password at {url}account to sign in from other devices")
    elif given:
        click.echo(
            printable(
                f"no user yet: open {url}welcome and give SAFELIGHT_WEB_TOKEN to become the "
                f"admin, {link.admin} (once)"
            )
        )
    else:
        click.echo(
            printable(
                f"no user yet: this link makes you the admin, {link.admin} (it works once): "
                f"{url}welcome#token={link.token}"
            )
        )
