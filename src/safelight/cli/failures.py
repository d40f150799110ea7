"""Exit codes, and how an error a user can cause becomes one line on stderr.

Every failure leaves the CLI as ``safelight: error: <what went wrong>`` and an exit code
from the table below, never as a traceback: a traceback is for bugs, and even then it
goes to the log (at debug level), masked, rather than into the user's face.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import IO, Any

import click

from safelight.accounts.users import AccountError
from safelight.cli.exits import (
    ERROR_PREFIX,
    EXIT_DATABASE,
    EXIT_INTERNAL,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_USAGE,
    EXIT_WORK_FAILED,
    INTERRUPTED,
    INTERRUPTED_LINE,
)
from safelight.db.database import DatabaseUnavailable
from safelight.db.embedded import EmbeddedDatabaseError
from safelight.db.migrate import ChangedMigrationError, NewerSchemaError
from safelight.library.catalogue.configs import ConfigError
from safelight.library.catalogue.people import PeopleError
from safelight.library.files.roots import RootOverlap
from safelight.library.proxystore.proxyroot import ProxyRootTaken
from safelight.logs import masker
from safelight.settings import SettingsError
from safelight.terminal import first_line, printable, text_lines
from safelight.work.errors import InvalidWorkItem

_log = logging.getLogger(__name__)

__all__ = [
    "EXIT_DATABASE",
    "EXIT_INTERNAL",
    "EXIT_INTERRUPTED",
    "EXIT_OK",
    "EXIT_USAGE",
    "EXIT_WORK_FAILED",
    "USER_ERRORS",
    "Failure",
    "from_usage_error",
    "one_line",
    "translate",
]


class Failure(click.ClickException):
    """An error to report as one line, with its exit code."""

    def __init__(self, message: str, exit_code: int = EXIT_USAGE) -> None:
        super().__init__(message)
        # click declares exit_code on the class; each Failure carries its own.
        self.exit_code = exit_code  # type: ignore[misc]

    def format_message(self) -> str:
        # An error can quote a file name or a library's message: escaped for the terminal.
        return printable(masker.mask(one_line(self.message)))

    def show(self, file: IO[Any] | None = None) -> None:
        # Masked once more on the way out: a message can quote a connection string.
        click.echo(f"{ERROR_PREFIX}{self.format_message()}", file=file, err=file is None)


class Interrupted(Failure):
    """A Ctrl-C before the command could say anything else: ``safelight: interrupted``."""

    def __init__(self) -> None:
        super().__init__(INTERRUPTED, EXIT_INTERRUPTED)

    def show(self, file: IO[Any] | None = None) -> None:
        click.echo(INTERRUPTED_LINE, file=file, err=file is None)


def one_line(text: str) -> str:
    """The first line of ``text``, marked when more followed (a library's error can carry
    a whole command output; the log has it, the user gets one line)."""
    lines = [line.strip() for line in text_lines(text) if line.strip()]
    if not lines:
        return ""
    return lines[0] if len(lines) == 1 else f"{lines[0]} …"


def from_usage_error(error: click.UsageError) -> Failure:
    """click's usage errors in the same one-line form, with a pointer to the help."""
    where = error.ctx.command_path if error.ctx is not None else "safelight"
    message = error.format_message().rstrip(".")
    return Failure(f"{message} (see '{where} --help')", EXIT_USAGE)


# The errors a user can cause, by what they mean: the exception type and its exit code.
USER_ERRORS: Mapping[type[BaseException], int] = {
    SettingsError: EXIT_USAGE,
    ConfigError: EXIT_USAGE,
    AccountError: EXIT_USAGE,
    RootOverlap: EXIT_USAGE,
    ProxyRootTaken: EXIT_USAGE,
    InvalidWorkItem: EXIT_USAGE,
    # An unknown person or face, a merge across configs, a bad name (ADR 0068).
    PeopleError: EXIT_USAGE,
    DatabaseUnavailable: EXIT_DATABASE,
    EmbeddedDatabaseError: EXIT_DATABASE,
    # Pointed at a database a newer release migrated: the installation or the URL is the
    # thing to fix, as with a bad setting; retrying (3) would never help.
    NewerSchemaError: EXIT_USAGE,
    # A migration file differs from what the database applied: the installed release is
    # not the one it claims to be (or a developer edited an applied migration). Not the
    # user's input, so not 2; said as the clear line, not as "internal error".
    ChangedMigrationError: EXIT_INTERNAL,
}


def translate(error: BaseException) -> click.ClickException:
    """The one-line failure for any exception that escaped a command."""
    if isinstance(error, Failure):
        return error
    if isinstance(error, click.UsageError):
        return from_usage_error(error)
    if isinstance(error, click.ClickException):
        return Failure(error.format_message(), error.exit_code)
    if isinstance(error, KeyboardInterrupt):
        return Interrupted()
    for kind, code in USER_ERRORS.items():
        if isinstance(error, kind):
            return Failure(str(error), code)
    # A bug. The traceback goes to the log (masked by its handler); the user gets a line.
    _log.debug("internal error", exc_info=error)
    first = first_line(str(error))
    detail = f"{type(error).__name__}: {first}" if first else type(error).__name__
    return Failure(
        f"internal error ({detail}); run with --log-level debug for the traceback",
        EXIT_INTERNAL,
    )
