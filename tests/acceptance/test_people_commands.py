"""``safelight people``: list, show, name, merge, split and move (ADR 0068), in this
process against the test's own database, with people and faces as the grouping leaves
them (``testing.people``: no face detector); an unknown id or a merge across configs
is one clear line and exit 2."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from pathlib import Path

import pytest

from safelight.db.pool import open_pool
from safelight.testing.invoking import Invoke
from safelight.testing.people import Family, faces_of, make_family, person_exists
from safelight.testing.web import TODAY
from tests.acceptance.harness import json_of

pytestmark = pytest.mark.acceptance

NOW = datetime(2026, 6, 15, 12, tzinfo=UTC)


@pytest.fixture
def family(database_url: str, tmp_path: Path) -> Family:
    async def make() -> Family:
        pool = await open_pool(database_url, min_size=1, max_size=2)
        try:
            return await make_family(pool, tmp_path / "proxies", TODAY, NOW)
        finally:
            await pool.close()

    return asyncio.run(make())


def _in_db(database_url: str, check: str, person_id: int) -> object:
    async def run() -> object:
        pool = await open_pool(database_url, min_size=1, max_size=2)
        try:
            async with pool.connection() as conn:
                if check == "exists":
                    return await person_exists(conn, person_id)
                return await faces_of(conn, person_id)
        finally:
            await pool.close()

    return asyncio.run(run())


def test_people_are_listed_and_shown(invoke: Invoke, family: Family) -> None:
    listed = json_of(invoke("people", "list", "--json"))
    assert [p["id"] for p in listed] == [family.grandma, family.ana, family.unnamed, family.bobs]
    assert listed[0]["name"] == "Grandma" and listed[0]["photo_count"] == 3
    only_bob = json_of(invoke("people", "list", "--config", str(family.bob.config_id), "--json"))
    assert [p["id"] for p in only_bob] == [family.bobs]
    table = invoke("people", "list")
    assert table.exit_code == 0, table.output
    assert "Grandma" in table.stdout and "(not named)" in table.stdout

    shown = json_of(invoke("people", "show", str(family.grandma), "--json"))
    assert [p["id"] for p in shown["photos"]] == [
        family.alice.ids[name] for name in ("photo-1y", "burst-3y-a", "jpeg-3y")
    ]
    assert shown["photos"][0]["face_ids"] == [family.faces["grandma:photo-1y"]]
    text = invoke("people", "show", str(family.grandma))
    assert "Grandma, in 3 photos (3 faces)" in text.stdout


def test_a_person_is_named_and_cleared(invoke: Invoke, family: Family) -> None:
    named = json_of(invoke("people", "name", str(family.unnamed), "  Jo ", "--json"))
    assert named["name"] == "Jo" and named["named_at"] is not None
    said = invoke("people", "name", str(family.unnamed), "Joe")
    assert said.stdout.strip() == f"person {family.unnamed} is Joe now"
    cleared = invoke("people", "name", str(family.unnamed), "--clear")
    assert cleared.stdout.strip() == f"person {family.unnamed} has no name now"
    both = invoke("people", "name", str(family.unnamed), "Jo", "--clear")
    neither = invoke("people", "name", str(family.unnamed))
    assert both.exit_code == neither.exit_code == 2
    assert "give a NAME or --clear: exactly one" in both.stderr


def test_merge_split_and_move(invoke: Invoke, family: Family, database_url: str) -> None:
    merged = invoke("people", "merge", str(family.unnamed), str(family.ana))
    assert merged.exit_code == 0, merged.output
    assert f"into person {family.ana} (Ana): 2 faces moved" in merged.stdout
    assert _in_db(database_url, "exists", family.unnamed) is False

    chosen = family.faces["grandma:jpeg-3y"]
    split = json_of(invoke("people", "split", str(family.grandma), str(chosen), "--json"))
    assert _in_db(database_url, "faces", split["id"]) == {chosen: "person"}

    moved = invoke("people", "move", str(chosen), str(family.grandma))
    assert moved.exit_code == 0, moved.output
    assert f"face {chosen} is person {family.grandma}'s now (Grandma)" in moved.stdout


@pytest.mark.parametrize(
    ("args", "error"),
    [
        (["show", "999999"], "there is no person 999999"),
        (["name", "999999", "Jo"], "there is no person 999999"),
        (["merge", "{bobs}", "{ana}"], "people are merged only within one config"),
        (["split", "{grandma}", "999999"], "there is no face 999999"),
        (["move", "{bobs_face}", "{ana}"], "a face moves only to a person of its own config"),
        (["name", "{ana}", " "], "a name must not be blank"),
        (["show", "0"], "0 is not in the range x>=1"),
    ],
    ids=["show", "name", "merge-across", "split-unknown-face", "move-across", "blank", "zero"],
)
def test_an_unknown_id_or_an_edit_across_configs_is_one_clear_line(
    invoke: Invoke, family: Family, args: list[str], error: str
) -> None:
    values = {
        "bobs": family.bobs,
        "ana": family.ana,
        "grandma": family.grandma,
        "bobs_face": family.faces["bobs:photo-1y"],
    }
    result = invoke("people", *(arg.format(**values) for arg in args))
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith("safelight: error: ")
    assert error in result.stderr
    assert "Traceback" not in result.output
