"""What every command shares: the settings (built once, from the group's flags, the
environment and the defaults), logging, and the database for the length of a command."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

import click
import psycopg

from safelight.appdb import open_app_database, open_when_ready
from safelight.core.clock import Clock, SystemClock
from safelight.core.openfiles import raise_open_files_limit
from safelight.db.availability import is_connection_lost
from safelight.db.database import Database, DatabaseUnavailable, resolve_url
from safelight.db.urls import mask_url
from safelight.logs import configure_logging, secrets_of_url
from safelight.settings import Settings, make_folder
from safelight.terminal import first_line

T = TypeVar("T")


@dataclass
class CliState:
    """The group's options, and the settings built from them on first use.

    Settings are built lazily, by the command that needs them, so ``safelight items
    --help`` works even when an environment variable holds a value safelight cannot use.
    """

    overrides: Mapping[str, Any]
    log_level: str | None = None
    clock: Clock = field(default_factory=SystemClock)
    _settings: Settings | None = None
    _made_private: bool = False

    def settings(self, *, default_log_level: str = "warning") -> Settings:
        """The validated settings; logging is set up on the first call. Raises
        :class:`~safelight.settings.SettingsError` naming the setting."""
        if self._settings is None:
            settings = Settings.load(self.overrides)
            configure_logging(
                settings.log_format,
                (self.log_level or default_log_level).lower(),
                secrets=secrets_of_url(settings.database_url),
            )
            self._settings = settings
        return self._settings

    def with_database(
        self,
        body: Callable[[Database, Settings], Awaitable[T]],
        *,
        default_log_level: str = "warning",
        concurrency: int = 1,
        run_migrations: bool = True,
        wait_until_ready: bool = False,
        long_running: bool = False,
    ) -> T:
        """Run ``body`` on an open, migrated database in a fresh event loop, and close it.

        ``concurrency``: the Workers this command runs, which size the pool.
        ``run_migrations`` false: only check that the database's migrations are this
        release's (``db migrate`` migrates in its body, to report what it applied).
        Every command opens its database here, so they all fail the same way: one line,
        within the connect timeout. ``wait_until_ready`` (``safelight worker``): a
        database that is still starting is waited for instead (``appdb.open_when_ready``).
        ``long_running``: a command that serves or works for long (``worker``, ``run``,
        ``serve``) first raises its open files limit to the hard one (``core.openfiles``),
        and makes the home and the proxy root private once the database is open, if an
        earlier release left them open (``ondisk``; once per process).
        """
        settings = self.settings(default_log_level=default_log_level)
        if long_running:
            raise_open_files_limit()
        if settings.database_url is None:
            make_folder("home", settings.home, settings.file_modes())
        # Before the event loop, so that a Ctrl-C during the embedded server's first
        # initdb stops it at once (db.database.resolve_url).
        resolved = resolve_url(settings.database_url, settings.home)

        async def open_once() -> Database:
            return await open_app_database(
                settings,
                concurrency=concurrency,
                run_migrations=run_migrations,
                resolved=resolved,
            )

        async def main() -> T:
            if wait_until_ready:
                database = await open_when_ready(open_once, settings, self.clock)
            else:
                database = await open_once()
            try:
                if long_running and not self._made_private:
                    # The proxy root's guards import the handlers: only for these commands.
                    from safelight.ondisk import make_private

                    await make_private(database, settings)
                    self._made_private = True
                return await body(database, settings)
            except psycopg.Error as exc:
                if not is_connection_lost(exc):
                    raise
                # The database went away during the command: that (exit 3), not a bug.
                raise DatabaseUnavailable(
                    f"lost the database at {database.display}: {mask_url(first_line(str(exc)))}"
                ) from None
            finally:
                await database.close()

        return asyncio.run(main())


pass_state = click.make_pass_decorator(CliState)
