"""The real ``safelight`` process: exit codes, one-line errors without a traceback or a
password, Ctrl-C in the middle of a crawl, and a run on the embedded PostgreSQL."""

from __future__ import annotations

import json
import signal
import time
from pathlib import Path

import psycopg
import pytest
from psycopg import sql

from safelight.db.embedded import DATA_FOLDER
from tests.acceptance.harness import Sample, safelight_process, start_safelight
from tests.reaper import remove_folder, temporary_folder

pytestmark = pytest.mark.acceptance


def assert_one_line_error(stderr: str, *needles: str) -> None:
    assert "Traceback" not in stderr
    (line,) = stderr.splitlines()
    assert line.startswith("safelight: error: ")
    for needle in needles:
        assert needle in line


def test_an_unreachable_database_is_exit_3_without_its_password(tmp_path: Path) -> None:
    url = "postgresql://u:secret@127.0.0.1:1/x"
    (tmp_path / "library").mkdir()  # beside the home, not around it
    for args, env in (
        (("--database-url", url, "status"), {}),
        (("items",), {"SAFELIGHT_DATABASE_URL": url}),
        (("run", str(tmp_path / "library")), {"SAFELIGHT_DATABASE_URL": url}),
        # As every other command: one line, no pool warnings, no 30 s wait for the pool.
        (("db", "migrate"), {"SAFELIGHT_DATABASE_URL": url}),
    ):
        done = safelight_process(*args, env={"SAFELIGHT_HOME": str(tmp_path / "h"), **env})
        assert done.returncode == 3, done.stderr
        assert done.stdout == ""
        assert_one_line_error(done.stderr, "cannot reach the database", "u:***@127.0.0.1:1")
        assert "secret" not in done.stderr + done.stdout


@pytest.mark.parametrize(
    "url",
    [
        "mysql://u:hunter2@db.example/x",
        "garbage",
        "postgresql://[bad",
        "postgresql://u:hunter2@[bad/x",
        "u:hunter2@db.example",
        "sqlite:///photos.db",
    ],
)
def test_a_url_that_is_not_postgresql_is_exit_2_naming_the_setting(
    tmp_path: Path, url: str
) -> None:
    for args in (("status",), ("db", "migrate")):
        done = safelight_process(
            *args, env={"SAFELIGHT_HOME": str(tmp_path), "SAFELIGHT_DATABASE_URL": url}
        )
        assert done.returncode == 2, done.stderr
        assert done.stdout == ""
        assert_one_line_error(
            done.stderr, "database_url (SAFELIGHT_DATABASE_URL) is not a PostgreSQL connection"
        )
        assert "hunter2" not in done.stderr and "internal error" not in done.stderr


def test_a_home_that_is_not_a_folder_is_exit_2_naming_the_setting(tmp_path: Path) -> None:
    a_file = tmp_path / "a-file"
    a_file.write_text("not a folder")
    for home, needle in (
        (a_file, f"home (SAFELIGHT_HOME) must be a folder, and {a_file} is not one"),
        (a_file / "home", f"home (SAFELIGHT_HOME) {a_file / 'home'} cannot be made: {a_file}"),
        (Path("/proc/safelight-home"), "home (SAFELIGHT_HOME) /proc/safelight-home cannot be"),
    ):
        for args in (("status",), ("db", "migrate"), ("run", str(tmp_path))):
            done = safelight_process(*args, env={"SAFELIGHT_HOME": str(home)})
            assert done.returncode == 2, done.stderr
            assert_one_line_error(done.stderr, needle)
    assert a_file.read_text() == "not a folder"


def test_invalid_settings_name_the_setting_before_anything_starts(tmp_path: Path) -> None:
    env = {
        "SAFELIGHT_HOME": str(tmp_path),
        "SAFELIGHT_DATABASE_URL": "postgresql://u@127.0.0.1:1/x",
    }
    done = safelight_process("status", env={**env, "SAFELIGHT_LEASE_SECONDS": "abc"})
    assert done.returncode == 2
    assert_one_line_error(done.stderr, "lease_seconds", "SAFELIGHT_LEASE_SECONDS", "'abc'")
    done = safelight_process("--heartbeat-seconds", "30", "status", env=env)
    assert done.returncode == 2
    assert_one_line_error(done.stderr, "heartbeat_seconds", "quarter")
    # Help still works with a broken setting in the environment.
    done = safelight_process("items", "--help", env={**env, "SAFELIGHT_LEASE_SECONDS": "abc"})
    assert done.returncode == 0 and "Usage: safelight items" in done.stdout


