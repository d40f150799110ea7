"""``safelight user add|list|passwd|remove|token`` against a real database (issue #28
item 1): passwords typed twice or read from stdin, refused with the reason when weak,
never printed; a token printed once; a removed user's configs kept."""

from __future__ import annotations

import hashlib
import re
from datetime import timedelta
from pathlib import Path
from typing import Any

import psycopg
import pytest

from safelight.accounts.passwords import verify_password
from safelight.testing.invoking import Invoke
from tests.acceptance.harness import json_of

pytestmark = pytest.mark.acceptance

PASSWORD = "correct horse battery"
NEW = "a different staple 42"


def db_rows(database_url: str, sql: str, *args: Any) -> list[tuple[Any, ...]]:
    with psycopg.connect(database_url) as conn:
        return list(conn.execute(sql, args or None).fetchall())


def stored_hash(database_url: str, name: str) -> str:
    [(stored,)] = db_rows(database_url, "SELECT password_hash FROM users WHERE name = %s", name)
    return str(stored)


def test_add_from_stdin_then_list(invoke: Invoke, database_url: str, tmp_path: Path) -> None:
    (tmp_path / "photos").mkdir()
    assert invoke("config", "add", str(tmp_path / "photos"), "--user", "bob").exit_code == 0

    added = invoke("user", "add", "alice", "--admin", "--password-stdin", input=PASSWORD + "\n")
    assert added.exit_code == 0, added.output
    assert added.stdout == "added user 'alice': sees every storage config (admin)\n"
    bob = invoke("user", "add", "bob", "--password-stdin", input=NEW)
    assert bob.exit_code == 0, bob.output
    assert bob.stdout == "added user 'bob': sees the storage configs of owner 'bob' (1 now)\n"
    assert verify_password(stored_hash(database_url, "alice"), PASSWORD)
    assert verify_password(stored_hash(database_url, "bob"), NEW)

    listed = json_of(invoke("user", "list", "--json"))
    assert [(u["name"], u["admin"], u["has_password"], u["tokens"]) for u in listed] == [
        ("alice", True, True, 0),
        ("bob", False, True, 0),
    ]
    table = invoke("user", "list")
    assert table.exit_code == 0
    assert re.search(r"alice\W+yes\W+yes", table.stdout)
    assert re.search(r"bob\W+no\W+yes", table.stdout)
    for result in (added, bob, table):
        assert PASSWORD not in result.output and NEW not in result.output


def test_no_user_yet_says_how_to_add_one(invoke: Invoke) -> None:
    listed = invoke("user", "list")
    assert listed.exit_code == 0
    assert "none yet; add one with 'safelight user add NAME --admin'" in listed.stdout
    assert json_of(invoke("user", "list", "--json")) == []


def test_add_asks_twice_without_echo(invoke: Invoke, database_url: str) -> None:
    added = invoke("user", "add", "alice", input=f"{PASSWORD}\n{PASSWORD}\n")
    assert added.exit_code == 0, added.output
    assert "New password of 'alice': " in added.stderr and "Type it again: " in added.stderr
    assert PASSWORD not in added.output
    assert verify_password(stored_hash(database_url, "alice"), PASSWORD)


def test_two_different_passwords_or_none_add_no_user(invoke: Invoke, database_url: str) -> None:
    mismatch = invoke("user", "add", "alice", input=f"{PASSWORD}\n{NEW}\n")
    assert mismatch.exit_code == 2, mismatch.output
    assert "do not match" in mismatch.stderr
    assert mismatch.stderr.endswith("safelight: error: no password was given\n")
    assert PASSWORD not in mismatch.output and NEW not in mismatch.output
    assert db_rows(database_url, "SELECT name FROM users") == []


@pytest.mark.parametrize(
    ("password", "reason"),
    [
        ("short1", "a password needs at least 10 characters"),
        ("alice-is-my-name", "a password must not contain the user's name"),
        ("ababababab", "a password needs at least 5 different characters"),
        ("qwertyuiop", "a password must not be one of the most common ones"),
    ],
)
def test_a_weak_password_is_refused_with_the_reason_and_not_echoed(
    invoke: Invoke, database_url: str, password: str, reason: str
) -> None:
    refused = invoke("user", "add", "alice", "--password-stdin", input=password + "\n")
    assert refused.exit_code == 2, refused.output
    assert refused.stderr.startswith(f"safelight: error: password refused: {reason}")
    assert refused.stdout == "" and password not in refused.stderr
    assert db_rows(database_url, "SELECT name FROM users") == []


def test_a_taken_or_bad_name_and_two_lines_on_stdin_are_usage_errors(
    invoke: Invoke, database_url: str
) -> None:
    assert invoke("user", "add", "alice", "--password-stdin", input=PASSWORD).exit_code == 0
    taken = invoke("user", "add", "alice", input=f"{NEW}\n{NEW}\n")
    assert taken.exit_code == 2
    assert taken.stderr == (  # said before a password is asked for
        "safelight: error: a user of that name already exists (see 'safelight user list')\n"
    )
    bad = invoke("user", "add", "ev\x1bil", input=f"{PASSWORD}\n{PASSWORD}\n")
    assert bad.exit_code == 2
    assert "a user's name must not hold control or format characters" in bad.stderr
    assert "New password" not in bad.output  # refused before any password is asked for
    two = invoke("user", "add", "bob", "--password-stdin", input=f"{PASSWORD}\nmore\n")
    assert two.exit_code == 2
    assert "--password-stdin reads one line" in two.stderr and PASSWORD not in two.stderr
    assert db_rows(database_url, "SELECT name FROM users") == [("alice",)]


