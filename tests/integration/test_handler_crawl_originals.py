"""A hostile library: symlinks, folders swapped for links, files swapped under ffprobe and
the decoder, safelight's own folders inside a library. The crawl reads each original
from the one descriptor it opened, through no link, and lists what it did not crawl."""

from __future__ import annotations

import asyncio
import io
import os
import shutil
import subprocess
from collections.abc import Awaitable, Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from PIL import Image, ImageStat
from psycopg_pool import AsyncConnectionPool

from safelight.db.embedded import DATA_FOLDER
from safelight.handlers import guards
from safelight.handlers.crawl import deciding, ingesting, opening
from safelight.handlers.crawl.result import Duplicate
from safelight.testing.decoders import decoder_or_threads
from safelight.testing.handlers import (
    Harness,
    crawl_result,
    jpeg,
    make_harness,
    touch_later,
    write,
)
from safelight.work.model import Status

pytestmark = pytest.mark.integration

RED = (220, 30, 30)
BLUE = (30, 30, 220)


def solid_jpeg(colour: tuple[int, int, int], size: tuple[int, int] = (64, 48)) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", size, colour).save(out, "JPEG", quality=90)
    return out.getvalue()


def padded_to(data: bytes, size: int) -> bytes:
    """JPEG decoders stop at the end-of-image marker: trailing bytes change only the size."""
    assert len(data) <= size
    return data + b"\0" * (size - len(data))


def same_stat(path: Path, like: Path) -> None:
    st = like.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))


def colour_of(image: Image.Image) -> tuple[float, ...]:
    return tuple(ImageStat.Stat(image.convert("RGB")).mean)


def is_red(image: Image.Image) -> bool:
    r, _, b = colour_of(image)
    return r > 150 and b < 90


def proxy_images(h: Harness) -> list[Path]:
    """Every proxy file written, published or left over: none may show the secret."""
    return sorted(p for p in h.proxy_root.rglob("*") if p.is_file() and p.suffix == ".jpg")


async def asset_ids(h: Harness, config: Any) -> dict[str, int]:
    """The config's live assets, path to id."""
    rows = await h.rows(
        "SELECT file_path, id FROM assets WHERE storage_config_id = %s AND NOT is_deleted", config
    )
    return dict(rows)


async def live_paths(h: Harness, config: Any) -> set[str]:
    rows = await h.rows(
        "SELECT file_path FROM assets WHERE storage_config_id = %s AND NOT is_deleted", config
    )
    return {path for (path,) in rows}


def swap_folder_for_link(folder: Path, target: Path) -> None:
    os.rename(folder, folder.with_name(folder.name + ".real"))
    folder.symlink_to(target, target_is_directory=True)


def after(
    monkeypatch: pytest.MonkeyPatch,
    step: ModuleType,
    name: str,
    swap: Callable[[], None],
    *,
    once: bool = True,
) -> None:
    """Run ``swap`` right after the crawl step ``<step>.<name>`` returns: the race, forced."""
    real: Callable[..., Awaitable[Any]] = getattr(step, name)
    done = False

    async def wrapped(crawl: Any, *args: Any, **kwargs: Any) -> Any:
        nonlocal done
        result = await real(crawl, *args, **kwargs)
        if not (once and done):
            done = True
            await asyncio.to_thread(swap)
        return result

    monkeypatch.setattr(step, name, wrapped)


def before(
    monkeypatch: pytest.MonkeyPatch, step: ModuleType, name: str, swap: Callable[[], None]
) -> None:
    """Run ``swap`` once, right before the first ``<step>.<name>`` starts: the race, forced."""
    real: Callable[..., Awaitable[Any]] = getattr(step, name)
    done = False

    async def wrapped(crawl: Any, *args: Any, **kwargs: Any) -> Any:
        nonlocal done
        if not done:
            done = True
            await asyncio.to_thread(swap)
        return await real(crawl, *args, **kwargs)

    monkeypatch.setattr(step, name, wrapped)


# --- symlinks are listed, never followed ------------------------------------------------


