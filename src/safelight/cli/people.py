"""``safelight people``: the people found in a library's photos (ADR 0068), listed,
shown, named, merged and split, as the dashboard's People pages do; every edit through
``library.catalogue.people``, which refuses an unknown id or an edit across two configs
with a line that says so (exit 2). The CLI is the operator's: it sees every owner's
configs, disabled ones too."""

from __future__ import annotations

import getpass
from typing import Any

import click

from safelight.cli.admin import json_option
from safelight.cli.output import console, print_json, safe_text, short_id, table
from safelight.cli.queue import config_option, resolve_config
from safelight.cli.state import CliState, pass_state
from safelight.db.database import Database
from safelight.library.catalogue import people
from safelight.settings import Settings
from safelight.words import plural

# The operator sees every config's people, a disabled config's too.
EVERY_OWNER: dict[str, Any] = {"owner": None, "with_disabled": True}


def _who() -> str | None:
    """Who names a person from the CLI: the machine's user (the dashboard names its
    user)."""
    try:
        return getpass.getuser()
    except (KeyError, OSError):  # no name for this uid (a container)
        return None


def _shown_name(person: people.Person) -> str:
    return person.name if person.name is not None else "(not named)"


def _on_connection(state: CliState, edit: Any) -> Any:
    """Run ``edit(conn)`` on a connection (a refused edit, a ``PeopleError``, leaves as
    one line with exit 2: ``failures.USER_ERRORS``)."""

    async def body(database: Database, settings: Settings) -> Any:
        async with database.pool.connection() as conn:
            return await edit(conn)

    return state.with_database(body)


def _print_person(person: people.Person, as_json: bool, line: str) -> None:
    if as_json:
        print_json(person.document())
    else:
        console().print(safe_text(line))


@click.group("people")
def people_group() -> None:
    """The people found in the photos: list, show, name, merge and split them."""


@people_group.command("list")
@config_option("Only the people of this storage config.")
@json_option()
@pass_state
def list_people(state: CliState, config_ref: str | None, as_json: bool) -> None:
    """List the people, those in most photos first."""

    async def body(database: Database, settings: Settings) -> list[people.Person]:
        config_id = await resolve_config(database, state, config_ref)
        async with database.pool.connection() as conn:
            return await people.list_people(conn, config_id=config_id, **EVERY_OWNER)

    found = state.with_database(body)
    if as_json:
        print_json([person.document() for person in found])
        return
    console().print(
        table(
            "people",
            ["id", "config", "name", "photos", "faces", "named by", "named at"],
            (
                (
                    p.id,
                    short_id(p.storage_config_id),
                    _shown_name(p),
                    p.photo_count,
                    p.face_count,
                    p.named_by,
                    p.named_at,
                )
                for p in found
            ),
            empty="no people yet (finding faces is off unless SAFELIGHT_FACES=1)",
        )
    )


@people_group.command("show")
@click.argument("person_id", metavar="ID", type=click.IntRange(min=1))
@json_option()
@pass_state
def show(state: CliState, person_id: int, as_json: bool) -> None:
    """Show a person and their photos, newest first."""

    async def edit(conn: people.Conn) -> tuple[people.Person, list[dict[str, Any]]]:
        person = await people.get_person(conn, person_id, **EVERY_OWNER)
        return person, await people.person_photos(conn, person_id, **EVERY_OWNER)

    person, photos = _on_connection(state, edit)
    if as_json:
        print_json(
            {
                **person.document(),
                "photos": [
                    {
                        "id": p["id"],
                        "file_name": p["file_name"],
                        "captured_at": p["captured_at"],
                        "face_ids": [f["id"] for f in p["faces"]],
                    }
                    for p in photos
                ],
            }
        )
        return
    out = console()
    out.print(
        safe_text(
            f"person {person.id} of config {short_id(person.storage_config_id)}: "
            f"{_shown_name(person)}, in {plural(person.photo_count, 'photo')} "
            f"({plural(person.face_count, 'face')})"
        )
    )
    out.print(
        table(
            None,
            ["photo", "file", "captured", "faces"],
            (
                (
                    p["id"],
                    p["file_name"],
                    p["captured_at"],
                    " ".join(str(f["id"]) for f in p["faces"]),
                )
                for p in photos
            ),
            empty="no photos shown (deleted)",
        )
    )


