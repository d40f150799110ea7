"""The sample library generator: its manifest matches the files it wrote, ExifTool reads
what it claims to have written, and the benchmark corpus is fast and distinct."""

from __future__ import annotations

import io
import itertools
import json
import shutil
import subprocess
from pathlib import Path

import pytest
import xxhash
from PIL import Image, ImageCms

from safelight.library.files.mediatypes import is_ignored_name, media_type
from safelight.library.media.exif import read_exif
from safelight.testing.samplegen import (
    Manifest,
    display_p3_profile,
    generate_day_library,
    generate_jpegs,
    generate_library,
)

EXIFTOOL = shutil.which("exiftool")
HAVE_FFMPEG = shutil.which("ffmpeg") is not None


@pytest.fixture(scope="module")
def library(tmp_path_factory: pytest.TempPathFactory) -> Manifest:
    return generate_library(tmp_path_factory.mktemp("library"), seed=11)


def files_under(root: Path) -> set[str]:
    return {p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file()}


def test_manifest_lists_exactly_the_files_written(library: Manifest) -> None:
    listed = (
        {p.path for p in library.photos}
        | {v.path for v in library.videos}
        | {e.path for e in library.errors}
        | set(library.ignored)
    )
    assert files_under(library.root) == listed
    assert library.expected_image_count == len(library.photos) == 26
    assert library.expected_error_count == 2


def test_what_a_crawl_must_see_and_skip(library: Manifest) -> None:
    for photo in library.photos:
        assert media_type(photo.path) == "image", photo.path
        assert not any(is_ignored_name(part) for part in photo.path.split("/")), photo.path
    for video in library.videos:
        assert media_type(video.path) == "video", video.path
    for error in library.errors:
        assert media_type(error.path) == "image"
    for path in library.ignored:
        parts = path.split("/")
        assert media_type(path) is None or any(is_ignored_name(p) for p in parts), path
    assert (library.root / "broken/empty.jpg").stat().st_size == 0


def test_orientations_cameras_bursts_and_pairs(library: Manifest) -> None:
    assert sorted(
        p.orientation for p in library.photos if p.path.startswith("orientation/")
    ) == list(range(1, 9))
    assert len({(p.make, p.model) for p in library.photos}) >= 8
    apple, by_time = library.bursts
    assert apple.burst_id and len(apple.paths) == 5 and by_time.burst_id is None
    for burst in library.bursts:
        times = [library.photo(p).captured_at for p in burst.paths]
        gaps = [(b - a).total_seconds() for a, b in itertools.pairwise(times)]
        assert all(0 < gap < 1 for gap in gaps)
        assert len({(library.photo(p).make, library.photo(p).model) for p in burst.paths}) == 1
    (pair,) = library.live_pairs
    photo = library.photo(pair.photo)
    assert photo.content_identifier == pair.content_identifier
    if HAVE_FFMPEG:
        assert pair.video is not None
        assert Path(pair.photo).stem == Path(pair.video).stem
        assert Path(pair.photo).parent == Path(pair.video).parent
        video = next(v for v in library.videos if v.path == pair.video)
        assert video.content_identifier == pair.content_identifier
        assert abs((video.captured_at - photo.captured_at).total_seconds()) < 1


def test_same_seed_same_library(tmp_path: Path, library: Manifest) -> None:
    again = generate_library(tmp_path / "again", seed=11, ffmpeg=None)
    jpegs = [p.path for p in again.photos if p.path.lower().endswith((".jpg", ".png"))]
    for path in jpegs:
        assert (again.root / path).read_bytes() == (library.root / path).read_bytes(), path
    other = generate_library(tmp_path / "other", seed=12, ffmpeg=None)
    assert other.bursts[0].burst_id != library.bursts[0].burst_id


def test_without_ffmpeg_videos_are_skipped_and_said_so(tmp_path: Path) -> None:
    disabled = generate_library(tmp_path / "a", ffmpeg=None)
    assert disabled.videos == () and disabled.video_skipped_reason == "videos disabled"
    assert disabled.live_pairs[0].video is None
    missing = generate_library(tmp_path / "b", ffmpeg=str(tmp_path / "no-ffmpeg"))
    assert missing.video_skipped_reason == "ffmpeg not found"
    assert not [p for p in files_under(missing.root) if media_type(p) == "video"]


