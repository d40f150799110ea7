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
import os
import tempfile
import time
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest

from safelight.core.clock import SystemClock
from safelight.core.journal import Journal, side_effect
from safelight.library.proxystore import layout, publishing
from safelight.library.proxystore.proxytree import delete_file
from safelight.library.render.images import make_image_proxies
from safelight.library.walk.publishing import publish_image_proxies
from safelight.testing.fakeclock import FakeClock
from safelight.testing.items import running_item, scope_of
from safelight.testing.samplegen import generate_jpegs
from safelight.testing.specs import DEFAULT_SPEC
from safelight.work.errors import AttemptStopped, StopReason
from tests.faults.checker import check_side_effects
from tests.faults.effects import effects_of, read_lines

pytestmark = pytest.mark.faults

CONFIG = UUID("00000000-0000-0000-0000-00000000c0f1")
CONTENT_HASH = "0123456789abcdef"
ITEM = running_item(id=11, attempt=2, config=CONFIG)
WRITTEN_BY = layout.AttemptTag(ITEM.id, ITEM.attempt)


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
    with scope_of(attempt.journal, ITEM), contextlib.suppress(AttemptStopped):
        delete_file(root, target.relative_to(root).as_posix(), attempt.ensure_alive)
    assert target.exists(), "the woken attempt deleted the file"
    assert attempt.effects() == []


def test_a_proxy_write_frozen_while_its_journal_line_is_written_touches_no_file_of_its_config(
    tmp_path: Path,
) -> None:
    (source,) = generate_jpegs(tmp_path / "library", 1, 0.1, seed=3)
    proxies = make_image_proxies(source, DEFAULT_SPEC)
    root = tmp_path / "proxies"
    attempt = Attempt(tmp_path)
    with scope_of(attempt.journal, ITEM), pytest.raises(AttemptStopped):
        publish_image_proxies(
            proxies, root, CONFIG, CONTENT_HASH, attempt.ensure_alive, written_by=WRITTEN_BY
        )
    assert not (root / str(CONFIG)).exists(), "the woken attempt wrote in its config's folder"
    assert attempt.effects() == []