@people_group.command("name")
@click.argument("person_id", metavar="ID", type=click.IntRange(min=1))
@click.argument("name", metavar="NAME", required=False)
@click.option("--clear", is_flag=True, help="Clear the person's name instead.")
@json_option()
@pass_state
def name(state: CliState, person_id: int, name: str | None, clear: bool, as_json: bool) -> None:
    """Name a person (or rename them), or clear their name with --clear.

    A name is kept when the faces are grouped again. Trimmed; 1 to 200 characters.
    """
    if clear == (name is not None):
        raise click.UsageError("give a NAME or --clear: exactly one")
    now = state.clock.now()

    async def edit(conn: people.Conn) -> people.Person:
        return await people.name_person(conn, person_id, name, by=_who(), now=now, **EVERY_OWNER)

    person = _on_connection(state, edit)
    if person.name is None:
        _print_person(person, as_json, f"person {person.id} has no name now")
    else:
        _print_person(person, as_json, f"person {person.id} is {person.name} now")


@people_group.command("merge")
@click.argument("from_id", metavar="FROM", type=click.IntRange(min=1))
@click.argument("into_id", metavar="INTO", type=click.IntRange(min=1))
@json_option()
@pass_state
def merge(state: CliState, from_id: int, into_id: int, as_json: bool) -> None:
    """Merge person FROM into person INTO, of the same config: FROM's faces move to INTO,
    who keeps their name (or takes FROM's, having none), and FROM is gone."""

    async def edit(conn: people.Conn) -> people.Merged:
        return await people.merge_people(conn, from_id, into_id, **EVERY_OWNER)

    merged = _on_connection(state, edit)
    if as_json:
        print_json({**merged.person.document(), "faces_moved": merged.faces_moved})
        return
    console().print(
        safe_text(
            f"merged person {from_id} into person {into_id} ({_shown_name(merged.person)}): "
            f"{plural(merged.faces_moved, 'face')} moved"
        )
    )


@people_group.command("split")
@click.argument("person_id", metavar="ID", type=click.IntRange(min=1))
@click.argument(
    "face_ids", metavar="FACE_ID...", nargs=-1, required=True, type=click.IntRange(min=1)
)
@json_option()
@pass_state
def split(state: CliState, person_id: int, face_ids: tuple[int, ...], as_json: bool) -> None:
    """Move the faces FACE_ID... of person ID to a new person ('people show ID' lists
    their faces); the grouping leaves them there."""
    now = state.clock.now()

    async def edit(conn: people.Conn) -> people.Person:
        return await people.split_person(conn, person_id, face_ids, now=now, **EVERY_OWNER)

    person = _on_connection(state, edit)
    _print_person(
        person,
        as_json,
        f"{plural(len(set(face_ids)), 'face')} of person {person_id} moved to person {person.id}",
    )


@people_group.command("move")
@click.argument("face_id", metavar="FACE_ID", type=click.IntRange(min=1))
@click.argument("person_id", metavar="PERSON_ID", type=click.IntRange(min=1))
@json_option()
@pass_state
def move(state: CliState, face_id: int, person_id: int, as_json: bool) -> None:
    """Move one face to a person of its config; the grouping leaves it there."""

    async def edit(conn: people.Conn) -> people.Person:
        return await people.move_face(conn, face_id, person_id, **EVERY_OWNER)

    person = _on_connection(state, edit)
    _print_person(
        person, as_json, f"face {face_id} is person {person.id}'s now ({_shown_name(person)})"
    )
