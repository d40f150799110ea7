"""Settings that would put safelight's folders inside a library, or a library inside
them, refused by the commands a user types: one line, exit 2, both paths and the fix,
and nothing written."""

from __future__ import annotations

from pathlib import Path

import psycopg
import pytest

from safelight.testing.invoking import Invoke

pytestmark = pytest.mark.acceptance


def one_error_line(stderr: str) -> str:
    (line,) = stderr.splitlines()
    assert line.startswith("safelight: error: ")
    return line


def test_run_on_a_folder_that_holds_the_home_names_the_fix(
    invoke: Invoke, tmp_path: Path, database_url: str
) -> None:
    """``safelight run ~`` with the default home under ``~``."""
    user_home = tmp_path / "alice"
    (user_home / "Pictures").mkdir(parents=True)
    home = user_home / ".local" / "share" / "safelight"

    result = invoke("run", str(user_home), env={"SAFELIGHT_HOME": str(home)})

    assert result.exit_code == 2, result.output
    line = one_error_line(result.stderr)
    assert f"set SAFELIGHT_HOME outside {user_home.resolve()}" in line
    assert str(home.resolve()) in line
    assert not home.exists() or not any(home.rglob("*proxies*"))
    with psycopg.connect(database_url) as conn:
        assert conn.execute("SELECT count(*) FROM storage_configs").fetchone() == (0,)


@pytest.mark.parametrize("inside", ["proxies", "home"])
def test_config_add_inside_safelights_folders_is_refused(
    invoke: Invoke, tmp_path: Path, inside: str
) -> None:
    proxies = tmp_path / "proxies"
    library = tmp_path / inside / "photos"
    library.mkdir(parents=True)
    env = {"SAFELIGHT_PROXY_ROOT": str(proxies), "SAFELIGHT_HOME": str(tmp_path / "home")}

    result = invoke("config", "add", str(library), env=env)

    assert result.exit_code == 2, result.output
    assert f"{library.resolve()} is inside safelight's" in one_error_line(result.stderr)


def test_config_add_of_a_system_folder_is_refused(invoke: Invoke) -> None:
    result = invoke("config", "add", "/")
    assert result.exit_code == 2, result.output
    assert "/ is a system folder" in one_error_line(result.stderr)


def test_a_worker_refuses_to_start_beside_a_config_around_its_proxy_root(
    invoke: Invoke, tmp_path: Path, database_url: str
) -> None:
    """A config added before the proxy root was moved into it: the Worker's start
    checks every config, before it claims anything."""
    library = tmp_path / "library"
    library.mkdir()
    (library / "a.jpg").write_bytes(b"an original")
    added = invoke("config", "add", str(library))
    assert added.exit_code == 0, added.output
    invoke("enqueue", "proxy_sweep")

    result = invoke(
        "worker", "--until-idle", env={"SAFELIGHT_PROXY_ROOT": str(library / "proxies")}
    )

    assert result.exit_code == 2, result.output
    assert "set SAFELIGHT_PROXY_ROOT outside" in result.stderr.splitlines()[-1]
    assert sorted(p.name for p in library.iterdir()) == ["a.jpg"]
    with psycopg.connect(database_url) as conn:
        row = conn.execute("SELECT status::text FROM work_items WHERE kind = 'proxy_sweep'")
        assert row.fetchone() == ("queued",)


def test_a_worker_refuses_to_start_beside_a_disabled_config_around_its_proxy_root(
    invoke: Invoke, tmp_path: Path
) -> None:
    """Disabled, and another owner's than the Worker's: its folder still holds originals,
    and the marker and the sweep would write and delete in it."""
    library = tmp_path / "library"
    library.mkdir()
    (library / "a.jpg").write_bytes(b"an original")
    config_id = invoke("config", "add", str(library), "--user", "alice").stdout.strip()
    assert invoke("config", "disable", config_id).exit_code == 0
    moved = {"SAFELIGHT_PROXY_ROOT": str(library / "proxies")}

    result = invoke("worker", "--until-idle", "--user", "bob", env=moved)
    enabled = invoke("config", "enable", config_id[:8], env=moved)

    assert result.exit_code == 2, result.output
    line = one_error_line(result.stderr)
    assert f"storage config {config_id} of alice ({library.resolve()}, disabled)" in line
    assert "set SAFELIGHT_PROXY_ROOT outside" in line
    assert enabled.exit_code == 2, enabled.output
    assert "set SAFELIGHT_PROXY_ROOT outside" in one_error_line(enabled.stderr)
    assert sorted(p.name for p in library.iterdir()) == ["a.jpg"]
    again = invoke("config", "enable", config_id[:8])
    assert again.exit_code == 0 and f"enabled {config_id}" in again.stdout


@pytest.mark.parametrize("command", ["config add", "run"])
def test_a_folder_inside_or_around_a_registered_one_is_refused(
    invoke: Invoke, tmp_path: Path, database_url: str, command: str
) -> None:
    """Of another owner too: the photos would be indexed and shown twice."""
    photos = tmp_path / "photos"
    (photos / "2019").mkdir(parents=True)
    (tmp_path / "albums" / "trip").mkdir(parents=True)
    assert invoke("config", "add", str(photos), "--user", "alice").exit_code == 0
    assert invoke("config", "add", str(tmp_path / "albums" / "trip")).exit_code == 0

    inside = invoke(*command.split(), str(photos / "2019"), "--user", "bob")
    around = invoke(*command.split(), str(tmp_path / "albums"), "--user", "bob")

    assert inside.exit_code == 2, inside.output
    line = one_error_line(inside.stderr)
    assert f"{(photos / '2019').resolve()} lies inside {photos.resolve()}" in line
    assert f"safelight run {photos.resolve()} --user alice" in line
    assert around.exit_code == 2, around.output
    assert f"{(tmp_path / 'albums').resolve()} contains" in one_error_line(around.stderr)
    with psycopg.connect(database_url) as conn:
        assert conn.execute("SELECT count(*) FROM storage_configs").fetchone() == (2,)
