"""The ``safelight`` command: its group of global options and its subcommands.

Light on purpose (ADR 0063): this module imports neither the engine nor psycopg, Pillow
or NumPy, so that ``--version`` and ``--help`` answer at once. Each subcommand is a row
of ``COMMANDS``, its module imported only when that command runs (or shows its own
help); the group's help lists them by the summary their row holds.
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import click

from safelight import __version__
from safelight.cli.exits import EXIT_CODES_HELP
from safelight.logs import LOG_FORMATS, LOG_LEVELS
from safelight.settings import ENV_PREFIX, Settings

# Every subcommand: its name, where it lives ("module:attribute", imported on use) and
# the summary `safelight --help` lists, which is the first sentence of its own help
# (tests/unit/test_cli_commands.py holds the two together). A new command is one row.
COMMANDS: dict[str, tuple[str, str]] = {
    "assets": (
        "safelight.cli.assets:assets",
        "List the live assets crawls found, with --deleted those whose file went, with "
        "--duplicates the files folded into an asset because they hold the same bytes, with "
        "--failed the files crawls could not ingest, by reason, or with --changed the "
        "originals the scrub found changed under the same size and time.",
    ),
    "cancel": (
        "safelight.cli.queue:cancel",
        "Cancel a work item: a queued one at once, a running one as its Worker hears.",
    ),
    "config": (
        "safelight.cli.admin:config_group",
        "Storage configs: the folders of originals that Workers serve.",
    ),
    "db": ("safelight.cli.admin:db_group", "The database: its schema, its backups."),
    "demo": (
        "safelight.cli.run:demo",
        "Make a small demo library (once) and run on it: generated photos from several "
        "cameras, a burst, a Live Photo pair, a video and a broken file, to see the whole "
        "job, and how failures are reported, before pointing safelight at your own photos.",
    ),
    "enqueue": (
        "safelight.cli.queue:enqueue",
        "Queue a work item of KIND and print its id (as the last line).",
    ),
    "health": (
        "safelight.cli.health:health",
        "Check that the work gets done: the database answers, no lease is overdue past "
        "lease recovery, a Worker was seen recently.",
    ),
    "items": (
        "safelight.cli.queue:items",
        "List work items, newest first; 'items show ID' shows one with its attempts.",
    ),
    "pause": (
        "safelight.cli.pausing:pause",
        "Pause a kind (``pause crawl``) or a config's work, across all Workers.",
    ),
    "people": (
        "safelight.cli.people:people_group",
        "The people found in the photos: list, show, name, merge and split them.",
    ),
    "proxies": (
        "safelight.cli.proxies:proxies_group",
        "The proxies (thumbnails, previews, BlurHashes, web videos) of a config.",
    ),
    "purge": (
        "safelight.cli.assets:purge",
        "Queue a purge of CONFIG: delete its soft-deleted assets' proxies and rows.",
    ),
    "resume": (
        "safelight.cli.pausing:resume",
        "Resume a paused kind, a config's work, or everything paused (``--all``).",
    ),
    "run": (
        "safelight.cli.run:run",
        "Crawl the folder PATH: index every photo and video, make proxies, find bursts and "
        "Live Photos, and print a summary.",
    ),
    "serve": (
        "safelight.cli.serve:serve",
        "Serve the web dashboard: On this day, the queue (live), the configs, and a JSON API.",
    ),
    "status": (
        "safelight.cli.queue:status",
        "The queue at a glance: counts by status and kind, running items per config with "
        "their Worker and lease expiry, stalls, retries waiting for their time, and the "
        "last failures.",
    ),
    "user": (
        "safelight.cli.users:user_group",
        "Accounts of the dashboard: who may sign in, and what they see.",
    ),
    "worker": (
        "safelight.cli.queue:worker",
        "Run Workers: claim work, run it, recover expired leases, schedule periodic work.",
    ),
}


def load_command(name: str) -> click.Command:
    """The command of row ``name`` of ``COMMANDS``, its module imported now."""
    module, _, attribute = COMMANDS[name][0].partition(":")
    command = getattr(importlib.import_module(module), attribute)
    if not isinstance(command, click.Command):
        raise TypeError(f"{COMMANDS[name][0]} is not a click command")
    return command


def _env_and_default(name: str) -> str:
    """A setting's variable and default as its option's help shows them."""
    return f"[env {ENV_PREFIX}{name.upper()}; {Settings.default(name):g}]"


class SafelightGroup(click.Group):
    """A group whose every failure, from parsing to the last query, leaves as one line
    (``safelight: error: ...``) with the documented exit code, never as a traceback; its
    subcommands are the rows of ``COMMANDS``, each imported when it is used."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*COMMANDS, *self.commands})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands and cmd_name in COMMANDS:
            self.add_command(load_command(cmd_name), cmd_name)
        return self.commands.get(cmd_name)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        # The summaries of the table: listing the commands imports none of them.
        names = self.list_commands(ctx)
        if not names:
            return
        limit = formatter.width - 6 - max(len(name) for name in names)
        rows = []
        for name in names:
            if name in COMMANDS:
                # click shortens it as it would the command's own help.
                summary = click.Command(name, help=COMMANDS[name][1]).get_short_help_str(limit)
            else:
                summary = self.commands[name].get_short_help_str(limit)
            rows.append((name, summary))
        with formatter.section("Commands"):
            formatter.write_dl(rows)

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
            from safelight.cli.failures import from_usage_error

            raise from_usage_error(error) from None
        except KeyboardInterrupt as error:
            from safelight.cli.failures import translate

            # Else click prints an empty line and "Aborted!", and exits 1.
            raise translate(error) from None

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except (click.exceptions.Exit, click.Abort):
            raise
        except (Exception, KeyboardInterrupt) as error:
            from safelight.cli.failures import translate

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
    from safelight.cli.state import CliState  # the database's modules: not for --help

    ctx.obj = CliState(overrides=overrides, log_level=log_level)


def main(argv: Sequence[str] | None = None) -> None:
    """The console script: exits with the command's code."""
    cli.main(args=None if argv is None else list(argv), prog_name="safelight")
