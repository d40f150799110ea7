"""Regression tests for a Worker frozen in the middle of one file side effect (bugs 3
and 4 of the fault-injection suite, docs/reliability.md).

The suite found proxy writes and deletes whose journalled interval spanned a freeze of
their process while another attempt of the same config wrote beside them.

- Bug 3 (fixed in 320d036): ``ensure_alive()`` came before the journal's "before" line,
  whose fsync takes milliseconds, so a process frozen during that fsync deleted or
  published on waking; and a proxy write's interval went on through its folder's fsync.
- Bug 4 (fixed in 6f4f79f): a proxy's temporary file was written and fsynced inside
  the config's proxy folder, inside the interval, after the last check but one. A
  process frozen there wrote the rest of it, and deleted it, on waking: it touched the
  config's folder after it lost its lease. Proxies are now staged under
  ``<proxy root>/.staging`` and only renamed into the config's folder.

These tests freeze the process at exactly those points, deterministically, in this
process: the attempt becomes overdue there, as a freeze past the self-stop deadline
makes it. They run the real library code; no database.
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest

from safelight.library import paths
from safelight.library.crawl import publish_image_proxies
from safelight.library.images import make_image_proxies
from safelight.library.purge import delete_proxy_file
from safelight.library.samplegen import generate_jpegs
from safelight.work.errors import AttemptStopped, StopReason
from safelight.work.fakeclock import FakeClock
from safelight.work.journal import Journal, attempt_scope
from tests.faults.effects import effects_of, read_lines
from tests.items import running_item

pytestmark = pytest.mark.faults

CONFIG = UUID("00000000-0000-0000-0000-00000000c0f1")
CONTENT_HASH = "0123456789abcdef"
ITEM = running_item(id=11, attempt=2, config=CONFIG)


class Attempt:
    """An attempt that the journal freezes past its deadline while it writes one line."""

    def __init__(self, folder: Path, *, freeze_on: str = "before") -> None:
        self.stopped = False
        self.path = folder / "journal.jsonl"
        attempt = self

        class FreezingJournal(Journal):
            def write(self, entry: dict[str, object]) -> None:
                super().write(entry)
                if entry["phase"] == freeze_on:
                    attempt.stopped = True  # frozen during this line's fsync, past the deadline

        self.journal = FreezingJournal(self.path, FakeClock())

    def ensure_alive(self) -> None:
        if self.stopped:
            raise AttemptStopped(StopReason.SELF_STOPPED)

    def effects(self) -> list[object]:
        self.journal.close()
        return list(effects_of(read_lines([self.path]), {}))


def test_a_delete_frozen_while_its_journal_line_is_written_deletes_nothing(
    tmp_path: Path,
) -> None:
    root = tmp_path / "proxies"
    target = root / str(CONFIG) / "01" / CONTENT_HASH / "thumbnail.jpg"
    target.parent.mkdir(parents=True)
    target.write_bytes(b"a live asset's thumbnail, maybe")
    attempt = Attempt(tmp_path)
    with attempt_scope(attempt.journal, ITEM), contextlib.suppress(AttemptStopped):
        delete_proxy_file(root, target.relative_to(root).as_posix(), attempt.ensure_alive)
    assert target.exists(), "the woken attempt deleted the file"
    assert attempt.effects() == []


def test_a_proxy_write_frozen_while_its_journal_line_is_written_touches_no_file_of_its_config(
    tmp_path: Path,
) -> None:
    (source,) = generate_jpegs(tmp_path / "library", 1, 0.1, seed=3)
    proxies = make_image_proxies(source)
    root = tmp_path / "proxies"
    attempt = Attempt(tmp_path)
    with attempt_scope(attempt.journal, ITEM), pytest.raises(AttemptStopped):
        publish_image_proxies(proxies, root, CONFIG, CONTENT_HASH, attempt.ensure_alive)
    assert not (root / str(CONFIG)).exists(), "the woken attempt wrote in its config's folder"
    assert attempt.effects() == []


def test_a_proxy_write_s_interval_ends_with_its_rename_not_with_the_folder_s_fsync(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The folder's fsync (milliseconds) changes nothing; a freeze during it must not
    leave an effect open across the freeze."""
    (source,) = generate_jpegs(tmp_path / "library", 1, 0.1, seed=3)
    proxies = make_image_proxies(source)
    root = tmp_path / "proxies"
    attempt = Attempt(tmp_path, freeze_on="never")
    open_at_fsync: list[bool] = []
    fsync_dir = paths._fsync_dir

    def watched(folder: Path) -> None:
        lines = read_lines([attempt.path])
        open_at_fsync.append(bool(lines) and lines[-1]["phase"] == "before")
        fsync_dir(folder)

    monkeypatch.setattr(paths, "_fsync_dir", watched)
    with attempt_scope(attempt.journal, ITEM):
        publish_image_proxies(proxies, root, CONFIG, CONTENT_HASH, attempt.ensure_alive)
    assert open_at_fsync == [False, False]


def snapshot(folder: Path) -> dict[str, tuple[int, int]]:
    """Every entry under ``folder``, with its size and change time (ns)."""
    if not folder.exists():
        return {}
    found = {}
    for path in sorted(folder.rglob("*")):
        st = path.lstat()
        found[path.relative_to(folder).as_posix()] = (st.st_size, st.st_ctime_ns)
    return found


def test_a_proxy_write_frozen_while_writing_its_temporary_file_touches_its_config_no_more(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (source,) = generate_jpegs(tmp_path / "library", 1, 0.1, seed=3)
    proxies = make_image_proxies(source)
    root = tmp_path / "proxies"
    attempt = Attempt(tmp_path, freeze_on="never")
    at_freeze: list[dict[str, tuple[int, int]]] = []
    mkstemp = paths.tempfile.mkstemp

    def frozen_right_after(*args: Any, **kwargs: Any) -> tuple[int, str]:
        made = mkstemp(*args, **kwargs)
        # Frozen here, past the deadline: the temporary file exists, its data is not
        # written yet. What the attempt does on waking is what this test looks at.
        at_freeze.append(snapshot(root / str(CONFIG)))
        attempt.stopped = True
        return made

    monkeypatch.setattr(paths.tempfile, "mkstemp", frozen_right_after)
    with attempt_scope(attempt.journal, ITEM), pytest.raises(AttemptStopped):
        publish_image_proxies(proxies, root, CONFIG, CONTENT_HASH, attempt.ensure_alive)
    assert at_freeze, "no temporary file was made"
    assert snapshot(root / str(CONFIG)) == at_freeze[0], "touched its config's folder on waking"
    assert attempt.effects() == []
