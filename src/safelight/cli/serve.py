"""``safelight serve``: the web dashboard (``safelight.web``, ADR 0031), and how to get in
(ADR 0045): with no user yet, a one-time link that makes whoever opens it the admin."""

from __future__ import annotations

from datetime import date, datetime
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
from safelight.web.welcome import WelcomeLink, link_for


@click.command("serve")
@click.option(
    "--host",
    metavar="ADDRESS",
    default=None,
    help="Listen on this address [env SAFELIGHT_WEB_HOST; default 127.0.0.1: this machine "
    "only]. 0.0.0.0 or :: opens it to the network.",
)
@click.option(
    "--port",
    type=click.IntRange(0, 65535),
    default=None,
    help="Listen on this port, 0 for any free one [env SAFELIGHT_WEB_PORT; default 8470].",
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
    state: CliState, host: str | None, port: int | None, read_only: bool, day: datetime | None
) -> None:
    """Serve the web dashboard: On this day, the queue (live), the configs, and a JSON API.

    Everything needs a signed-in user; a user sees and acts on their own configs, an
    admin on all (safelight user add NAME makes one). With no user yet, prints a one-time
    link that makes whoever opens it the admin, named after the system user running
    this (SAFELIGHT_WEB_TOKEN, when set, is that link's token). Runs until Ctrl-C or
    SIGTERM.
    """
    state.overrides = {**state.overrides, "web_host": host, "web_port": port}
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
            server = WebServer(app, settings.web_host, settings.web_port, settings.web_limits())
        except OSError as error:
            raise Failure(
                f"cannot listen on {settings.web_host} port {settings.web_port}: "
                f"{error.strerror or error}"
            ) from None
        with server.stopped_by_signals():
            announce(
                server.url,
                link,
                read_only=read_only,
                given=settings.web_token is not None,
                next_path=next_path,
            )
            await server.serve()

    state.with_database(body, default_log_level="info", long_running=True)


def on_this_day_path(day: date | None) -> str:
    """The path of On this day on ``day`` (None: today)."""
    return "/" if day is None else f"/?date={day.isoformat()}"


def announce(
    url: str, link: WelcomeLink | None, *, read_only: bool, given: bool, next_path: str
) -> None:
    """The first line is the ready signal: the socket listens from here on. Then the one
    way in this server offers now (printed on stdout only, once; never logged)."""
    click.echo(f"safelight serve: {url} (Ctrl-C stops)")
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
