"""XMP sidecars: the pairing rule, what a sidecar says, and how it wins over the photo's
embedded capture time and orientation (ADR 0026 decision 6)."""

from __future__ import annotations

import errno
import io
import os
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

from PIL import Image

from safelight.library.files.originals import StorageRoot
from safelight.library.media.metadata import read_image_metadata
from safelight.library.media.sidecars import (
    NO_FACTS,
    NONE_READ,
    ReadSidecar,
    SidecarFile,
    is_sidecar_name,
    read_sidecar,
    sidecar_facts,
    sidecar_for,
)
from safelight.library.media.xmp import XMP_MAX_BYTES
from safelight.library.render.images import make_image_proxies
from safelight.library.walk.walker import SYMLINK_REASON, FileError, Walker
from safelight.settings import Settings
from safelight.testing.sidecars import photo, sidecar_xml
from safelight.testing.walking import given_out

# --- the pairing rule ------------------------------------------------------------------


def found(*names: str) -> dict[str, SidecarFile]:
    return {name.lower(): SidecarFile(name, 1, 1) for name in names}


def test_the_full_name_sidecar_comes_before_the_stem_one() -> None:
    both = found("IMG_1.xmp", "IMG_1.JPG.xmp")
    assert sidecar_for("IMG_1.JPG", both) == both["img_1.jpg.xmp"]
    assert sidecar_for("IMG_1.CR2", both) == both["img_1.xmp"]


def test_names_are_matched_without_regard_to_case() -> None:
    assert sidecar_for("IMG_2.JPG", found("img_2.XMP")) is not None
    assert sidecar_for("img_3.jpg", found("IMG_3.jpg.XMP")) is not None
    assert sidecar_for("IMG_4.JPG", found("IMG_40.xmp", "IMG_4.JPG.xmp.bak")) is None


def test_only_xmp_names_are_sidecars() -> None:
    assert is_sidecar_name("a.XMP") and is_sidecar_name("a.jpg.xmp")
    assert not is_sidecar_name(".xmp") and not is_sidecar_name("a.xmp.bak")


# --- what a sidecar says --------------------------------------------------------------


def test_the_dates_follow_the_xmp_order_and_borrow_a_zone() -> None:
    facts = sidecar_facts(
        sidecar_xml(
            CreateDate="2019-03-01T10:00:00+01:00",
            DateTimeOriginal="2019-03-01T10:00:00",
        )
    )
    assert facts.captured is not None and facts.captured.source == "sidecar"
    assert facts.captured.at == datetime(2019, 3, 1, 10, tzinfo=timezone(timedelta(hours=1)))
    only_created = sidecar_facts(sidecar_xml(DateCreated="2018-07-04T12:30:00Z"))
    assert only_created.captured is not None
    assert only_created.captured.at == datetime(2018, 7, 4, 12, 30, tzinfo=UTC)


def test_an_orientation_out_of_range_or_a_broken_sidecar_says_nothing() -> None:
    assert sidecar_facts(sidecar_xml(orientation="6")).orientation == 6
    assert sidecar_facts(sidecar_xml(orientation="9")).orientation is None
    assert sidecar_facts(sidecar_xml(orientation="x")).orientation is None
    assert sidecar_facts(b"<x:xmpmeta><not closed") == NO_FACTS
    utf16 = sidecar_xml(orientation="8").decode().encode("utf-16")
    assert sidecar_facts(utf16).orientation == 8


# --- precedence over the embedded metadata ---------------------------------------------


def test_the_sidecar_wins_over_the_embedded_time_and_orientation(tmp_path: Path) -> None:
    path = tmp_path / "IMG_1.JPG"
    path.write_bytes(photo("2020:01:02 03:04:05", 1))
    facts = sidecar_facts(sidecar_xml(orientation="6", CreateDate="2021-05-06T07:08:09-04:00"))

    plain = read_image_metadata(path)
    edited = read_image_metadata(path, facts)

    assert (plain.captured_at_source, plain.orientation, plain.width) == ("exif", 1, 60)
    assert plain.captured_at == datetime(2020, 1, 2, 3, 4, 5)
    assert edited.captured_at_source == "sidecar"
    assert edited.captured_at == datetime(2021, 5, 6, 7, 8, 9, tzinfo=timezone(-timedelta(hours=4)))
    assert (edited.orientation, edited.width, edited.height) == (6, 40, 60)
    # The proxies follow the same rule: turned upright by the sidecar's orientation.
    proxies = make_image_proxies(path, Settings().proxy_spec(), facts.orientation)
    with Image.open(io.BytesIO(proxies.preview.data)) as preview:
        assert preview.width < preview.height
    assert read_image_metadata(path, sidecar_facts(sidecar_xml())).captured_at_source == "exif"


# --- the walk -----------------------------------------------------------------------------


def walk(root: Path) -> Walker:
    with StorageRoot(root) as storage:
        walker = Walker(storage)
        while not walker.done:
            walker.step()
    return walker


