"""``safelight run`` and ``safelight demo`` end to end: a generated library in, a summary
and proxy files out, checked against the files on disk and the generator's manifest."""

from __future__ import annotations

import asyncio
import json
import shutil
from datetime import datetime
from pathlib import Path
from typing import Any

import psycopg
import pytest

from safelight.db.pool import connect
from safelight.settings import Settings
from safelight.testing.dng import dng_bytes
from safelight.testing.exif import exif_bytes
from safelight.testing.invoking import Invoke
from safelight.testing.motionphotos import samsung_motion_jpeg, tiny_mp4
from safelight.testing.samplegen import marker_picture
from tests.acceptance.harness import Sample, json_of

pytestmark = pytest.mark.acceptance


def proxy_paths(database_url: str, config_id: str) -> list[str]:
    with psycopg.connect(database_url) as conn:
        rows = conn.execute(
            "SELECT p.path FROM proxy_files p JOIN assets a ON a.id = p.asset_id"
            " WHERE a.storage_config_id = %s AND p.path IS NOT NULL",
            (config_id,),
        ).fetchall()
    return [row[0] for row in rows]


def test_run_indexes_a_library_and_a_second_run_reuses_it(
    invoke: Invoke, sample_library: Sample, database_url: str, home: Path
) -> None:
    manifest = sample_library.manifest
    first = invoke("run", str(sample_library.root), "--json")
    assert first.exit_code == 0, first.output
    summary = json_of(first)  # stdout is the one JSON document and nothing else

    assert summary["status"] == "succeeded"
    assert summary["config"]["root"] == str(sample_library.root.resolve())
    assert summary["config"]["created"] is True
    assert summary["assets"] == {
        "image": len(manifest.photos),
        "video": len(manifest.videos),
        "total": len(manifest.photos) + len(manifest.videos),
    }
    assert summary["files"] == len(manifest.photos) + len(manifest.videos) + len(manifest.errors)
    assert summary["new"] == len(manifest.photos) + len(manifest.videos)
    assert summary["bursts"] == len(manifest.bursts)
    assert summary["burst_assets"] == sum(len(b.paths) for b in manifest.bursts)
    assert summary["live_photos"] == sum(1 for p in manifest.live_pairs if p.video)
    dated_by_file = [p for p in manifest.photos if p.captured_at_source == "file"]
    assert summary["photos_dated_by_file"] == len(dated_by_file) > 0
    # Each broken file is listed with its reason; nothing else failed.
    assert sorted(e["path"] for e in summary["errors"]) == sorted(e.path for e in manifest.errors)
    assert all(e["reason"] for e in summary["errors"])
    assert {i["kind"]: i["outcome"] for i in summary["items"]} == {
        "crawl": "succeeded",
        "burst_detection": "succeeded",
    }
    assert summary["seconds"] > 0 and summary["files_per_second"] > 0
    assert "secret" not in first.output

    # Every proxy the database knows is a file on disk, where the summary says.
    # A server's proxies go to a proxy root of its own in the home (library.proxystore.proxyroot).
    proxy_root = Settings(home=home, database_url=database_url).proxies
    assert proxy_root.parent == home.resolve() and proxy_root.name.startswith("proxies-")
    folder = Path(summary["proxies"]["folder"])
    assert folder == (proxy_root / summary["config"]["id"]).resolve()
    paths = proxy_paths(database_url, summary["config"]["id"])
    assert summary["proxies"]["made"] >= len(paths) == summary["proxies"]["files"] > 0
    for relative in paths:
        assert (proxy_root / relative).is_file(), relative

    second = invoke("run", str(sample_library.root), "--json")
    assert second.exit_code == 0, second.output
    again = json_of(second)
    assert again["config"]["id"] == summary["config"]["id"]
    assert again["config"]["created"] is False
    assert again["new"] == 0 and again["proxies"]["made"] == 0
    assert again["unchanged"] == summary["assets"]["total"]
    assert again["assets"] == summary["assets"]
    assert again["crawl"]["item_id"] != summary["crawl"]["item_id"]


