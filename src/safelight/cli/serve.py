"""``safelight serve``: the web dashboard (``safelight.web``, ADR 0031)."""

from __future__ import annotations

import click

from safelight.cli.failures import Failure
from safelight.cli.state import CliState, pass_state
from safelight.db.database import Database
from safelight.settings import Settings
from safelight.web.app import create_app
from safelight.web.server import WebServer


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
@pass_state
def serve(state: CliState, host: str | None, port: int | None, read_only: bool) -> None:
    """Serve the web dashboard: On this day, the queue (live), the configs, and a JSON API.

    Everything needs a signed-in user (safelight user add NAME); a user sees and acts on
    their own configs, an admin on all. Runs until Ctrl-C or SIGTERM.
    """
    state.overrides = {**state.overrides, "web_host": host, "web_port": port}

    async def body(database: Database, settings: Settings) -> None:
        app = create_app(database, settings, clock=state.clock, read_only=read_only)
        try:
            server = WebServer(app, settings.web_host, settings.web_port, settings.web_limits())
        except OSError as error:
            raise Failure(
                f"cannot listen on {settings.web_host} port {settings.web_port}: "
                f"{error.strerror or error}"
            ) from None
        with server.stopped_by_signals():
            announce(server.url, read_only=read_only)
            await server.serve()

    state.with_database(body, default_log_level="info", long_running=True)


def announce(url: str, *, read_only: bool) -> None:
    """The first line is the ready signal: the socket listens from here on."""
    click.echo(f"safelight serve: {url} (Ctrl-C stops)")
    if read_only:
        click.echo("read-only: started with --read-only, nobody can act")
    else:
        click.echo(f"sign in at {url}login as a user of safelight user add")
