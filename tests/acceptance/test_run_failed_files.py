"""``safelight run`` and a file that failed (ADR 0057): the next run leaves it unread
and still lists it, ``--retry-failed`` reads it again, ``config retry-failed`` makes a
Worker's next crawl read it; and the other files a folder holds are counted."""

from __future__ import annotations

from pathlib import Path

import psycopg
import pytest

from safelight.testing.handlers import jpeg, write
from safelight.testing.invoking import Invoke
from tests.acceptance.harness import json_of

pytestmark = pytest.mark.acceptance

BROKEN = b"\xff\xd8\xff this is no JPEG at all, only its first three bytes"


def folder(tmp_path: Path) -> Path:
    root = tmp_path / "photos"
    write(root, "good.jpg", jpeg(1))
    write(root, "broken.jpg", BROKEN)
    write(root, "notes.txt", b"a note")
    write(root, "scans/list.pdf", b"%PDF-1.4")
    return root


def test_a_failed_file_is_listed_every_run_and_read_again_when_asked(
    invoke: Invoke, tmp_path: Path, database_url: str
) -> None:
    root = folder(tmp_path)

    first = json_of(invoke("run", str(root), "--json"))
    assert [e["path"] for e in first["errors"]] == ["broken.jpg"]
    reason = first["errors"][0]["reason"]
    assert (first["new"], first["not_retried"], first["other_files"]) == (1, 0, 2)

    second = json_of(invoke("run", str(root), "--json"))
    assert second["errors"] == [{"path": "broken.jpg", "reason": reason}]
    assert (second["not_retried"], second["other_files"]) == (1, 2)
    text = invoke("run", str(root)).output
    assert "1 file could not be ingested:" in text and "broken.jpg" in text
    assert "1 failed file unchanged since it failed; not read again: run --retry-failed" in (
        " ".join(text.split())
    )
    assert "2 other files left alone" in text

    asked = json_of(invoke("run", str(root), "--retry-failed", "--json"))
    assert asked["errors"] == [{"path": "broken.jpg", "reason": reason}]
    assert asked["not_retried"] == 0
    with psycopg.connect(database_url) as conn:
        row = conn.execute("SELECT failures FROM asset_errors").fetchone()
    assert row == (2,)  # read at the first run and at the one asked, not between


def test_config_retry_failed_queues_a_crawl_that_reads_them_again(
    invoke: Invoke, tmp_path: Path, database_url: str
) -> None:
    root = folder(tmp_path)
    config = json_of(invoke("run", str(root), "--json"))["config"]["id"]

    done = invoke("config", "retry-failed", config[:8])

    assert done.exit_code == 0, done.output
    assert f"1 failed file of {config}" in done.output
    with psycopg.connect(database_url) as conn:
        queued = conn.execute(
            "SELECT kind FROM work_items WHERE status = 'queued' AND storage_config_id = %s",
            (config,),
        ).fetchall()
        due = conn.execute("SELECT retry_after <= now() FROM asset_errors").fetchone()
    assert queued == [("crawl",)] and due == (True,)
    # The crawl it queued, run by this command's Workers, reads the file again.
    again = json_of(invoke("run", str(root), "--json"))
    assert again["not_retried"] == 0 and [e["path"] for e in again["errors"]] == ["broken.jpg"]