def test_run_prints_progress_lines_and_a_readable_summary(
    invoke: Invoke, small_library: Path
) -> None:
    result = invoke("run", str(small_library))
    assert result.exit_code == 0, result.output
    out = result.stdout
    # Not a terminal: plain progress lines, then the summary.
    assert "crawl small ·" in out
    assert "crawl small: succeeded" in out
    assert "Done in" in out and "files/s" in out
    assert "3 photos, 0 videos" in out
    assert "3 new, 0 moved" in out
    assert "proxies" in out and str(small_library.name) in out
    assert "Traceback" not in result.output


def test_a_gone_file_is_soft_deleted_listed_and_purged(invoke: Invoke, small_library: Path) -> None:
    first = json_of(invoke("run", str(small_library), "--json"))
    config_id = first["config"]["id"]
    gone = sorted(small_library.rglob("*.*"))[0]
    gone.unlink()
    second = json_of(invoke("run", str(small_library), "--json"))
    assert second["deleted"] == 1 and second["soft_deleted_total"] == 1
    assert second["assets"]["total"] == 2

    deleted = json_of(invoke("assets", "--deleted", "--json", "--config", config_id[:8]))
    assert [a["file_path"] for a in deleted] == [gone.relative_to(small_library).as_posix()]
    assert deleted[0]["deleted_at"] is not None
    live = json_of(invoke("assets", "--json"))
    assert len(live) == 2 and all(a["deleted_at"] is None for a in live)
    listing = invoke("assets", "--deleted")
    assert gone.name in listing.stdout and "soft-deleted assets" in listing.stdout

    purge = invoke("purge", config_id)
    assert purge.exit_code == 0, purge.output
    item_id = int(purge.stdout.strip().splitlines()[-1])
    assert invoke("purge", config_id).stdout.strip() == str(item_id)  # deduplicated
    assert invoke("worker", "--until-idle").exit_code == 0
    assert json_of(invoke("items", "show", str(item_id), "--json"))["status"] == "succeeded"
    assert json_of(invoke("assets", "--deleted", "--json")) == []


def test_duplicates_are_named_in_the_summary_and_by_assets(
    invoke: Invoke, small_library: Path
) -> None:
    original = sorted(small_library.rglob("*.*"))[0]
    copy = small_library / "copies" / f"copy of {original.name}"
    copy.parent.mkdir()
    shutil.copy2(original, copy)
    first = json_of(invoke("run", str(small_library), "--json"))
    names = {
        copy.relative_to(small_library).as_posix(),
        original.relative_to(small_library).as_posix(),
    }
    [dup] = first["duplicate_files"]
    assert first["duplicates"] == 1 and {dup["path"], dup["same_as"]} == names

    listed = json_of(invoke("assets", "--duplicates", "--json"))
    assert [(d["file_path"], d["same_as"]) for d in listed] == [(dup["path"], dup["same_as"])]
    live = {a["file_path"]: a["id"] for a in json_of(invoke("assets", "--json"))}
    assert listed[0]["asset_id"] == live[dup["same_as"]]
    text = " ".join(invoke("assets", "--duplicates").stdout.split())
    assert "duplicates" in text and Path(dup["path"]).name in text
    readable = " ".join(invoke("run", str(small_library)).stdout.split())
    assert f"{dup['path']} same as {dup['same_as']}" in readable
    both = invoke("assets", "--duplicates", "--deleted")
    assert both.exit_code == 2 and "do not go together" in both.output


@pytest.mark.skipif(shutil.which("ffmpeg") is None, reason="ffmpeg not installed")
def test_a_motion_photo_is_counted_and_shown_by_assets(
    invoke: Invoke, small_library: Path, tmp_path: Path
) -> None:
    video = tiny_mp4(tmp_path / "tiny.mp4")
    (small_library / "motion.jpg").write_bytes(samsung_motion_jpeg(video))
    summary = json_of(invoke("run", str(small_library), "--json"))
    assert summary["motion_photos"] == 1 and summary["motion_photo_issues"] == []
    listed = {a["file_path"]: a for a in json_of(invoke("assets", "--json"))}
    assert listed["motion.jpg"]["motion_photo"] is True
    assert sum(a["motion_photo"] for a in listed.values()) == 1
    assert "motion photo" in invoke("assets").stdout
    assert "1 motion photo" in " ".join(invoke("run", str(small_library)).stdout.split())


