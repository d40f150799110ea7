"""The backup file's manifest (ADR 0061): what it says reads back as itself, and a
manifest of another format is refused with the reason."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import pytest

from safelight.db.backupfile import (
    MANIFEST,
    BackupError,
    Manifest,
    SequenceEntry,
    TableEntry,
    read_manifest,
)
from safelight.db.migrate import AppliedMigration

MANIFEST_OF_ONE_TABLE = Manifest(
    safelight_version="0.1.0",
    created_at="2026-12-03T02:15:00+00:00",
    server_version="16.14",
    migrations=(AppliedMigration("0001", "0001_work.sql", "ab" * 32),),
    tables=(TableEntry("users", ("id", "name"), 1, "cd" * 32),),
    sequences=(SequenceEntry("users_id_seq", 1), SequenceEntry("bursts_id_seq", None)),
)


def test_a_manifest_reads_back_as_itself() -> None:
    assert Manifest.from_json(MANIFEST_OF_ONE_TABLE.to_json()) == MANIFEST_OF_ONE_TABLE
    assert MANIFEST_OF_ONE_TABLE.rows == 1


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        ({"format": "something-else"}, "not a safelight backup"),
        ({"format_version": 9}, "format version 9, and this safelight reads version 1"),
        (
            {"tables": [{"name": "t", "columns": [], "rows": -1, "sha256": ""}]},
            "a row count of -1",
        ),
    ],
)
def test_a_manifest_of_another_format_is_refused_with_the_reason(
    change: dict[str, object], reason: str
) -> None:
    document = {**json.loads(MANIFEST_OF_ONE_TABLE.to_json()), **change}
    with pytest.raises(ValueError, match=reason):
        Manifest.from_json(json.dumps(document).encode())


def test_a_zip_without_a_manifest_or_a_tables_rows_is_refused(tmp_path: Path) -> None:
    bare = tmp_path / "bare.zip"
    with zipfile.ZipFile(bare, "w") as archive:
        archive.writestr("notes.txt", "hello")
    with pytest.raises(BackupError, match=r"bare.zip is not a safelight backup: it has no manif"):
        read_manifest(bare)
    rowless = tmp_path / "rowless.zip"
    with zipfile.ZipFile(rowless, "w") as archive:
        archive.writestr(MANIFEST, MANIFEST_OF_ONE_TABLE.to_json())
    with pytest.raises(BackupError, match=r"rowless.zip is damaged: table users.s rows are miss"):
        read_manifest(rowless)
