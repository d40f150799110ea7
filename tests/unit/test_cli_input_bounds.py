"""Hostile input at the CLI is a usage error (2) with one clear line, refused before the
database is reached (issue #27 item 7): owner names on every ``--user``, and payloads
nested too deep to parse safely."""

from __future__ import annotations

import os

import pytest
from click.testing import CliRunner, Result

from safelight.cli.failures import EXIT_USAGE
from safelight.cli.main import cli
from safelight.handlers.payloads import MAX_PAYLOAD_DEPTH

# A database nothing can reach: every refusal here comes before it would be.
UNREACHABLE = "postgresql://u:pw-unit@127.0.0.1:1/x"


@pytest.fixture
def env() -> dict[str, str | None]:
    cleared: dict[str, str | None] = {k: None for k in os.environ if k.startswith("SAFELIGHT_")}
    return {**cleared, "SAFELIGHT_DATABASE_URL": UNREACHABLE}


def run(args: list[str], env: dict[str, str | None]) -> Result:
    return CliRunner().invoke(cli, args, env=env, catch_exceptions=False)


def error_line(result: Result) -> str:
    assert result.exit_code == EXIT_USAGE, result.output
    assert result.stdout == ""
    (line,) = result.stderr.splitlines()
    assert line.startswith("safelight: error: ")
    return line


@pytest.mark.parametrize(
    "command", [["config", "add", "."], ["run", "."], ["worker", "--until-idle"]]
)
@pytest.mark.parametrize(
    ("user", "problem"),
    [
        ("", "must not be blank"),
        ("x" * 65, "at most 64 characters"),
        ("evil\x1b[2J", "control or format characters (\\x1b)"),
        ("\u202eecila", "control or format characters (\\u202e)"),
        (" alice", "must not begin or end with a space"),
    ],
)
def test_every_user_option_refuses_a_bad_owner_name_with_exit_2(
    command: list[str], user: str, problem: str, env: dict[str, str | None]
) -> None:
    line = error_line(run([*command, "--user", user], env))
    assert "--user" in line and problem in line
    assert "\x1b" not in line and "\u202e" not in line  # the line escapes what it quotes
    assert "database" not in line


def test_a_payload_nested_20000_deep_is_exit_2_not_an_internal_error(
    env: dict[str, str | None],
) -> None:
    deep = '{"result": ' + '{"a": ' * 20_000 + "1" + "}" * 20_001
    line = error_line(run(["enqueue", "noop", "--payload", deep], env))
    assert line == (
        f"safelight: error: --payload is nested more than {MAX_PAYLOAD_DEPTH} levels deep"
    )
    arrays = "[" * 20_000 + "]" * 20_000
    assert "nested more than" in error_line(run(["enqueue", "noop", "--payload", arrays], env))
