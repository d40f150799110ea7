"""What the database recorded against this release's migration files, without a database."""

from __future__ import annotations

import pytest

from safelight.db.migrate import (
    AppliedMigration,
    ChangedMigrationError,
    Migration,
    NewerSchemaError,
    available_migrations,
    checksum_of,
    verify,
)

KNOWN = [
    Migration("0001", "0001_a.sql", "SELECT 1", checksum_of(b"SELECT 1")),
    Migration("0002", "0002_b.sql", "SELECT 2", checksum_of(b"SELECT 2")),
]


def applied(*rows: tuple[str, str, str | None]) -> list[AppliedMigration]:
    return [AppliedMigration(*row) for row in rows]


def test_the_files_checksums_are_their_sha256() -> None:
    for m in available_migrations():
        assert m.checksum == checksum_of(m.sql.encode("utf-8")) and len(m.checksum) == 64


def test_matching_missing_and_not_yet_recorded_checksums_pass() -> None:
    verify([], KNOWN)
    verify(applied(("0001", "0001_a.sql", KNOWN[0].checksum)), KNOWN)
    verify(applied(("0001", "0001_a.sql", None), ("0002", "0002_b.sql", None)), KNOWN)


def test_unknown_versions_and_names_are_named_before_any_changed_file() -> None:
    rows = applied(
        ("0001", "0001_a.sql", "0" * 64),  # changed, but the unknown ones come first
        ("0002", "0002_other.sql", None),
        ("0003", "0003_c.sql", "x"),
    )
    with pytest.raises(NewerSchemaError, match=r"does not know: 0002_other\.sql, 0003_c\.sql;"):
        verify(rows, KNOWN)


def test_each_changed_file_is_named_with_both_checksums() -> None:
    rows = applied(("0001", "0001_a.sql", "a" * 64), ("0002", "0002_b.sql", "b" * 64))
    with pytest.raises(ChangedMigrationError) as caught:
        verify(rows, KNOWN)
    message = str(caught.value)
    assert f"0001_a.sql (recorded sha256 {'a' * 12}…, file {KNOWN[0].checksum[:12]}…)" in message
    assert f"0002_b.sql (recorded sha256 {'b' * 12}…, file {KNOWN[1].checksum[:12]}…)" in message
