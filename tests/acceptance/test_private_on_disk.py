"""Private on disk (issue #28 item 7, ADR 0043): the home, the proxy root and the proxies
are safelight's user's alone (or also the read group's), a home left open by an earlier
release is tightened at the start with one line, and nothing is changed through a link.

The commands run in this process (click's CliRunner) against the test's own database,
on real files; as root, what another local user can reach is tried for real, by
running ``ls`` and ``cat`` as ``nobody``.
"""

from __future__ import annotations

import grp
import os
import pwd
import stat
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from safelight.cli.state import CliState
from safelight.db.database import Database
from safelight.db.embedded import DATA_FOLDER
from safelight.settings import Settings
from safelight.testing.invoking import Invoke
from safelight.testing.tinylibrary import write_photo
from tests.reaper import remove_folder, temporary_folder

pytestmark = pytest.mark.acceptance

LINE = "made safelight's files private (ADR 0043)"
AS_ROOT = os.geteuid() == 0
# As root the home lets the embedded server's own user pass (ADR 0043): 0701, 0751.
HOME_MODE = 0o701 if AS_ROOT else 0o700
GROUP_HOME_MODE = 0o751 if AS_ROOT else 0o750
PRIMARY_GROUP = grp.getgrgid(os.getegid())


@pytest.fixture
def scratch() -> Iterator[Path]:
    """Not pytest's tmp_path, whose base folder is 0700: another user could reach
    nothing in it whatever safelight did, and as root the embedded server's user must
    reach the home. This one is 0755, as a user's home folder often is."""
    folder = temporary_folder("safelight-private-", homes=True)  # tied to the session
    folder.chmod(0o755)
    try:
        yield folder
    finally:
        remove_folder(folder, homes=True)


@pytest.fixture
def home(scratch: Path) -> Path:
    return scratch / "home"


@pytest.fixture
def library(scratch: Path) -> Path:
    root = scratch / "library"
    (root / "2024").mkdir(parents=True)
    for number in range(3):
        write_photo(root / "2024" / f"p{number}.jpg", number)
    return root


def proxy_root(home: Path) -> Path:
    (found,) = [p for p in home.iterdir() if p.name.startswith("proxies")]
    return found


def tree(root: Path) -> tuple[list[Path], list[Path]]:
    """The folders (the root among them) and files below ``root``, links not followed."""
    folders, files = [root], []
    for folder, dirs, names in os.walk(root):
        folders += [Path(folder, d) for d in dirs]
        files += [Path(folder, n) for n in names]
    return folders, files


def mode(path: Path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


def private_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if LINE in line]


def test_a_new_home_and_its_proxies_are_private(invoke: Invoke, home: Path, library: Path) -> None:
    result = invoke("run", str(library))
    assert result.exit_code == 0, result.output
    # Made private, not tightened: nothing to say.
    assert private_lines(result.stderr) == []
    assert mode(home) == HOME_MODE
    folders, files = tree(proxy_root(home))
    proxies = [f for f in files if f.suffix == ".jpg"]
    assert len(proxies) >= 6  # a thumbnail and a preview of each photo
    assert {mode(f) for f in folders} == {0o700}
    assert {mode(f) for f in files} == {0o600}


def loosen(home: Path) -> tuple[int, int]:
    """What an earlier release left: the home and the proxy root's folders 0755, its
    files 0644. Returns how many folders and files of the proxy root."""
    home.chmod(0o755)
    folders, files = tree(proxy_root(home))
    for folder in folders:
        folder.chmod(0o755)
    for file in files:
        file.chmod(0o644)
    return len(folders), len(files)


def test_an_old_home_is_tightened_once_with_one_line_and_no_link_is_followed(
    invoke: Invoke, home: Path, library: Path, scratch: Path
) -> None:
    assert invoke("run", str(library)).exit_code == 0
    folder_count, file_count = loosen(home)
    root = proxy_root(home)
    # Links in the home and in an asset's folder, to files outside both: their targets
    # keep their modes. A file of someone else's in the proxy root is not safelight's.
    outside = scratch / "outside.txt"
    outside.write_text("not safelight's")
    outside.chmod(0o644)
    (home / "link-out").symlink_to(outside)
    asset_folder = next(p for p in tree(root)[1] if p.suffix == ".jpg").parent
    (asset_folder / "thumbnail.9-1.jpg").symlink_to(outside)
    foreign = root / "notes.txt"
    foreign.write_text("someone else's")
    foreign.chmod(0o644)

    result = invoke("run", str(library))
    assert result.exit_code == 0, result.output
    (line,) = private_lines(result.stderr)
    assert f"the home {home}: 1 folder from 0755 to {HOME_MODE:04o}" in line
    assert f"the proxy root {root}: {folder_count:,} folders from 0755 to 0700" in line
    # Every file of the layout and the marker; not the foreign file.
    assert f"{file_count:,} files from 0644 to 0600" in line

    assert mode(home) == HOME_MODE
    folders, files = tree(root)
    assert {mode(f) for f in folders} == {0o700}
    assert {mode(f) for f in files if f != foreign and not f.is_symlink()} == {0o600}
    assert mode(foreign) == 0o644
    assert mode(outside) == 0o644  # through neither link

    again = invoke("run", str(library))
    assert again.exit_code == 0, again.output
    assert private_lines(again.stderr) == []  # once: the root is settled


