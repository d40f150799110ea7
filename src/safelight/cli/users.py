"""``safelight user add|list|passwd|remove|token``: the accounts of the dashboard.

A password is read from a prompt that does not echo (typed twice), or from stdin with
``--password-stdin`` for scripts; never from an argument, which other users of the
machine can read in the process list. A personal token is printed once, alone on its
line of stdout; nothing else this module writes, and no log record, holds a password
or a token (both are also taught to the log masker, in case a library quotes one).
"""

from __future__ import annotations

import sys
from datetime import datetime
from typing import Any

import click

from safelight.accounts.passwords import MAX_PASSWORD_LENGTH, password_problem
from safelight.accounts.store import (
    DEFAULT_TOKEN_DAYS,
    MAX_TOKEN_DAYS,
    NAME_TAKEN,
    UNKNOWN_USER,
    Accounts,
    TokenSummary,
)
from safelight.accounts.users import AccountError, User, user_name_problem
from safelight.cli.admin import json_option
from safelight.cli.exits import EXIT_USAGE, EXIT_WORK_FAILED
from safelight.cli.failures import Failure
from safelight.cli.output import console, print_json, table
from safelight.cli.state import CliState, pass_state
from safelight.db.database import Database
from safelight.library.catalogue.configs import StorageConfigs
from safelight.logs import masker
from safelight.settings import Settings
from safelight.terminal import printable
from safelight.words import plural


def _user_name(_ctx: click.Context, _param: click.Parameter, value: str) -> str:
    """A NAME argument's callback: a user's name is an owner's name; refused before any
    password is asked for (a usage error, 2)."""
    if (problem := user_name_problem(value)) is not None:
        raise click.BadParameter(problem)
    return value


name_argument = click.argument("name", callback=_user_name)
password_stdin_option = click.option(
    "--password-stdin",
    is_flag=True,
    help="Read the password from stdin (one line) instead of asking for it twice.",
)


def _shown(name: str) -> str:
    return f"'{printable(name)}'"


def _read_password(name: str, from_stdin: bool) -> str:
    """The new password of ``name``: from stdin, or typed twice without echo. Refused
    with the reason (exit 2) when it is too weak; never repeated back."""
    if from_stdin:
        # Bounded: anything past the longest password is refused as too long anyway.
        text = sys.stdin.read(MAX_PASSWORD_LENGTH * 4 + 3)
        password = text.removesuffix("\n").removesuffix("\r")
        if "\n" in password or "\r" in password:
            raise Failure("--password-stdin reads one line: the password, with no other line")
    else:
        try:
            password = str(
                click.prompt(
                    f"New password of {_shown(name)}",
                    hide_input=True,
                    confirmation_prompt="Type it again",
                    prompt_suffix=": ",
                    err=True,
                )
            )
        except click.Abort:
            raise Failure("no password was given", EXIT_USAGE) from None
    masker.add(password)
    if (problem := password_problem(name, password)) is not None:
        raise Failure(f"password refused: {problem}", EXIT_USAGE)
    return password


@click.group("user")
def user_group() -> None:
    """Accounts of the dashboard: who may sign in, and what they see.

    A user's name is a storage config owner's name (config add --user NAME): the user
    sees that owner's configs; an admin sees and acts on every config.
    """


@user_group.command("add")
@name_argument
@click.option("--admin", is_flag=True, help="May see and act on every owner's configs.")
@password_stdin_option
@pass_state
def user_add(state: CliState, name: str, admin: bool, password_stdin: bool) -> None:
    """Add the user NAME with a password (asked for twice, or read from stdin)."""

    async def body(database: Database, settings: Settings) -> tuple[User, int]:
        accounts = Accounts(database.pool, state.clock)
        if await accounts.get(name) is not None:  # said before a password is asked for
            raise AccountError(NAME_TAKEN)
        password = _read_password(name, password_stdin)
        user = await accounts.add(name, password=password, admin=admin)
        owned = await StorageConfigs(database.pool, state.clock).list_configs(owner=name)
        return user, len(owned)

    user, owned = state.with_database(body)
    sees = (
        "sees every storage config (admin)"
        if user.is_admin
        else f"sees the storage configs of owner {_shown(user.name)} ({owned} now)"
    )
    click.echo(f"added user {_shown(user.name)}: {sees}")


