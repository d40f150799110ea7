"""The crawl's typed result and counters (``handlers.crawl.result``): what a crawl saves
with its item reads back the same, a row of an older crawl (fewer keys) reads with the
missing ones empty, and the slice of the settings a crawl takes (``CrawlSettings``)."""

from __future__ import annotations

import ast
from pathlib import Path

from safelight.handlers.crawl import result as crawl_result
from safelight.handlers.crawl.config import CrawlSettings
from safelight.handlers.crawl.result import (
    COUNTERS,
    CrawlCounts,
    CrawlResult,
    Duplicate,
    capped,
)
from safelight.library.walk.walker import FileError
from safelight.settings import Settings

STORED_KEYS = {
    "total", "found", "unchanged", "ingested", "moved", "reread", "duplicates", "deleted",
    "proxies", "errors", "skipped", "images", "videos", "proxies_renamed", "proxy_errors",
    "motion_photo_issues", "misnamed", "cut_short", "not_retried", "other_files",
}  # fmt: skip


def _result() -> CrawlResult:
    return CrawlResult(
        total=5,
        found=5,
        unchanged=1,
        ingested=2,
        moved=1,
        reread=1,
        duplicates=(Duplicate("b/copy.jpg", "a/photo.jpg"),),
        deleted=1,
        proxies=6,
        errors=(FileError("bad.jpg", "corrupt"),),
        skipped=(FileError("link.jpg", "symbolic link: not followed"),),
        images=3,
        videos=1,
        proxies_renamed=2,
        proxy_errors=(FileError("c/ab/t.jpg", "not renamed: gone"),),
        motion_photo_issues=(FileError("m.jpg", "no motion video"),),
        misnamed=(FileError("DSC_0001.nef", "holds a JPEG, named .nef"),),
        cut_short=(FileError("cut.jpg", "cut short: its last bytes are missing"),),
        not_retried=(FileError("old.jpg", "corrupt"),),
        other_files=13,
    )


def test_a_result_is_stored_with_the_keys_of_every_version_and_reads_back_the_same() -> None:
    stored = _result().as_json()
    assert set(stored) == STORED_KEYS
    assert stored["duplicates"] == [{"path": "b/copy.jpg", "same_as": "a/photo.jpg"}]
    assert stored["errors"] == [{"path": "bad.jpg", "reason": "corrupt"}]
    assert CrawlResult.from_json(stored) == _result()


def test_an_older_result_reads_with_what_it_lacks_empty() -> None:
    old = {"total": 2, "found": 2, "ingested": 2, "duplicates": [], "errors": [7, {"path": "x"}]}
    read = CrawlResult.from_json(old)
    assert (read.total, read.ingested, read.reread, read.proxies_renamed) == (2, 2, 0, 0)
    assert read.skipped == read.proxy_errors == read.motion_photo_issues == ()
    assert read.misnamed == read.cut_short == ()
    assert read.errors == (FileError("x", ""),)  # what is not an entry is left out


def test_the_counts_of_a_result_count_its_lists_whole() -> None:
    counts = _result().counts
    assert (counts.duplicates, counts.errors, counts.skipped, counts.hashed) == (1, 1, 1, 0)
    assert (counts.misnamed, counts.cut_short) == (1, 1)
    assert (counts.not_retried, counts.other_files) == (1, 13)
    assert CrawlCounts.from_json(None) == CrawlCounts()
    assert CrawlCounts.from_json({"found": 3, "total": True, "moved": "2"}).as_json() == {
        **dict.fromkeys(COUNTERS, 0),
        "found": 3,
    }


def test_the_counters_are_reported_in_their_order() -> None:
    assert COUNTERS == (
        "total", "found", "hashed", "unchanged", "ingested", "moved", "reread", "duplicates",
        "deleted", "proxies", "errors", "skipped", "misnamed", "cut_short", "not_retried",
        "other_files",
    )  # fmt: skip
    assert list(CrawlCounts(found=1).as_json()) == list(COUNTERS)


def test_a_long_list_is_capped_with_how_many_more() -> None:
    errors = [FileError(f"{n}.jpg", "bad") for n in range(crawl_result.RESULT_LIST_LIMIT + 3)]
    listed = capped(errors, FileError)
    assert len(listed) == crawl_result.RESULT_LIST_LIMIT + 1
    assert listed[-1] == FileError("...", "and 3 more")
    assert capped(errors[:2], FileError) == tuple(errors[:2])
    duplicates = [Duplicate(f"{n}.jpg", "a.jpg") for n in range(crawl_result.RESULT_LIST_LIMIT + 1)]
    assert capped(duplicates, Duplicate)[-1] == Duplicate("...", "and 1 more")


def test_the_crawl_takes_its_slice_of_the_settings(tmp_path: Path) -> None:
    settings = Settings(home=tmp_path, max_concurrent_files=3, follow_links_inside_root=True)
    crawl = CrawlSettings.of(settings)
    assert crawl.proxies == settings.proxies and crawl.home == tmp_path
    assert (crawl.max_concurrent_files, crawl.follow_links_inside_root) == (3, True)
    assert crawl.proxy_spec == settings.proxy_spec()


def test_no_step_of_the_crawl_reads_the_whole_settings() -> None:
    """Only ``run`` makes the slice (``CrawlSettings.of``); no step reaches past it."""
    package = Path(crawl_result.__file__).parent
    for module in sorted(package.glob("*.py")):
        tree = ast.parse(module.read_text())
        reached = [
            node.lineno
            for node in ast.walk(tree)
            if isinstance(node, ast.Attribute)
            and node.attr == "settings"
            and "services" in (getattr(node.value, "attr", None), getattr(node.value, "id", None))
        ]
        if module.name == "run.py":
            assert len(reached) == 1, "run makes the slice, once"
        else:
            assert reached == [], f"{module.name} reads services.settings at {reached}"