def test_run_exits_1_when_the_crawl_fails(invoke: Invoke, small_library: Path) -> None:
    assert invoke("run", str(small_library), "--json").exit_code == 0
    # A folder that suddenly holds no media while the library has some looks like an
    # unmounted share: the crawl fails and deletes nothing.
    for file in small_library.rglob("*.*"):
        file.unlink()
    result = invoke("run", str(small_library), "--json")
    assert result.exit_code == 1
    summary = json.loads(result.stdout)
    assert summary["status"] == "failed" and summary["crawl"]["status"] == "failed"
    assert "mounted" in summary["crawl"]["error"]
    assert summary["assets"]["total"] == 3 and summary["deleted"] == 0
    text = invoke("run", str(small_library))
    assert text.exit_code == 1
    assert "The crawl did not succeed" in text.stdout


@pytest.mark.parametrize("what", ["missing", "file"])
def test_run_refuses_a_path_that_is_not_a_folder(invoke: Invoke, tmp_path: Path, what: str) -> None:
    target = tmp_path / what
    if what == "file":
        target.write_text("not a folder")
    result = invoke("run", str(target))
    assert result.exit_code == 2
    assert result.stdout == ""
    (line,) = result.stderr.splitlines()
    assert line.startswith("safelight: error: ") and str(target) in line
    assert json_of(invoke("config", "list", "--json")) == []


def test_run_with_another_owner_registers_the_folder_for_them(
    invoke: Invoke, small_library: Path
) -> None:
    summary = json_of(invoke("run", str(small_library), "--user", "carol", "--json"))
    assert summary["config"]["owner"] == "carol" and summary["status"] == "succeeded"
    configs = json_of(invoke("config", "list", "--json"))
    assert [(c["owner"], c["id"]) for c in configs] == [("carol", summary["config"]["id"])]


def test_demo_makes_its_library_once_and_runs_on_it(invoke: Invoke, home: Path) -> None:
    first = invoke("demo", "--json")
    assert first.exit_code == 0, first.output
    summary = json_of(first)
    library = home / "demo-library"
    assert summary["config"]["root"] == str(library.resolve())
    assert summary["status"] == "succeeded"
    assert summary["assets"]["image"] > 10 and summary["bursts"] >= 1
    assert {e["path"] for e in summary["errors"]} >= {"broken/truncated.jpg"}
    marker = library / "left-by-the-test"
    marker.write_text("the demo library is reused, not made again")

    second = invoke("demo")
    assert second.exit_code == 0, second.output
    assert f"Using the demo library in {library}" in second.stdout
    assert marker.exists()
    assert "could not be ingested" in second.stdout


def test_db_migrate_reports_an_up_to_date_database(invoke: Invoke) -> None:
    result = invoke("db", "migrate")
    assert result.exit_code == 0, result.output
    assert "up to date" in result.stdout


async def _count(database_url: str, sql: str) -> Any:
    conn = await connect(database_url)
    try:
        cur = await conn.execute(sql)
        row = await cur.fetchone()
        return None if row is None else row[0]
    finally:
        await conn.close()


def test_nothing_is_left_running_after_a_run(
    invoke: Invoke, small_library: Path, database_url: str
) -> None:
    assert invoke("run", str(small_library), "--json").exit_code == 0
    running = asyncio.run(
        _count(database_url, "SELECT count(*) FROM work_items WHERE status <> 'succeeded'")
    )
    assert running == 0


# Clears the screen, returns over the line, an 8-bit CSI, a right-to-left override, a
# line feed, and rich markup: all legal in a file name (a "/" is not, so no closing tag).
HOSTILE = "\x1b[2J\r\x9b31m\u202e\n[bold]x[red]y"
HOSTILE_SHOWN = "\\x1b[2J\\r\\x9b31m\\u202e\\n[bold]x[red]y"
RAW = ("\x1b", "\r", "\x9b", "\u202e")