@pytest.mark.skipif(EXIFTOOL is None, reason="exiftool (test oracle) not installed")
def test_exiftool_reads_what_the_manifest_claims(library: Manifest) -> None:
    assert EXIFTOOL is not None
    photos = [p for p in library.photos if p.captured_at_source == "exif"]
    out = subprocess.run(
        [EXIFTOOL, "-j", "-n", "-G1", "-a", "-IFD0:Orientation", "-ExifIFD:DateTimeOriginal",
         "-ExifIFD:OffsetTimeOriginal", "-Apple:BurstUUID", "-Apple:MediaGroupUUID",
         "-ICC_Profile:ProfileDescription", *(str(library.root / p.path) for p in photos)],
        capture_output=True, check=True,
    ).stdout  # fmt: skip
    rows = {Path(r["SourceFile"]).relative_to(library.root).as_posix(): r for r in json.loads(out)}
    for photo in photos:
        row = rows[photo.path]
        assert row["IFD0:Orientation"] == photo.orientation, photo.path
        assert row["ExifIFD:DateTimeOriginal"] == photo.captured_at.strftime("%Y:%m:%d %H:%M:%S")
        offset = photo.captured_at.strftime("%z")
        assert row.get("ExifIFD:OffsetTimeOriginal", "") == (
            f"{offset[:3]}:{offset[3:]}" if offset else ""
        )
        assert row.get("Apple:BurstUUID") == photo.burst_id, photo.path
        assert row.get("Apple:MediaGroupUUID") == photo.content_identifier, photo.path
        if photo.display_p3:
            assert row["ICC_Profile:ProfileDescription"] == "Display P3 (safelight samples)"
    if HAVE_FFMPEG:
        videos = [str(library.root / v.path) for v in library.videos]
        out = subprocess.run(
            [EXIFTOOL, "-j", "-n", "-Rotation", "-ContentIdentifier", *videos],
            capture_output=True, check=True,
        ).stdout  # fmt: skip
        for row, video in zip(json.loads(out), library.videos, strict=True):
            assert row["Rotation"] == video.rotation, video.path
            assert row.get("ContentIdentifier") == video.content_identifier, video.path


def test_display_p3_profile_converts_like_display_p3() -> None:
    profile = ImageCms.ImageCmsProfile(io.BytesIO(display_p3_profile()))
    assert ImageCms.getProfileDescription(profile).strip() == "Display P3 (safelight samples)"
    # sRGB red is (234, 51, 35) in Display P3; white is white.
    patch = Image.new("RGB", (2, 1))
    patch.putpixel((0, 0), (234, 51, 35))
    patch.putpixel((1, 0), (255, 255, 255))
    srgb = ImageCms.profileToProfile(
        patch, profile, ImageCms.createProfile("sRGB"),
        renderingIntent=ImageCms.Intent.RELATIVE_COLORIMETRIC,
    )  # fmt: skip
    assert srgb is not None
    red, white = srgb.getpixel((0, 0)), srgb.getpixel((1, 0))
    assert isinstance(red, tuple) and isinstance(white, tuple)
    assert all(abs(a - b) <= 3 for a, b in zip(red, (255, 0, 0), strict=True)), red
    assert all(c >= 253 for c in white), white


def test_generate_jpegs_for_benchmarks(tmp_path: Path) -> None:
    paths = generate_jpegs(tmp_path, count=9, megapixels=0.5, per_folder=4)
    assert len(paths) == 9 and len({p.parent for p in paths}) == 3
    assert len({xxhash.xxh3_64(p.read_bytes()).hexdigest() for p in paths}) == 9
    dates = set()
    for path in paths:
        with Image.open(path) as image:
            image.load()
            assert abs(image.width * image.height - 500_000) < 10_000
            dates.add(read_exif(image.info["exif"]).dates[0].value)
    assert len(dates) == 9
    with pytest.raises(ValueError):
        generate_jpegs(tmp_path, count=1, megapixels=0)


def test_the_day_library_holds_the_day_in_each_year_and_the_days_around_it(
    tmp_path: Path,
) -> None:
    years = (2016, 2019, 2021, 2024)
    manifest = generate_day_library(tmp_path / "day", 6, 15, years, ffmpeg=None)

    assert files_under(manifest.root) == {p.path for p in manifest.photos}
    on_the_day = [p for p in manifest.photos if (p.captured_at.month, p.captured_at.day) == (6, 15)]
    assert sorted({p.captured_at.year for p in on_the_day}) == [*years, 2025]
    assert {p.captured_at.date().isoformat() for p in manifest.photos} - {
        p.captured_at.date().isoformat() for p in on_the_day
    } == {"2016-06-14", "2016-06-16"}
    [burst] = manifest.bursts
    assert len(burst.paths) == 3 and {manifest.photo(p).captured_at.year for p in burst.paths} == {
        2019
    }
    assert all(p.captured_at.tzinfo is None for p in manifest.photos)
    [pair] = manifest.live_pairs
    assert pair.video is None and manifest.videos == ()
    assert manifest.video_skipped_reason == "videos disabled"
    with pytest.raises(ValueError, match="three or more years"):
        generate_day_library(tmp_path / "few", 6, 15, (2020, 2021))


@pytest.mark.skipif(not HAVE_FFMPEG, reason="ffmpeg is not installed")
def test_the_day_library_pairs_its_live_photo_and_adds_a_video(tmp_path: Path) -> None:
    manifest = generate_day_library(tmp_path / "day", 6, 15, (2016, 2019, 2021, 2024))

    [pair] = manifest.live_pairs
    assert pair.video is not None
    assert {v.path for v in manifest.videos} == {pair.video, "2021/clip_2021_1900.mp4"}
    assert all(v.captured_at.date().isoformat() == "2021-06-15" for v in manifest.videos)
