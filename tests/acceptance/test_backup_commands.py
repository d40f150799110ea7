"""``safelight db backup [--to FILE]`` and ``safelight db restore FILE`` (ADR 0061)."""

from __future__ import annotations

import stat
from pathlib import Path

import psycopg
import pytest

from safelight.db.backups import backups_in, folder_of
from safelight.testing.catalogue import cut_short
from safelight.testing.invoking import Invoke

pytestmark = pytest.mark.acceptance


def configs(database_url: str) -> list[str]:
    with psycopg.connect(database_url, autocommit=True) as conn:
        return [
            root for (root,) in conn.execute("SELECT root_path FROM storage_configs ORDER BY 1")
        ]


def test_a_backup_in_the_home_restored_gives_the_catalogue_back(
    invoke: Invoke, database_url: str, home: Path, tmp_path: Path
) -> None:
    for name in ("alice", "bob"):
        (tmp_path / name).mkdir()
        assert invoke("config", "add", str(tmp_path / name), "--user", name).exit_code == 0
    before = configs(database_url)

    backed_up = invoke("db", "backup")

    assert backed_up.exit_code == 0, backed_up.output
    (path,) = backups_in(folder_of(home))
    assert backed_up.stdout.startswith("backed up ") and f"to {path} (" in backed_up.stdout
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute("DELETE FROM storage_configs")

    restored = invoke("db", "restore", str(path))

    assert restored.exit_code == 0, restored.output
    assert restored.stdout.startswith("restored ") and f"from {path} (made " in restored.stdout
    assert configs(database_url) == before
    assert invoke("status").exit_code == 0


def test_a_backup_to_a_file_is_private_and_never_overwrites_one(
    invoke: Invoke, home: Path, tmp_path: Path
) -> None:
    target = tmp_path / "out" / "catalogue.zip"
    target.parent.mkdir()

    first = invoke("db", "backup", "--to", str(target))
    again = invoke("db", "backup", "--to", str(target))

    assert first.exit_code == 0, first.output
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    assert sorted(p.name for p in target.parent.iterdir()) == ["catalogue.zip"]
    assert backups_in(folder_of(home)) == []
    assert (again.exit_code, again.stderr) == (
        2,
        f"safelight: error: {target} exists: remove it, or name another file\n",
    )


def test_a_restore_is_refused_while_a_worker_is_alive(
    invoke: Invoke, database_url: str, tmp_path: Path
) -> None:
    (tmp_path / "photos").mkdir()
    invoke("config", "add", str(tmp_path / "photos"))
    target = tmp_path / "catalogue.zip"
    assert invoke("db", "backup", "--to", str(target)).exit_code == 0
    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute("DELETE FROM storage_configs")
        conn.execute(
            "INSERT INTO workers (worker_id, started_at, last_seen_at) "
            "VALUES ('nas-1', now(), now())"
        )

    refused = invoke("db", "restore", str(target))

    assert refused.exit_code == 2
    assert refused.stderr == (
        "safelight: error: 1 Worker alive (seen in the last 120 s: nas-1): stop every "
        "Worker, then restore; nothing was restored\n"
    )
    assert configs(database_url) == []


def test_a_damaged_backup_is_refused_with_the_catalogue_untouched(
    invoke: Invoke, database_url: str, tmp_path: Path
) -> None:
    (tmp_path / "photos").mkdir()
    invoke("config", "add", str(tmp_path / "photos"))
    target = tmp_path / "catalogue.zip"
    assert invoke("db", "backup", "--to", str(target)).exit_code == 0
    cut_short(target)
    before = configs(database_url)

    refused = invoke("db", "restore", str(target))

    assert refused.exit_code == 2
    assert refused.stderr.startswith(f"safelight: error: {target} is damaged or cut short")
    assert configs(database_url) == before


def test_a_restore_takes_back_a_database_a_newer_release_migrated(
    invoke: Invoke, database_url: str, tmp_path: Path
) -> None:
    (tmp_path / "photos").mkdir()
    invoke("config", "add", str(tmp_path / "photos"))
    target = tmp_path / "before-the-upgrade.zip"
    assert invoke("db", "backup", "--to", str(target)).exit_code == 0
    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute(
            "INSERT INTO schema_migrations (version, name, checksum) "
            "VALUES ('9999', '9999_from_the_future.sql', %s)",
            ("0" * 64,),
        )
    refused = invoke("status")
    assert refused.exit_code == 2 and "migrated by a newer release" in refused.stderr

    restored = invoke("db", "restore", str(target))

    assert restored.exit_code == 0, restored.output
    assert invoke("status").exit_code == 0
    assert configs(database_url) == [str((tmp_path / "photos").resolve())]
