"""The ``safelight`` command: its group of global options and its subcommands."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import click

from safelight import __version__
from safelight.cli import admin, assets, health, pausing, queue, run, serve, users
from safelight.cli.failures import EXIT_CODES_HELP, from_usage_error, translate
from safelight.cli.state import CliState
from safelight.logs import LOG_FORMATS, LOG_LEVELS
from safelight.settings import ENV_PREFIX, Settings


def _env_and_default(name: str) -> str:
    """A setting's variable and default as its option's help shows them."""
    return f"[env {ENV_PREFIX}{name.upper()}; {Settings.default(name):g}]"


class SafelightGroup(click.Group):
    """A group whose every failure, from parsing to the last query, leaves as one line
    (``safelight: error: ...``) with the documented exit code, never as a traceback."""

    def make_context(
        self,
        info_name: str | None,
        args: list[str],
        parent: click.Context | None = None,
        **extra: Any,
    ) -> click.Context:
        try:
            return super().make_context(info_name, args, parent, **extra)
        except click.UsageError as error:
            raise from_usage_error(error) from None
        except KeyboardInterrupt as error:
            # Else click prints an empty line and "Aborted!", and exits 1.
            raise translate(error) from None

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except (click.exceptions.Exit, click.Abort):
            raise
        except (Exception, KeyboardInterrupt) as error:
            raise translate(error) from None


@click.group(
    "safelight",
    cls=SafelightGroup,
    epilog=EXIT_CODES_HELP,
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
)
@click.version_option(__version__, prog_name="safelight")
@click.option(
    "--database-url",
    metavar="URL",
    default=None,
    help="PostgreSQL to use [env SAFELIGHT_DATABASE_URL]; without one, an embedded "
    "PostgreSQL in HOME. Prefer the environment: a flag is visible to other users.",
)
@click.option(
    "--home",
    type=click.Path(path_type=Path, file_okay=False),
    default=None,
    help="safelight's own folder: embedded database, proxies, demo library "
    "[env SAFELIGHT_HOME; default ~/.local/share/safelight, for root /var/lib/safelight].",
)
@click.option(
    "--proxy-root",
    type=click.Path(path_type=Path, file_okay=False),
    default=None,
    help="Where proxies are written [env SAFELIGHT_PROXY_ROOT; default HOME/proxies].",
)
@click.option(
    "--read-group",
    metavar="GROUP",
    default=None,
    help="A group that may read the home and the proxies (a web server's): folders 0750, "
    "files 0640 [env SAFELIGHT_READ_GROUP; default none: 0700, 0600].",
)
@click.option(
    "--log-format",
    type=click.Choice(LOG_FORMATS),
    default=None,
    help="Log lines on stderr: text, or JSON lines [env SAFELIGHT_LOG_FORMAT; default text].",
)
@click.option(
    "--log-level",
    type=click.Choice(LOG_LEVELS, case_sensitive=False),
    envvar="SAFELIGHT_LOG_LEVEL",
    default=None,
    help="Least severe log lines shown [env SAFELIGHT_LOG_LEVEL; default info for "
    "'worker', warning otherwise].",
)
@click.option(
    "--lease-seconds",
    type=float,
    default=None,
    help=f"How long a claim holds without a heartbeat {_env_and_default('lease_seconds')}.",
)
@click.option(
    "--heartbeat-seconds",
    type=float,
    default=None,
    help=f"Heartbeat interval, at most a quarter lease {_env_and_default('heartbeat_seconds')}.",
)
@click.option(
    "--poll-seconds",
    type=float,
    default=None,
    help=f"Idle poll, the safety net under NOTIFY {_env_and_default('poll_seconds')}.",
)
@click.option(
    "--max-stalls",
    type=int,
    default=None,
    help=f"Expired leases before an item fails as stalled {_env_and_default('max_stalls')}.",
)
@click.option(
    "--max-concurrent-files",
    type=int,
    default=None,
    help=f"Files one crawl works on at once {_env_and_default('max_concurrent_files')}.",
)
@click.option(
    "--decode-processes",
    type=int,
    default=None,
    help="Processes that decode photos, shared by a process's Workers; 0: in threads "
    "[env SAFELIGHT_DECODE_PROCESSES; one per core].",
)
@click.pass_context
def cli(
    ctx: click.Context,
    /,
    log_level: str | None,
    **overrides: Any,
) -> None:
    """safelight: the background worker of a self-hosted photo library.

    \b
    First steps:
      safelight demo             crawl a generated demo library
      safelight run ~/Pictures   crawl your own photos: index, proxies, bursts, Live Photos
      safelight serve            see them: On this day, the queue, in a browser

    Every setting comes from its flag, else its SAFELIGHT_* environment variable, else
    its default. A database password is never printed or logged.
    """
    ctx.obj = CliState(overrides=overrides, log_level=log_level)


cli.add_command(run.run)
cli.add_command(run.demo)
cli.add_command(admin.db_group)
cli.add_command(admin.config_group)
cli.add_command(users.user_group)
cli.add_command(queue.enqueue)
cli.add_command(queue.worker)
cli.add_command(queue.items)
cli.add_command(queue.cancel)
cli.add_command(queue.status)
cli.add_command(health.health)
cli.add_command(assets.assets)
cli.add_command(assets.purge)
cli.add_command(serve.serve)
# Pause and resume (ADR 0060).
cli.add_command(pausing.pause)
cli.add_command(pausing.resume)


def main(argv: Sequence[str] | None = None) -> None:
    """The console script: exits with the command's code."""
    cli.main(args=None if argv is None else list(argv), prog_name="safelight")