def test_a_proxy_write_s_interval_ends_with_its_rename_not_with_the_folder_s_fsync(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The folder's fsync (milliseconds) changes nothing; a freeze during it must not
    leave an effect open across the freeze."""
    (source,) = generate_jpegs(tmp_path / "library", 1, 0.1, seed=3)
    proxies = make_image_proxies(source, DEFAULT_SPEC)
    root = tmp_path / "proxies"
    attempt = Attempt(tmp_path, freeze_on="never")
    open_at_fsync: list[bool] = []
    fsync_dir = publishing._fsync_dir

    def watched(folder: Path) -> None:
        lines = read_lines([attempt.path])
        open_at_fsync.append(bool(lines) and lines[-1]["phase"] == "before")
        fsync_dir(folder)

    monkeypatch.setattr(publishing, "_fsync_dir", watched)
    with scope_of(attempt.journal, ITEM):
        publish_image_proxies(
            proxies, root, CONFIG, CONTENT_HASH, attempt.ensure_alive, written_by=WRITTEN_BY
        )
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
    proxies = make_image_proxies(source, DEFAULT_SPEC)
    root = tmp_path / "proxies"
    attempt = Attempt(tmp_path, freeze_on="never")
    at_freeze: list[dict[str, tuple[int, int]]] = []
    mkstemp = tempfile.mkstemp

    def frozen_right_after(*args: Any, **kwargs: Any) -> tuple[int, str]:
        made = mkstemp(*args, **kwargs)
        # Frozen here, past the deadline: the temporary file exists, its data is not
        # written yet. What the attempt does on waking is what this test looks at.
        at_freeze.append(snapshot(root / str(CONFIG)))
        attempt.stopped = True
        return made

    monkeypatch.setattr(tempfile, "mkstemp", frozen_right_after)
    with scope_of(attempt.journal, ITEM), pytest.raises(AttemptStopped):
        publish_image_proxies(
            proxies, root, CONFIG, CONTENT_HASH, attempt.ensure_alive, written_by=WRITTEN_BY
        )
    assert at_freeze, "no temporary file was made"
    assert snapshot(root / str(CONFIG)) == at_freeze[0], "touched its config's folder on waking"
    assert attempt.effects() == []


# --- A freeze that lands in the syscall, told from one that lands before it ----------
#
# A SIGSTOP that lands in a proxy's rename (or between it and the "after" line) stretches
# the write's interval over the whole freeze, though the rename was done before: the
# checker reported it as an overlap with the next attempt's effects during the freeze.
# The "after" line now carries the kernel's time of the rename (its folder's ctime), and
# the checker ends the interval there. A freeze between the check and the rename (the
# window ADR 0008 leaves) is still reported: that rename ran on waking.
#
# The freeze here is a pause of this process on the real clocks, recorded as the
# scenario records its freezes, with the next attempt's delete in the middle of it. It
# relies on no timing but that a sleep lasts at least as long as asked.

NEXT = running_item(id=ITEM.id, attempt=ITEM.attempt + 1, config=CONFIG)
OTHER_HASH = "fedcba9876543210"


class Freezer:
    def __init__(self, journal: Journal, next_target: Path) -> None:
        self.journal = journal
        self.next_target = next_target
        self.freezes: list[tuple[float, float]] = []

    def freeze(self) -> None:
        stop = time.monotonic()
        time.sleep(0.15)
        # Lease recovery gave the item to its next attempt, which deletes a proxy of
        # the config meanwhile.
        with scope_of(self.journal, NEXT), side_effect("delete", self.next_target):
            self.next_target.unlink()
        time.sleep(0.15)
        self.freezes.append((stop, time.monotonic()))


def frozen_rename(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *, freeze: str, next_in: str
) -> list[str]:
    """Publish a proxy with the process frozen ``freeze`` ("before" or "after") its
    rename, the next attempt deleting a file in ``next_in`` ("same" or "another")
    folder meanwhile; what the checker reports of it."""
    root = tmp_path / "proxies"
    target = layout.proxy_path(root, CONFIG, CONTENT_HASH, "thumbnail", "jpg", WRITTEN_BY)
    next_hash = CONTENT_HASH if next_in == "same" else OTHER_HASH
    next_target = layout.proxy_path(root, CONFIG, next_hash, "full_preview", "jpg", WRITTEN_BY)
    next_target.parent.mkdir(parents=True)
    next_target.write_bytes(b"the next attempt's to delete")
    staged = root / layout.STAGING_FOLDER / "thumbnail.jpg.tmp"
    staged.parent.mkdir(parents=True)
    target.parent.mkdir(parents=True, exist_ok=True)  # the rename alone is journalled
    staged.write_bytes(b"a finished proxy")
    journal_path = tmp_path / "journal.jsonl"
    journal = Journal(journal_path, SystemClock())
    freezer = Freezer(journal, next_target)
    replace = os.replace

    def replace_frozen(src: Any, dst: Any) -> None:
        if freeze == "before":
            freezer.freeze()
        replace(src, dst)
        if freeze == "after":
            freezer.freeze()

    monkeypatch.setattr(os, "replace", replace_frozen)
    with scope_of(journal, ITEM):
        publishing.move_into_place(staged, target, lambda: None)
    monkeypatch.undo()
    journal.close()
    assert target.read_bytes() == b"a finished proxy"
    effects = effects_of(read_lines([journal_path]), {})
    assert len(effects) == 2
    return [str(v) for v in check_side_effects(effects, {os.getpid(): freezer.freezes})]


def test_a_rename_frozen_right_after_its_syscall_is_placed_at_its_kernel_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert frozen_rename(tmp_path, monkeypatch, freeze="after", next_in="another") == []


def test_a_rename_frozen_between_its_check_and_its_syscall_is_still_reported(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (found,) = frozen_rename(tmp_path, monkeypatch, freeze="before", next_in="another")
    assert "two attempts had side effects at once" in found
    assert "spans its process's freeze" in found


def test_a_rename_frozen_after_its_syscall_is_still_reported_if_its_folder_changed_since(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The folder's ctime is read when the process wakes: the next attempt's delete in
    that folder moved it on, so the rename can be placed no earlier than that delete,
    which then overlaps it."""
    (found,) = frozen_rename(tmp_path, monkeypatch, freeze="after", next_in="same")
    assert "two attempts had side effects at once" in found