def test_the_walk_pairs_photos_with_sidecars_and_never_lists_one(tmp_path: Path) -> None:
    root = tmp_path / "library"
    (root / "sub").mkdir(parents=True)
    for name in ("IMG_1.JPG", "IMG_2.jpg", "sub/IMG_1.JPG", "clip.mp4"):
        (root / name).write_bytes(b"x")
    for name in ("IMG_1.JPG.xmp", "IMG_1.xmp", "img_2.XMP", "clip.xmp", "orphan.xmp"):
        (root / name).write_bytes(b"<x/>" * 3)
    os.utime(root / "IMG_1.JPG.xmp", ns=(5, 1_000_000_007))

    walker = walk(root)

    by_path = {f.path: f.sidecar for f in given_out(walker)}
    assert by_path == {
        "IMG_1.JPG": SidecarFile("IMG_1.JPG.xmp", 12, 1_000_000_007),
        "IMG_2.jpg": SidecarFile("img_2.XMP", 12, (root / "img_2.XMP").stat().st_mtime_ns),
        "sub/IMG_1.JPG": None,  # a sidecar is its photo's folder's only
        "clip.mp4": None,  # photos only
    }
    assert walker.errors == [] and walker.skipped == []


def test_a_sidecar_that_is_a_link_is_reported_and_not_read(tmp_path: Path) -> None:
    root = tmp_path / "library"
    root.mkdir()
    (root / "IMG_1.JPG").write_bytes(b"x")
    (tmp_path / "elsewhere.xmp").write_bytes(b"<x/>")
    (root / "IMG_1.xmp").symlink_to(tmp_path / "elsewhere.xmp")

    walker = walk(root)

    assert [(f.path, f.sidecar) for f in given_out(walker)] == [("IMG_1.JPG", None)]
    assert walker.skipped == [FileError("IMG_1.xmp", SYMLINK_REASON)]


# --- reading one ----------------------------------------------------------------------------


def test_a_sidecar_is_read_with_the_stat_of_the_version_read(tmp_path: Path) -> None:
    root = tmp_path / "library"
    root.mkdir()
    (root / "IMG_1.xmp").write_bytes(sidecar_xml(orientation="8"))
    os.utime(root / "IMG_1.xmp", ns=(5, 2_000_000_003))
    listed = SidecarFile("IMG_1.xmp", 1, 1)  # the walk's stat, older than the file's now
    with StorageRoot(root) as storage:
        read = read_sidecar(storage, listed)
        assert read_sidecar(storage, None) == NONE_READ
    size = (root / "IMG_1.xmp").stat().st_size
    assert read == ReadSidecar(SidecarFile("IMG_1.xmp", size, 2_000_000_003), read.facts)
    assert read.facts.orientation == 8 and read.refused is None


def test_a_sidecar_that_is_a_link_or_outside_the_root_is_refused_not_read(tmp_path: Path) -> None:
    root = tmp_path / "library"
    (root / "sub").mkdir(parents=True)
    (tmp_path / "outside.xmp").write_bytes(sidecar_xml(orientation="6"))
    (root / "IMG_1.xmp").symlink_to(tmp_path / "outside.xmp")
    (root / "linked").symlink_to(tmp_path)
    with StorageRoot(root) as storage:
        reads = [
            read_sidecar(storage, SidecarFile(path, 1, 1))
            for path in ("IMG_1.xmp", "../outside.xmp", "linked/outside.xmp")
        ]
        gone = read_sidecar(storage, SidecarFile("sub/gone.xmp", 1, 1))
    for read in reads:
        assert (read.file, read.facts) == (None, NO_FACTS)
    assert [read.refused for read in reads] == [
        "symbolic link: not followed",
        "'../outside.xmp' is not a plain path below the storage root",
        "folder 'linked' is a symbolic link: not followed",
    ]
    assert gone == NONE_READ  # gone since the walk: as if there were none, not reported


def test_a_sidecar_of_up_to_the_xmp_limit_is_read_and_a_larger_one_is_not(
    tmp_path: Path,
) -> None:
    """Bounded: the read stops one byte past the limit, so a larger sidecar is seen to be
    larger (and not parsed) without being read whole."""
    root = tmp_path / "library"
    root.mkdir()
    xml = sidecar_xml(orientation="3")
    (root / "at_limit.xmp").write_bytes(xml + b" " * (XMP_MAX_BYTES - len(xml)))
    (root / "over.xmp").write_bytes(xml + b" " * (XMP_MAX_BYTES + 1 - len(xml)))
    with StorageRoot(root) as storage:
        at_limit = read_sidecar(storage, SidecarFile("at_limit.xmp", 1, 1))
        over = read_sidecar(storage, SidecarFile("over.xmp", 1, 1))
    assert at_limit.facts.orientation == 3
    assert over.facts == NO_FACTS and over.refused is None
    assert over.file == SidecarFile("over.xmp", XMP_MAX_BYTES + 1, over.file.mtime_ns)  # type: ignore[union-attr]


def test_a_sidecar_that_fails_to_read_is_refused_with_the_system_s_reason() -> None:
    class FailingStorage:
        def open(self, relative: str) -> object:
            raise OSError(errno.EIO, os.strerror(errno.EIO), relative)

    read = read_sidecar(FailingStorage(), SidecarFile("IMG_1.xmp", 1, 1))  # type: ignore[arg-type]

    assert read == ReadSidecar(None, NO_FACTS, "I/O error while reading the file")


def test_a_sidecar_orientation_of_1_is_a_word_too() -> None:
    """1 ("as stored") is the editor's word over an embedded turn; 0 is no orientation."""
    assert sidecar_facts(sidecar_xml(orientation="1")).orientation == 1
    assert sidecar_facts(sidecar_xml(orientation="0")).orientation is None
    assert sidecar_facts(sidecar_xml(orientation=" 8 ")).orientation == 8
