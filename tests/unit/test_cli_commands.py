"""The CLI's command table (ADR 0063): each row names a command that exists under its
name and lists it by its own help's first sentence, and the group itself, `--version`
and `--help`, imports none of the engine: no psycopg, Pillow or NumPy."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import click
import pytest

from safelight.cli.main import COMMANDS, cli, load_command

HEAVY = ("psycopg", "PIL", "numpy", "safelight.app", "safelight.handlers")


def imported_after(code: str) -> list[str]:
    """The heavy modules a fresh interpreter holds after running ``code``."""
    probe = (
        f"{code}\nimport json, sys\nprint(json.dumps([m for m in {HEAVY!r} if m in sys.modules]))"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True
    )
    return list(json.loads(done.stdout.splitlines()[-1]))


def test_importing_the_cli_imports_no_engine() -> None:
    assert imported_after("import safelight.cli.main") == []


def test_the_version_and_the_help_import_no_engine() -> None:
    code = (
        "from click.testing import CliRunner\n"
        "from safelight.cli.main import cli\n"
        "for args in (['--version'], ['--help']):\n"
        "    assert CliRunner().invoke(cli, args).exit_code == 0\n"
    )
    assert imported_after(code) == []


def test_the_queue_commands_do_not_import_the_decoders() -> None:
    """`status` and `items` read the queue: the engine's handlers stay out."""
    loaded = imported_after("import safelight.cli.queue, safelight.cli.state")
    assert "PIL" not in loaded and "numpy" not in loaded and "safelight.handlers" not in loaded


def test_a_bad_row_is_refused_by_name() -> None:
    COMMANDS["bogus"] = ("safelight.cli.exits:EXIT_OK", "Not a command.")
    try:
        with pytest.raises(TypeError, match=re.escape("safelight.cli.exits:EXIT_OK")):
            load_command("bogus")
    finally:
        del COMMANDS["bogus"]


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_each_row_is_its_command_and_its_summary_is_its_first_sentence(name: str) -> None:
    command = load_command(name)
    assert command.name == name
    assert COMMANDS[name][1] == command.get_short_help_str(limit=10_000)


def test_the_group_lists_every_row_and_loads_them_on_use() -> None:
    ctx = click.Context(cli)
    assert cli.list_commands(ctx) == sorted(COMMANDS)
    got = cli.get_command(ctx, "status")
    assert got is load_command("status")
    assert cli.get_command(ctx, "no-such-command") is None