async def test_symlinked_files_and_folders_are_listed_and_make_no_asset(
    pool: AsyncConnectionPool[Any], tmp_path: Path
) -> None:
    h = make_harness(pool, tmp_path)
    root = tmp_path / "library"
    outside = tmp_path / "outside"
    write(outside, "secret.jpg", jpeg(50))
    write(outside, "folder/also-secret.jpg", jpeg(51))
    write(root, "mine.jpg", jpeg(52))
    write(root, "sub/inner.jpg", jpeg(53))
    (root / "link.jpg").symlink_to(outside / "secret.jpg")
    (root / "inside-link.jpg").symlink_to(root / "mine.jpg")
    (root / "linked-folder").symlink_to(outside / "folder")
    (root / "sub" / "up").symlink_to(root / "sub")
    config = await h.add_config(root)

    item = await h.run("crawl", config_id=config)

    assert item.status is Status.SUCCEEDED, item.error
    result = crawl_result(item)
    assert {(e.path, e.reason) for e in result.skipped} == {
        ("link.jpg", "symbolic link: not followed"),
        ("inside-link.jpg", "symbolic link: not followed"),
        ("linked-folder/", "symbolic link: not followed"),
        ("sub/up/", "symbolic link: not followed"),
    }
    assert result.errors == () and result.duplicates == ()
    assert await live_paths(h, config) == {"mine.jpg", "sub/inner.jpg"}
    assert h.progress[item.id][-1]["skipped"] == 4


async def test_with_the_setting_a_link_inside_the_root_is_ingested_and_one_outside_is_not(
    pool: AsyncConnectionPool[Any], tmp_path: Path
) -> None:
    h = make_harness(pool, tmp_path, follow_links_inside_root=True)
    root = tmp_path / "library"
    write(tmp_path / "outside", "secret.jpg", jpeg(60))
    write(root, ".archive/kept.jpg", jpeg(61))  # hidden: the walk does not list it
    write(root, "a.jpg", jpeg(62))
    (root / "kept.jpg").symlink_to(".archive/kept.jpg")
    (root / "alias of a.jpg").symlink_to("a.jpg")
    (root / "out.jpg").symlink_to(tmp_path / "outside" / "secret.jpg")
    (root / "folder").symlink_to(root / ".archive")
    config = await h.add_config(root)

    item = await h.run("crawl", config_id=config)

    assert item.status is Status.SUCCEEDED, item.error
    result = crawl_result(item)
    # The link whose target is not crawled itself is an asset at the link's path...
    assert await live_paths(h, config) == {"a.jpg", "kept.jpg"}
    # ...with the target's content; a link to a crawled file is its duplicate.
    assert result.duplicates == (Duplicate("alias of a.jpg", "a.jpg"),)
    assert {(e.path, e.reason) for e in result.skipped} == {
        ("out.jpg", "symbolic link to outside the storage root: not followed"),
        ("folder/", "symbolic link: not followed"),
    }
    assert result.errors == ()
    assert result.ingested == 2

    again = await h.run("crawl", config_id=config)
    again_result = crawl_result(again)
    assert (again_result.ingested, again_result.unchanged) == (0, 2)


async def test_a_followed_link_unchanged_since_the_last_crawl_keeps_its_asset_unhashed(
    pool: AsyncConnectionPool[Any], tmp_path: Path
) -> None:
    """The files of followed links come after the walk's matching has passed their
    paths: each is looked up at its path, an unchanged one counted as is (not hashed,
    not soft-deleted as not walked), a touched one hashed again and its asset kept."""
    h = make_harness(pool, tmp_path, follow_links_inside_root=True)
    root = tmp_path / "library"
    # Hidden targets: the walk does not list them itself, so the links are followed.
    write(root, ".archive/kept.jpg", jpeg(63))
    target = write(root, ".archive/touched.jpg", jpeg(64))
    write(root, "a.jpg", jpeg(65))
    (root / "kept.jpg").symlink_to(".archive/kept.jpg")
    (root / "touched.jpg").symlink_to(".archive/touched.jpg")
    config = await h.add_config(root)
    first = await h.run("crawl", config_id=config)
    first_result = crawl_result(first)
    assert first_result.ingested == 3
    before = await asset_ids(h, config)
    assert set(before) == {"a.jpg", "kept.jpg", "touched.jpg"}
    touch_later(target)

    item = await h.run("crawl", config_id=config)

    assert item.status is Status.SUCCEEDED, item.error
    result = crawl_result(item)
    counts = ("total", "unchanged", "ingested", "moved", "deleted")
    assert {c: getattr(result, c) for c in counts} == {
        "total": 3, "unchanged": 3, "ingested": 0, "moved": 0, "deleted": 0
    }  # fmt: skip
    # Only the touched link's file is hashed: the unchanged one is known by its stat.
    assert h.progress[item.id][-1]["hashed"] == 1
    assert await asset_ids(h, config) == before
    assert await h.value("SELECT count(*) FROM assets WHERE is_deleted") == 0
    assert (
        await h.value("SELECT modified_ns FROM assets WHERE id = %s", before["touched.jpg"])
        == target.stat().st_mtime_ns
    )