def test_names_with_terminal_controls_are_shown_escaped_and_listed_exactly(
    invoke: Invoke, sample_library: Sample, tmp_path: Path
) -> None:
    root = tmp_path / f"lib{HOSTILE}"
    root.mkdir()
    photo = next(p.path for p in sample_library.manifest.photos if p.path.endswith(".jpg"))
    (root / f"photo{HOSTILE}.jpg").write_bytes((sample_library.root / photo).read_bytes())
    (root / f"broken{HOSTILE}.jpg").write_bytes(b"\xff\xd8\xff not a JPEG")

    text = invoke("run", str(root))
    assert text.exit_code == 0, text.output
    assert not any(c in text.output for c in RAW)
    out = text.stdout
    assert f"crawl lib{HOSTILE_SHOWN}: succeeded" in out  # the progress line
    assert f"lib{HOSTILE_SHOWN} (config" in out  # the summary's folder
    assert f"broken{HOSTILE_SHOWN}.jpg" in out  # the summary's errors
    for listing in (invoke("assets"), invoke("config", "list"), invoke("status")):
        assert listing.exit_code == 0, listing.output
        assert not any(c in listing.output for c in RAW)
    assert f"photo{HOSTILE_SHOWN}.jpg" in invoke("assets").stdout
    assert f"lib{HOSTILE_SHOWN}" in invoke("config", "list").stdout

    # The JSON says the same exactly, in escapes a terminal shows as they are.
    document = invoke("run", str(root), "--json")
    assert not any(c in document.stdout for c in RAW)
    summary = json_of(document)
    assert summary["config"]["root"] == str(root.resolve())
    assert [e["path"] for e in summary["errors"]] == [f"broken{HOSTILE}.jpg"]
    assert [a["file_path"] for a in json_of(invoke("assets", "--json"))] == [f"photo{HOSTILE}.jpg"]


def test_run_stacks_a_raw_and_copies_on_their_jpeg_and_assets_shows_each_link(
    invoke: Invoke, tmp_path: Path
) -> None:
    taken = datetime(2022, 7, 3, 11, 15, 0)
    folder = tmp_path / "raw+jpeg"
    folder.mkdir()
    marker_picture(64, 48, seed=4).save(
        folder / "IMG_0001.JPG",
        "JPEG",
        exif=exif_bytes(make="Canon", model="Canon EOS 6D", captured_at=taken),
    )
    (folder / "IMG_0001.DNG").write_bytes(
        dng_bytes(preview=marker_picture(64, 48, seed=4), captured_at=taken)
    )
    # Its WebP export and an edited copy (ADR 0056): other files of the capture too.
    camera_exif = exif_bytes(make="Canon", model="Canon EOS 6D", captured_at=taken)
    marker_picture(64, 48, seed=4).save(folder / "IMG_0001.webp", "WEBP", exif=camera_exif)
    marker_picture(64, 48, seed=9).save(folder / "IMG_0001-edited.jpg", "JPEG", exif=camera_exif)

    summary = json_of(invoke("run", str(folder), "--json"))

    assert summary["status"] == "succeeded" and summary["new"] == 4
    assert summary["stacks"] == 1 and summary["bursts"] == 0
    assert summary["copies"] == 2
    rows = {a["file_path"]: a for a in json_of(invoke("assets", "--json"))}
    assert rows["IMG_0001.DNG"]["stack_primary_id"] == rows["IMG_0001.JPG"]["id"]
    assert rows["IMG_0001.DNG"]["camera_model"] == "Canon EOS 6D"
    listing = " ".join(invoke("assets").stdout.split())
    assert f"RAW of {rows['IMG_0001.JPG']['id']}" in listing
    assert f"format of {rows['IMG_0001.JPG']['id']}" in listing
    assert f"copy of {rows['IMG_0001.JPG']['id']}" in listing
    assert rows["IMG_0001.webp"]["stack_kind"] == "format"
    again = " ".join(invoke("run", str(folder)).stdout.split())
    assert "1 RAW stacked on its JPEG" in again
    assert "2 other files of a capture (another format, a copy) stacked on the original" in again