def test_help_documents_the_exit_codes() -> None:
    done = safelight_process("--help", env={})
    assert done.returncode == 0
    text = " ".join(done.stdout.split())
    for code in (
        "0 ok",
        "1 work failed",
        "2 invalid input",
        "3 database unavailable",
        "130 interrupted",
    ):
        assert code in text


def test_a_payload_its_kind_does_not_take_is_exit_2_in_a_real_process(
    tmp_path: Path, database_url: str
) -> None:
    env = {"SAFELIGHT_HOME": str(tmp_path), "SAFELIGHT_DATABASE_URL": database_url}
    done = safelight_process("enqueue", "noop", "--payload", '{"seconds": "abc"}', env=env)
    assert done.returncode == 2, done.stderr
    assert done.stdout == ""
    assert_one_line_error(done.stderr, 'enqueue noop: payload field "seconds": expected a number')
    with psycopg.connect(database_url) as conn:
        assert conn.execute("SELECT count(*) FROM work_items").fetchone() == (0,)


def test_bad_paths_are_exit_2_in_a_real_process(tmp_path: Path, database_url: str) -> None:
    env = {"SAFELIGHT_HOME": str(tmp_path), "SAFELIGHT_DATABASE_URL": database_url}
    done = safelight_process("run", str(tmp_path / "missing"), env=env)
    assert done.returncode == 2
    assert_one_line_error(done.stderr, "does not exist")
    (tmp_path / "a-file").write_text("x")
    done = safelight_process("run", str(tmp_path / "a-file"), "--json", env=env)
    assert done.returncode == 2 and done.stdout == ""
    assert_one_line_error(done.stderr, "is not a folder")


def _count(database_url: str, table: str) -> int:
    with psycopg.connect(database_url) as conn:
        row = conn.execute(sql.SQL("SELECT count(*) FROM {}").format(sql.Identifier(table)))
        counted = row.fetchone()
    assert counted is not None
    return int(counted[0])


def _crawl_status(database_url: str) -> str | None:
    with psycopg.connect(database_url) as conn:
        row = conn.execute(
            "SELECT status::text FROM work_items WHERE kind = 'crawl' ORDER BY id LIMIT 1"
        ).fetchone()
    return None if row is None else str(row[0])


def test_ctrl_c_releases_the_crawl_and_the_next_run_continues(
    sample_library: Sample, database_url: str, tmp_path: Path
) -> None:
    env = {
        "SAFELIGHT_HOME": str(tmp_path),
        "SAFELIGHT_DATABASE_URL": database_url,
        # One file at a time, so the crawl is still running when the signal lands.
        "SAFELIGHT_MAX_CONCURRENT_FILES": "1",
    }
    process = start_safelight("run", str(sample_library.root), "--workers", "1", "--json", env=env)
    try:
        deadline = time.monotonic() + 30
        # Once the crawl has ingested something, so that the summary has something to say.
        while _crawl_status(database_url) != "running" or _count(database_url, "assets") < 2:
            assert process.poll() is None, process.communicate()
            assert time.monotonic() < deadline, "the crawl never started"
            time.sleep(0.02)
        process.send_signal(signal.SIGINT)
        stdout, stderr = process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    assert process.returncode == 130, stderr
    assert "Traceback" not in stderr
    first = json.loads(stdout)
    assert first["status"] == "interrupted" and first["exit_code"] == 130
    assert first["crawl"]["status"] == "queued"
    with psycopg.connect(database_url) as conn:
        outcomes = conn.execute(
            "SELECT outcome::text FROM work_attempts WHERE work_item_id = %s",
            (first["crawl"]["item_id"],),
        ).fetchall()
    assert outcomes == [("released",)]
    # It says what this run did, as the crawl saved it (not "0 new"): every asset it
    # counted is in the database; one whose commit the signal interrupted may be
    # missing from the count, never the other way round.
    ingested = _count(database_url, "assets")
    assert first["new"] >= 2 and first["new"] in (ingested, ingested - 1)
    assert first["proxies"]["made"] >= 2 * first["new"]
    shown = safelight_process("items", "show", str(first["crawl"]["item_id"]), "--json", env=env)
    assert shown.returncode == 0, shown.stderr
    progress = json.loads(shown.stdout)["progress"]
    assert progress["attempt"] == 1 and progress["counts"]["ingested"] == first["new"]
    human = safelight_process("items", "show", str(first["crawl"]["item_id"]), env=env)
    assert f"ingested {first['new']}," in " ".join(human.stdout.split())

    done = safelight_process("run", str(sample_library.root), "--json", env=env)
    assert done.returncode == 0, done.stderr
    second = json.loads(done.stdout)
    # The same crawl item, run again from the queue, with everything ingested by the end.
    assert second["crawl"]["item_id"] == first["crawl"]["item_id"]
    assert second["status"] == "succeeded"
    manifest = sample_library.manifest
    assert second["assets"]["total"] == len(manifest.photos) + len(manifest.videos)