def test_a_named_group_may_read_the_home_and_the_proxies(
    invoke: Invoke, home: Path, library: Path
) -> None:
    group = {"SAFELIGHT_READ_GROUP": PRIMARY_GROUP.gr_name}
    result = invoke("run", str(library), env=group)
    assert result.exit_code == 0, result.output
    assert mode(home) == GROUP_HOME_MODE and home.stat().st_gid == PRIMARY_GROUP.gr_gid
    folders, files = tree(proxy_root(home))
    assert {mode(f) for f in folders} == {0o2750}
    assert {mode(f) for f in files} == {0o640}
    assert {f.stat().st_gid for f in folders + files} == {PRIMARY_GROUP.gr_gid}

    # Started without the group, a process makes them its user's alone again, and says so.
    result = invoke("run", str(library))
    assert result.exit_code == 0, result.output
    (line,) = private_lines(result.stderr)
    assert "folders from 2750 to 0700" in line and "files from 0640 to 0600" in line
    folders, files = tree(proxy_root(home))
    assert {mode(f) for f in folders} == {0o700} and {mode(f) for f in files} == {0o600}


def test_a_group_that_does_not_exist_is_refused_without_repeating_the_name(
    invoke: Invoke,
) -> None:
    by_env = invoke("status", env={"SAFELIGHT_READ_GROUP": "no-such-group-xq7"})
    by_flag = invoke("--read-group", "no-such-group-xq7", "status")
    for result in (by_env, by_flag):
        assert result.exit_code == 2
        said = result.output
        assert "read_group (SAFELIGHT_READ_GROUP) must name a group of this machine" in said
        assert "no-such-group-xq7" not in said


def run_as_nobody(command: list[str], group: int) -> subprocess.CompletedProcess[str]:
    """``command`` as the user nobody, in ``group`` alone."""
    nobody = pwd.getpwnam("nobody")
    return subprocess.run(
        command,
        user=nobody.pw_uid,
        group=group,
        extra_groups=[],
        capture_output=True,
        text=True,
        errors="replace",  # cat prints a JPEG
        check=False,
    )


@pytest.mark.skipif(not AS_ROOT, reason="trying another user's view needs root")
def test_another_local_user_can_neither_list_the_home_nor_read_a_proxy(
    invoke: Invoke, home: Path, library: Path, scratch: Path
) -> None:
    assert invoke("run", str(library)).exit_code == 0
    proxy = next(f for f in tree(proxy_root(home))[1] if f.suffix == ".jpg")
    nogroup = pwd.getpwnam("nobody").pw_gid
    # The control: nobody reaches the folder the home is in, and reads a file there.
    control = scratch / "open.txt"
    control.write_text("anyone")
    control.chmod(0o644)
    assert run_as_nobody(["cat", str(control)], nogroup).returncode == 0

    listing = run_as_nobody(["ls", str(home)], nogroup)
    assert listing.returncode != 0 and "Permission denied" in listing.stderr
    reading = run_as_nobody(["cat", str(proxy)], nogroup)
    assert reading.returncode != 0 and "Permission denied" in reading.stderr

    # A member of the read group may read them (root's group here: nobody joins it).
    group = {"SAFELIGHT_READ_GROUP": PRIMARY_GROUP.gr_name}
    assert invoke("run", str(library), env=group).exit_code == 0
    member = run_as_nobody(["cat", str(proxy)], PRIMARY_GROUP.gr_gid)
    assert member.returncode == 0, member.stderr
    assert run_as_nobody(["ls", str(home)], PRIMARY_GROUP.gr_gid).returncode == 0
    # And the others still may not.
    assert run_as_nobody(["cat", str(proxy)], nogroup).returncode != 0


def test_the_embedded_database_starts_from_a_tightened_home(
    scratch: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A home of an earlier release (0755, its embedded server made then) is tightened
    at the start, and the embedded server starts again from it: as root its own user
    still passes through the home (0701)."""
    for name in [n for n in os.environ if n.startswith("SAFELIGHT_")]:
        monkeypatch.delenv(name)
    home = scratch / "home"
    home.mkdir(mode=0o755)
    home.chmod(0o755)

    async def one(database: Database, settings: Settings) -> tuple[int, Any]:
        async with database.pool.connection() as conn:
            cur = await conn.execute("SELECT 1")
            row = await cur.fetchone()
        assert row is not None
        return int(row[0]), database.embedded_handle

    first = CliState(overrides={"home": home})
    answer, handle = first.with_database(one, long_running=True)
    handle.cleanup()  # the last user: the server stops
    assert answer == 1 and mode(home) == HOME_MODE
    # The next start finds the tightened home, and its server starts from it.
    second = CliState(overrides={"home": home})
    answer, handle = second.with_database(one, long_running=True)
    handle.cleanup()
    assert answer == 1 and mode(home) == HOME_MODE
    assert mode(home / DATA_FOLDER) == 0o700
    # With a read group too (0751 as root: the server's user is not in the group).
    grouped = CliState(overrides={"home": home, "read_group": PRIMARY_GROUP.gr_name})
    answer, handle = grouped.with_database(one, long_running=True)
    assert answer == 1 and mode(home) == GROUP_HOME_MODE
    handle.cleanup()
    again = CliState(overrides={"home": home, "read_group": PRIMARY_GROUP.gr_name})
    answer, handle = again.with_database(one, long_running=True)
    handle.cleanup()
    assert answer == 1