# --- races, forced --------------------------------------------------------------------


@pytest.mark.parametrize("target", ["inside", "outside"])
async def test_a_folder_swapped_for_a_link_between_the_walk_and_the_open_is_refused(
    pool: AsyncConnectionPool[Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, target: str
) -> None:
    h = make_harness(pool, tmp_path)
    root = tmp_path / "library"
    write(root, "album/photo.jpg", solid_jpeg(RED))
    write(root, "other/photo.jpg", solid_jpeg(BLUE))
    write(tmp_path / "outside", "photo.jpg", solid_jpeg(BLUE))
    elsewhere = root / "other" if target == "inside" else tmp_path / "outside"
    # The walk has listed the file (and handed it on, ADR 0033); it is not opened yet.
    before(
        monkeypatch, deciding, "process", lambda: swap_folder_for_link(root / "album", elsewhere)
    )
    config = await h.add_config(root)

    item = await h.run("crawl", config_id=config)

    assert item.status is Status.SUCCEEDED, item.error
    result = crawl_result(item)
    errors = {e.path: e.reason for e in result.errors}
    assert errors == {"album/photo.jpg": "folder 'album' is a symbolic link: not followed"}
    assert "album/photo.jpg" not in await live_paths(h, config)


@pytest.mark.parametrize("decoder_processes", [0, 1])
async def test_an_image_swapped_after_the_open_is_decoded_from_the_opened_file(
    pool: AsyncConnectionPool[Any],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    decoder_processes: int,
) -> None:
    root = tmp_path / "library"
    original = write(root, "album/photo.jpg", solid_jpeg(RED))
    # The secret is made to look like the original to stat (size and mtime) as well.
    secret = write(
        tmp_path / "secret",
        "photo.jpg",
        padded_to(solid_jpeg(BLUE), original.stat().st_size),
    )
    same_stat(secret, original)
    # Hashed (the open happened); decode not yet started.
    after(
        monkeypatch,
        deciding,
        "decide",
        lambda: swap_folder_for_link(root / "album", tmp_path / "secret"),
    )
    async with decoder_or_threads(decoder_processes) as decoder:
        h = make_harness(pool, tmp_path, decoder=decoder)
        config = await h.add_config(root)
        item = await h.run("crawl", config_id=config)

    assert item.status is Status.SUCCEEDED, item.error
    result = crawl_result(item)
    written = proxy_images(h)
    assert written, "the proxies were made (from the open file) before the final check"
    for path in written:
        with Image.open(path) as image:
            assert is_red(image), f"{path} shows {colour_of(image)}, not the original"
    # The name now leads through a link: the final check refuses the file.
    [error] = result.errors
    assert error.path == "album/photo.jpg"
    assert "replaced while its proxies were made" in error.reason
    assert "symbolic link" in error.reason
    assert await live_paths(h, config) == set()


async def test_the_final_check_catches_a_file_replaced_by_rename(
    pool: AsyncConnectionPool[Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    h = make_harness(pool, tmp_path)
    root = tmp_path / "library"
    photo = write(root, "photo.jpg", solid_jpeg(RED))
    write(root, "other.jpg", jpeg(7))

    def replace_by_rename() -> None:
        # Same size and modification time, other bytes, another inode.
        replacement = root / ".replacement.tmp"
        replacement.write_bytes(bytes(b ^ 0xFF for b in photo.read_bytes()))
        same_stat(replacement, photo)
        os.replace(replacement, photo)

    real = ingesting.make_image

    async def make_then_replace(crawl: Any, walked: Any, *args: Any) -> Any:
        made = await real(crawl, walked, *args)
        if walked.path == "photo.jpg":
            await asyncio.to_thread(replace_by_rename)
        return made

    monkeypatch.setattr(ingesting, "make_image", make_then_replace)
    config = await h.add_config(root)

    item = await h.run("crawl", config_id=config)

    assert item.status is Status.SUCCEEDED, item.error
    result = crawl_result(item)
    errors = {e.path: e.reason for e in result.errors}
    assert errors == {"photo.jpg": "file was replaced while its proxies were made"}
    assert await live_paths(h, config) == {"other.jpg"}


def colour_video(path: Path, colour: str) -> Path:
    subprocess.run(
        ["ffmpeg", "-v", "error", "-y", "-f", "lavfi", "-i", f"color=c={colour}:s=64x48:d=2:r=10",
         "-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p", str(path)],
        check=True,
    )  # fmt: skip
    return path


def first_frame(video: Path, tmp_path: Path) -> Image.Image:
    png = tmp_path / f"{video.stem}-frame.png"
    subprocess.run(
        ["ffmpeg", "-v", "error", "-y", "-i", str(video), "-frames:v", "1", str(png)], check=True
    )
    with Image.open(png) as image:
        image.load()
        return image.copy()


@pytest.mark.skipif(shutil.which("ffprobe") is None, reason="needs ffmpeg and ffprobe")
async def test_a_video_swapped_for_a_link_under_ffprobe_is_read_from_the_opened_file(
    pool: AsyncConnectionPool[Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    h = make_harness(pool, tmp_path)
    root = tmp_path / "library"
    root.mkdir()
    clip = colour_video(root / "clip.mp4", "red")
    secret = colour_video(tmp_path / "secret.mp4", "blue")
    # The race's winner: an ffprobe first on PATH that swaps the original for a link to
    # the secret (once, atomically), then runs the real ffprobe with its arguments.
    tools = tmp_path / "bin"
    tools.mkdir()
    fake = tools / "ffprobe"
    fake.write_text(
        "#!/bin/sh\n"
        f"if [ ! -L '{clip}' ]; then\n"
        f"  ln -s '{secret}' '{clip}.swap' && mv -T '{clip}.swap' '{clip}'\n"
        "fi\n"
        f"exec '{shutil.which('ffprobe')}' \"$@\"\n"
    )
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tools}{os.pathsep}{os.environ['PATH']}")
    config = await h.add_config(root)

    item = await h.run("crawl", config_id=config)

    assert item.status is Status.SUCCEEDED, item.error
    assert clip.is_symlink(), "the fake ffprobe ran and swapped the file"
    posters = proxy_images(h)
    videos = sorted(p for p in h.proxy_root.rglob("*.mp4") if p.is_file())
    assert posters and videos, "the proxies were made (from the open file)"
    for path in posters:
        with Image.open(path) as image:
            assert is_red(image), f"{path} shows {colour_of(image)}, not the original"
    for path in videos:
        assert is_red(first_frame(path, tmp_path)), f"{path} is not the original's video"
    result = crawl_result(item)
    [error] = result.errors
    assert error.path == "clip.mp4" and "replaced while its proxies" in error.reason
    assert await live_paths(h, config) == set()


# --- safelight's own folders ------------------------------------------------------------


async def test_the_walk_never_enters_the_proxy_root_or_the_home(
    pool: AsyncConnectionPool[Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Even in a configuration the root checks refuse (the crawl's and every registered
    root's, both bypassed here): a library holding the proxy root and the home. Its
    proxies are never ingested as photos."""

    async def no_root_check(services: object, root: Path) -> None:
        pass  # as if the overlap got past the checks (a bind mount, say)

    async def no_registered_roots_check(services: object) -> None:
        pass

    monkeypatch.setattr(opening, "check_config_root", no_root_check)
    monkeypatch.setattr(guards, "check_every_root", no_registered_roots_check)
    root = tmp_path / "library"
    write(root, "photo.jpg", jpeg(70))
    h = make_harness(pool, root)  # the home is <root>/home, the proxy root <root>/proxies
    (root / "home" / DATA_FOLDER).mkdir(parents=True)
    write(root, "home/stray.jpg", jpeg(71))
    config = await h.add_config(root)

    first = await h.run("crawl", config_id=config)
    second = await h.run("crawl", config_id=config)

    for item in (first, second):
        assert item.status is Status.SUCCEEDED, item.error
        result = crawl_result(item)
        skipped = {(e.path, e.reason) for e in result.skipped}
        assert ("home/", "safelight's own folder (home): not crawled") in skipped
    second_result = crawl_result(second)
    assert ("proxies/", "safelight's own folder (proxy root): not crawled") in {
        (e.path, e.reason) for e in second_result.skipped
    }
    assert proxy_images(h), "the first crawl made proxies in the proxy root"
    assert second_result.ingested == 0
    assert await live_paths(h, config) == {"photo.jpg"}