def test_run_on_the_embedded_database_with_no_url(sample_library: Sample) -> None:
    # Not pytest's tmp_path: pytest resets its base folder to mode 0700 whenever a session
    # starts, and as root the embedded server runs as another user, who must be able to
    # reach its data folder for the whole run (safelight opens no folder for it).
    scratch = temporary_folder("safelight-cli-embedded-", homes=True)  # tied to the session
    scratch.chmod(0o711)
    try:
        _run_on_the_embedded_database(sample_library, scratch / "home")
    finally:
        remove_folder(scratch, homes=True)


def _run_on_the_embedded_database(sample_library: Sample, home: Path) -> None:
    done = safelight_process(
        "run", str(sample_library.root), "--json", env={"SAFELIGHT_HOME": str(home)}, timeout=180
    )
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert summary["status"] == "succeeded"
    assert summary["database"] == f"embedded PostgreSQL in {home / DATA_FOLDER}"
    assert summary["assets"]["image"] == len(sample_library.manifest.photos)
    assert "Traceback" not in done.stderr
    # The server stops when the last process using it exits.
    pid_file = home / DATA_FOLDER / "postmaster.pid"
    deadline = time.monotonic() + 20
    while pid_file.exists():
        assert time.monotonic() < deadline, "the embedded PostgreSQL is still running"
        time.sleep(0.1)


def test_a_worker_stopped_by_sigterm_releases_its_item_and_exits_0(
    database_url: str, tmp_path: Path
) -> None:
    env = {"SAFELIGHT_HOME": str(tmp_path), "SAFELIGHT_DATABASE_URL": database_url}
    enqueued = safelight_process("enqueue", "noop", "--payload", '{"seconds": 60}', env=env)
    assert enqueued.returncode == 0, enqueued.stderr
    item_id = int(enqueued.stdout.strip().splitlines()[-1])
    process = start_safelight("worker", "--name", "sigterm-test", env=env)
    try:
        deadline = time.monotonic() + 30
        while True:
            with psycopg.connect(database_url) as conn:
                row = conn.execute(
                    "SELECT status::text FROM work_items WHERE id = %s", (item_id,)
                ).fetchone()
            if row is not None and row[0] == "running":
                break
            assert process.poll() is None, process.communicate()
            assert time.monotonic() < deadline, "the worker never claimed the item"
            time.sleep(0.02)
        process.send_signal(signal.SIGTERM)
        stdout, stderr = process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    assert process.returncode == 0, stderr
    assert stdout == "" and "Traceback" not in stderr
    assert "SIGTERM" in stderr  # the Worker says what it is doing, on stderr
    with psycopg.connect(database_url) as conn:
        status = conn.execute("SELECT status::text FROM work_items WHERE id = %s", (item_id,))
        assert status.fetchone() == ("queued",)
        outcome = conn.execute(
            "SELECT worker_id, outcome::text FROM work_attempts WHERE work_item_id = %s",
            (item_id,),
        ).fetchall()
    assert [o for _, o in outcome] == ["released"]
    assert outcome[0][0].startswith("sigterm-test")