def test_passwd_changes_the_password_and_signs_the_browsers_out(
    invoke: Invoke, database_url: str
) -> None:
    assert invoke("user", "add", "alice", "--password-stdin", input=PASSWORD).exit_code == 0
    with psycopg.connect(database_url) as conn:
        conn.execute(
            "INSERT INTO web_sessions (id_digest, user_id, origin, csrf_digest, created_at,"
            " last_seen_at, expires_at) SELECT 'x', id, 'http://127.0.0.1:8080', 'y', now(),"
            " now(), now() + interval '1 day' FROM users WHERE name = 'alice'"
        )

    changed = invoke("user", "passwd", "alice", input=f"{NEW}\n{NEW}\n")
    assert changed.exit_code == 0, changed.output
    assert changed.stdout == "changed the password of 'alice'; their browsers are signed out\n"
    assert NEW not in changed.output
    assert verify_password(stored_hash(database_url, "alice"), NEW)
    assert not verify_password(stored_hash(database_url, "alice"), PASSWORD)
    assert db_rows(database_url, "SELECT count(*) FROM web_sessions") == [(0,)]

    weak = invoke("user", "passwd", "alice", "--password-stdin", input="short")
    assert weak.exit_code == 2 and "at least 10 characters" in weak.stderr
    unknown = invoke("user", "passwd", "nobody", input=f"{PASSWORD}\n{PASSWORD}\n")
    assert unknown.exit_code == 2
    assert unknown.stderr == (
        "safelight: error: there is no user of that name (see 'safelight user list')\n"
    )


def test_a_token_is_printed_once_and_works_until_revoked(invoke: Invoke, database_url: str) -> None:
    assert invoke("user", "add", "alice", "--password-stdin", input=PASSWORD).exit_code == 0

    made = invoke("user", "token", "alice", "--days", "2")
    assert made.exit_code == 0, made.output
    token = made.stdout.strip()
    assert made.stdout == token + "\n" and re.fullmatch(r"sl_[A-Za-z0-9_-]{43}", token)
    assert made.stderr == (
        "This token of 'alice' is shown only now and lasts 2 days; scripts send it as "
        "'Authorization: Bearer <the token above>'.\n"
    )
    [(digest, created, expires)] = db_rows(
        database_url, "SELECT token_hash, created_at, expires_at FROM auth_tokens"
    )
    assert digest == hashlib.sha256(token.encode()).hexdigest()
    assert expires - created == timedelta(days=2)
    listed = json_of(invoke("user", "list", "--json"))
    assert listed[0]["tokens"] == 1 and listed[0]["token_last_used_at"] is None
    assert token not in invoke("user", "list").output

    other = invoke("user", "token", "alice").stdout.strip()
    assert other != token
    [(days,)] = db_rows(
        database_url,
        "SELECT expires_at - created_at FROM auth_tokens WHERE token_hash = %s",
        hashlib.sha256(other.encode()).hexdigest(),
    )
    assert days == timedelta(days=365)

    revoked = invoke("user", "token", "alice", "--revoke")
    assert revoked.exit_code == 0 and revoked.stdout == "revoked 2 tokens of 'alice'\n"
    assert db_rows(database_url, "SELECT count(*) FROM auth_tokens") == [(0,)]


def test_token_usage_errors(invoke: Invoke) -> None:
    assert invoke("user", "add", "alice", "--password-stdin", input=PASSWORD).exit_code == 0
    both = invoke("user", "token", "alice", "--revoke", "--days", "3")
    assert both.exit_code == 2 and "give one of the two" in both.stderr
    zero = invoke("user", "token", "alice", "--days", "0")
    assert zero.exit_code == 2 and "--days" in zero.stderr
    nobody = invoke("user", "token", "nobody")
    assert nobody.exit_code == 2 and "there is no user of that name" in nobody.stderr
    assert nobody.stdout == ""


def test_remove_asks_and_keeps_the_configs(
    invoke: Invoke, database_url: str, tmp_path: Path
) -> None:
    (tmp_path / "photos").mkdir()
    assert invoke("config", "add", str(tmp_path / "photos"), "--user", "alice").exit_code == 0
    assert invoke("user", "add", "alice", "--password-stdin", input=PASSWORD).exit_code == 0
    assert invoke("user", "token", "alice").exit_code == 0

    declined = invoke("user", "remove", "alice", input="n\n")
    assert declined.exit_code == 1
    assert "Remove user 'alice' (their configs are kept)?" in declined.stderr
    assert declined.stderr.endswith("safelight: error: user 'alice' not removed\n")
    assert db_rows(database_url, "SELECT name FROM users") == [("alice",)]

    unanswered = invoke("user", "remove", "alice", input="")
    assert unanswered.exit_code == 1
    assert unanswered.stderr.endswith("[y/N]: \nsafelight: error: user 'alice' not removed\n")

    removed = invoke("user", "remove", "alice", input="y\n")
    assert removed.exit_code == 0, removed.output
    assert removed.stdout == (
        "removed user 'alice'; their storage configs are kept, and stay theirs (owner 'alice')\n"
    )
    assert db_rows(database_url, "SELECT count(*) FROM users") == [(0,)]
    assert db_rows(database_url, "SELECT count(*) FROM auth_tokens") == [(0,)]
    assert db_rows(database_url, "SELECT owner FROM storage_configs") == [("alice",)]

    again = invoke("user", "remove", "alice", "--yes")
    assert again.exit_code == 2 and "there is no user of that name" in again.stderr