@user_group.command("list")
@json_option()
@pass_state
def user_list(state: CliState, as_json: bool) -> None:
    """List the users: admin or not, whether they have a password, their tokens."""

    async def body(
        database: Database, settings: Settings
    ) -> tuple[list[User], dict[str, TokenSummary]]:
        accounts = Accounts(database.pool, state.clock)
        return await accounts.list(), await accounts.token_summaries()

    users, tokens = state.with_database(body)
    none = TokenSummary(0, None)
    if as_json:
        print_json([_document(u, tokens.get(u.name, none)) for u in users])
        return
    console().print(
        table(
            "users",
            ("name", "admin", "password", "created", "tokens", "token last used"),
            (
                (
                    u.name,
                    u.is_admin,
                    u.has_password,
                    u.created_at,
                    tokens.get(u.name, none).tokens,
                    tokens.get(u.name, none).last_used_at,
                )
                for u in users
            ),
            empty="none yet; add one with 'safelight user add NAME --admin'",
        )
    )


def _document(user: User, tokens: TokenSummary) -> dict[str, Any]:
    last: datetime | None = tokens.last_used_at
    return {
        "name": user.name,
        "admin": user.is_admin,
        "has_password": user.has_password,
        "created_at": user.created_at,
        "tokens": tokens.tokens,
        "token_last_used_at": last,
    }


@user_group.command("passwd")
@name_argument
@password_stdin_option
@pass_state
def user_passwd(state: CliState, name: str, password_stdin: bool) -> None:
    """Set a new password for NAME; every browser signed in as NAME is signed out.

    Personal tokens stay valid: 'safelight user token NAME --revoke' ends them.
    """

    async def body(database: Database, settings: Settings) -> None:
        accounts = Accounts(database.pool, state.clock)
        if await accounts.get(name) is None:  # said before a password is asked for
            raise AccountError(UNKNOWN_USER)
        await accounts.set_password(name, _read_password(name, password_stdin))

    state.with_database(body)
    click.echo(f"changed the password of {_shown(name)}; their browsers are signed out")


@user_group.command("remove")
@name_argument
@click.option("--yes", is_flag=True, help="Remove without asking.")
@pass_state
def user_remove(state: CliState, name: str, yes: bool) -> None:
    """Remove the user NAME, their tokens and sign-ins.

    Their storage configs are kept and stay theirs: a user added again under NAME sees
    them again, and an admin sees them meanwhile.
    """
    if not yes:
        try:
            confirmed = click.confirm(
                f"Remove user {_shown(name)} (their configs are kept)?", err=True
            )
        except click.Abort:  # stdin ended (or Ctrl-C): the question's line ends here
            click.echo(err=True)
            confirmed = False
        if not confirmed:
            raise Failure(f"user {_shown(name)} not removed", EXIT_WORK_FAILED)

    async def body(database: Database, settings: Settings) -> bool:
        return await Accounts(database.pool, state.clock).remove(name)

    if not state.with_database(body):
        raise Failure(UNKNOWN_USER, EXIT_USAGE)
    click.echo(
        f"removed user {_shown(name)}; their storage configs are kept, and stay theirs "
        f"(owner {_shown(name)})"
    )


@user_group.command("token")
@name_argument
@click.option(
    "--days",
    type=click.IntRange(1, MAX_TOKEN_DAYS),
    default=None,
    help=f"How long the new token lasts [default {DEFAULT_TOKEN_DAYS}].",
)
@click.option("--revoke", is_flag=True, help="Remove every token of NAME instead.")
@pass_state
def user_token(state: CliState, name: str, days: int | None, revoke: bool) -> None:
    """Make a personal API token for NAME's scripts, and print it once.

    Scripts send it as 'Authorization: Bearer TOKEN'. Only its SHA-256 is kept: a lost
    token cannot be shown again; make another (and --revoke the old ones).
    """
    if revoke:
        if days is not None:
            raise Failure("--days makes a token; --revoke removes them: give one of the two")

        async def revoke_body(database: Database, settings: Settings) -> int:
            return await Accounts(database.pool, state.clock).revoke_tokens(name)

        revoked = state.with_database(revoke_body)
        click.echo(f"revoked {plural(revoked, 'token')} of {_shown(name)}")
        return
    lasting = DEFAULT_TOKEN_DAYS if days is None else days

    async def body(database: Database, settings: Settings) -> str:
        return await Accounts(database.pool, state.clock).new_token(name, days=lasting)

    token = state.with_database(body)
    masker.add(token)
    click.echo(token)
    click.echo(
        f"This token of {_shown(name)} is shown only now and lasts {lasting} days; "
        "scripts send it as 'Authorization: Bearer <the token above>'.",
        err=True,
    )
