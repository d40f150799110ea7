"""Bounded resources: photos convert without full-size copies and are refused when they
would not fit the decode budget; the pool is sized by memory; a decode process has an
address-space limit; ffprobe/ffmpeg have a time limit, a thread cap and a low priority."""

from __future__ import annotations

import asyncio
import dataclasses
import io
import os
import platform
import resource
import stat
import struct
import subprocess
import sys
import zlib
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from safelight.library.files import limits
from safelight.library.files.errors import CorruptMedia, DecompressionBomb, TooLargeToDecode
from safelight.library.files.limits import (
    ADDRESS_SPACE_HEADROOM_BYTES,
    FFMPEG_MAX_SECONDS,
    MIB,
    available_memory_bytes,
    decode_processes_for,
    ffmpeg_timeout_seconds,
    ffprobe_timeout_seconds,
    remux_max_bytes,
    tool_address_space_bytes,
    tool_preexec,
    tool_threads,
    web_video_max_bytes,
)
from safelight.library.media.metadata import VideoMetadata, read_video_metadata
from safelight.library.render.decoding import DecodeOutOfMemory
from safelight.library.render.images import ProxySpec, make_image_proxies
from safelight.library.render.video import (
    ToolBounds,
    ToolTimedOut,
    _web_video_command,
    run_killable,
)
from safelight.settings import Settings, SettingsError
from safelight.testing.decoders import running_decoder
from safelight.testing.fakeclock import FakeClock
from safelight.testing.specs import DEFAULT_SPEC, VIDEO_SPEC, proxy_spec, video_spec

SMALL = proxy_spec(thumbnail_width=32, preview_width=96)


# --- conversion: the same pixels as decoding whole, without the copies ------------------


def reference_preview(path: Path, spec: ProxySpec) -> np.ndarray:
    """The preview as the pipeline made it before strips: every step on the whole
    image, high-depth greyscale through float64 (the old ``_to_resizable``)."""
    with Image.open(path) as image:
        image.load()
        mode = image.mode
        if mode.startswith("I") or mode == "F":
            pixels = np.asarray(image, dtype=np.float64)
            top = 65535.0 if pixels.max(initial=0) > 255 else 255.0
            whole = Image.fromarray(np.clip(pixels * (255.0 / top), 0, 255).astype(np.uint8))
        elif mode in ("P", "PA"):
            whole = image.convert("RGBA")
        elif mode == "1":
            whole = image.convert("L")
        else:
            whole = image.copy()
    width = spec.preview_width
    size = (width, max(1, round(whole.height * width / whole.width)))
    resized = whole.resize(size, Image.Resampling.LANCZOS, reducing_gap=3.0)
    if resized.mode in ("RGBA", "LA"):
        base = Image.new(resized.mode[:-1], resized.size, "white")
        base.paste(resized, mask=resized.getchannel("A"))
        resized = base
    encoded = io.BytesIO()
    resized.convert("RGB").save(encoded, "JPEG", quality=spec.preview_quality)
    return np.asarray(Image.open(encoded), dtype=np.float64)


def smooth(height: int, width: int, channels: int, top: float) -> np.ndarray:
    rng = np.random.default_rng(7)
    coarse = rng.random((height // 8 + 2, width // 8 + 2, channels))
    return np.kron(coarse, np.ones((8, 8, 1)))[:height, :width] * top


def png(
    width: int, height: int, colour_type: int, depth: int, rows: bytes, extra: bytes = b""
) -> bytes:
    def chunk(kind: bytes, body: bytes) -> bytes:
        return (
            struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))
        )

    header = struct.pack(">IIBBBBB", width, height, depth, colour_type, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + extra
        + chunk(b"IDAT", zlib.compress(rows))
        + chunk(b"IEND", b"")
    )


def sixteen_bit_png(array: np.ndarray, colour_type: int) -> bytes:
    height, width = array.shape[:2]
    data = array.astype(">u2").reshape(height, -1)
    rows = b"".join(b"\0" + row.tobytes() for row in data)
    return png(width, height, colour_type, 16, rows)


def write_case(tmp_path: Path, case: str, width: int, height: int) -> Path:
    path = tmp_path / f"{case}.{'tif' if case.endswith('tiff') else 'png'}"
    if case == "I;16 png":
        path.write_bytes(sixteen_bit_png(smooth(height, width, 1, 65535)[:, :, 0], 0))
    elif case == "I;16B tiff":
        Image.fromarray(smooth(height, width, 1, 65535)[:, :, 0].astype(">u2")).save(path)
    elif case == "RGB 16-bit png":
        path.write_bytes(sixteen_bit_png(smooth(height, width, 3, 65535), 2))
    elif case == "RGBA 16-bit png":
        path.write_bytes(sixteen_bit_png(smooth(height, width, 4, 65535), 6))
    elif case == "LA 16-bit png":
        path.write_bytes(sixteen_bit_png(smooth(height, width, 2, 65535), 4))
    elif case == "I tiff":
        Image.fromarray(smooth(height, width, 1, 70000)[:, :, 0].astype(np.int32)).save(path)
    elif case == "F tiff":
        Image.fromarray(smooth(height, width, 1, 300)[:, :, 0].astype(np.float32)).save(path)
    elif case == "8-bit-range I;16 png":
        path.write_bytes(sixteen_bit_png(smooth(height, width, 1, 200)[:, :, 0], 0))
    elif case == "LA png":
        Image.fromarray(smooth(height, width, 2, 255).astype(np.uint8), "LA").save(path)
    elif case == "P png with transparency":
        rgb = Image.fromarray(smooth(height, width, 3, 255).astype(np.uint8), "RGB")
        rgb.quantize(32).save(path, transparency=2)
    elif case == "CMYK tiff":
        Image.fromarray(smooth(height, width, 4, 255).astype(np.uint8), "CMYK").save(path)
    elif case == "1 png":
        Image.fromarray(smooth(height, width, 1, 255)[:, :, 0] > 128).save(path)
    else:
        raise AssertionError(case)
    return path


CASES = [
    "I;16 png",
    "I;16B tiff",
    "RGB 16-bit png",
    "RGBA 16-bit png",
    "LA 16-bit png",
    "I tiff",
    "F tiff",
    "8-bit-range I;16 png",
    "LA png",
    "P png with transparency",
    "CMYK tiff",
    "1 png",
]


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("size", [(701, 503), (150, 97)], ids=["reduced", "not reduced"])
def test_each_mode_converts_to_what_decoding_whole_gave(
    tmp_path: Path, case: str, size: tuple[int, int]
) -> None:
    path = write_case(tmp_path, case, *size)
    proxies = make_image_proxies(path, SMALL)
    preview = np.asarray(Image.open(io.BytesIO(proxies.preview.data)).convert("RGB"), dtype=float)
    expected = reference_preview(path, SMALL)
    assert preview.shape == expected.shape
    # Both went through the same JPEG encoder: the same pixels give the same JPEG.
    assert np.abs(preview - expected).mean() < 0.5, case
    assert (proxies.width, proxies.height) == size


def test_strips_of_a_rotated_photo_keep_the_whole_photo(tmp_path: Path) -> None:
    """Reduced before it is turned upright: the partial blocks at the stored image's
    edge must end up where the upright image has them (the box follows the turn)."""
    rgb = Image.fromarray(smooth(503, 701, 3, 255).astype(np.uint8), "RGB")
    for orientation in (3, 6, 8):
        exif = Image.Exif()
        exif[0x0112] = orientation
        path = tmp_path / f"o{orientation}.png"
        rgb.save(path, exif=exif.tobytes())
        proxies = make_image_proxies(path, SMALL)
        preview = np.asarray(Image.open(io.BytesIO(proxies.preview.data)), dtype=float)
        method = {3: Image.Transpose.ROTATE_180, 6: Image.Transpose.ROTATE_270,
                  8: Image.Transpose.ROTATE_90}[orientation]  # fmt: skip
        upright = rgb.transpose(method)
        size = (96, round(upright.height * 96 / upright.width))
        encoded = io.BytesIO()
        upright.resize(size, Image.Resampling.LANCZOS, reducing_gap=3.0).save(
            encoded, "JPEG", quality=SMALL.preview_quality
        )
        expected = np.asarray(Image.open(encoded), dtype=float)
        assert np.abs(preview - expected).mean() < 1.0, orientation


# --- memory: a hard address-space limit the old pipeline exceeded ------------------------

_UNDER_LIMIT = """
import resource, sys
from pathlib import Path
resource.setrlimit(resource.RLIMIT_AS, ({limit}, resource.RLIM_INFINITY))
from safelight.library.render.images import ProxySpec, make_image_proxies
proxies = make_image_proxies(Path(sys.argv[1]), ProxySpec(**{spec!r}))
print(proxies.width, proxies.height)
"""


def big_compressible_png(path: Path, width: int, height: int, colour_type: int) -> None:
    """A large PNG of a few hundred KB: one gradient row, then rows 'same as above'."""
    channels = {0: 1, 3: 1}[colour_type]
    depth = 16 if colour_type == 0 else 8
    if depth == 16:
        first = b"".join((x * 65535 // (width - 1)).to_bytes(2, "big") for x in range(width))
    else:
        first = bytes(x % 16 for x in range(width * channels))
    compressor = zlib.compressobj(9)
    up = b"\x02" + bytes(len(first))
    data = compressor.compress(b"\0" + first)
    data += b"".join(compressor.compress(up) for _ in range(height - 1)) + compressor.flush()

    def chunk(kind: bytes, body: bytes) -> bytes:
        return (
            struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))
        )

    extra = b""
    if colour_type == 3:
        extra = chunk(b"PLTE", bytes(range(48))) + chunk(b"tRNS", b"\0\x80")
    header = struct.pack(">IIBBBBB", width, height, depth, colour_type, 0, 0, 0)
    path.write_bytes(
        b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + extra + chunk(b"IDAT", data)
        + chunk(b"IEND", b"")
    )  # fmt: skip


@pytest.mark.parametrize(
    ("colour_type", "limit_mib"),
    # 40 MP. I;16: 80 MB decoded; the float64 path took about 28 bytes a pixel (1.1 GB).
    # P with transparency: 40 MB decoded; RGBA and then premultiplied copies took 8
    # bytes a pixel more (320 MB) on top of the interpreter's ~200 MB of address space.
    [(0, 600), (3, 420)],
    ids=["I;16", "P with transparency"],
)
def test_a_large_high_depth_png_decodes_within_a_hard_memory_limit(
    tmp_path: Path, colour_type: int, limit_mib: int
) -> None:
    path = tmp_path / "big.png"
    big_compressible_png(path, 7300, 5480, colour_type)
    assert path.stat().st_size < 1_000_000
    result = subprocess.run(
        [
            sys.executable,
            "-c",
            _UNDER_LIMIT.format(
                limit=limit_mib * MIB,
                # The default spec, given whole: the script imports no more than it must.
                spec=dataclasses.asdict(proxy_spec(decode_memory_mib=4096)),
            ),
            str(path),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.split() == ["7300", "5480"]


# --- the pixel cap of formats decoded whole --------------------------------------------


def header_only_png(width: int, height: int, colour_type: int = 2) -> bytes:
    return png(width, height, colour_type, 8, b"\0" * 64)


def test_a_png_too_large_for_the_budget_is_refused_before_decoding(tmp_path: Path) -> None:
    path = tmp_path / "panorama.png"
    path.write_bytes(header_only_png(12_000, 10_000))  # 120 MP of RGB: 480 MB decoded
    with pytest.raises(TooLargeToDecode) as caught:
        make_image_proxies(path, DEFAULT_SPEC)
    assert isinstance(caught.value, DecompressionBomb)
    assert caught.value.reason.startswith("too large to decode safely: 120.0 MP, limit ")
    limit = float(caught.value.reason.split("limit ")[1].split(" MP")[0])
    assert 80 < limit < 110
    # Greyscale takes a quarter of the memory: the same size is within its cap, and
    # fails only later, as the truncated file it is.
    path.write_bytes(header_only_png(12_000, 10_000, colour_type=0))
    with pytest.raises(CorruptMedia, match="truncated"):
        make_image_proxies(path, DEFAULT_SPEC)


def test_the_budget_decides_the_cap_and_jpegs_keep_their_draft(tmp_path: Path) -> None:
    """At the smallest budget a 12 MP PNG is refused, while a 12 MP JPEG, decoded at an
    eighth by libjpeg, is made."""
    tight = proxy_spec(thumbnail_width=32, preview_width=96, decode_memory_mib=128)
    picture = Image.new("RGB", (4000, 3000), (10, 120, 200))
    picture.save(tmp_path / "a.png")
    picture.save(tmp_path / "a.jpg", quality=80)
    with pytest.raises(TooLargeToDecode, match=r"12\.0 MP, limit"):
        make_image_proxies(tmp_path / "a.png", tight)
    assert make_image_proxies(tmp_path / "a.jpg", tight).width == 4000
    assert make_image_proxies(tmp_path / "a.png", SMALL).width == 4000


def test_heif_is_counted_with_its_decoder() -> None:
    """libheif decodes whole and holds its planes meanwhile: a 48 MP iPhone photo fits
    the default budget, a 64 MP one does not."""
    budget = limits.DEFAULT_DECODE_MEMORY_MIB * MIB
    for size, fits in (((8064, 6048), True), ((9248, 6936), False)):
        arguments = ("HEIF", "RGB", size, "RGB", size, False, 1920 * size[1], budget)
        if fits:
            limits.check_decode_fits(*arguments)
        else:
            with pytest.raises(TooLargeToDecode):
                limits.check_decode_fits(*arguments)


# --- the pool's size and the decode process's limit -------------------------------------


def test_the_pool_size_is_the_smaller_of_cores_and_memory() -> None:
    gib = 1 << 30
    assert decode_processes_for(4, 16 * gib, gib // 2) == 4
    assert decode_processes_for(8, 3 * gib, gib // 2) == 6
    assert decode_processes_for(8, 3 * gib - 1, gib) == 2
    assert decode_processes_for(4, 100 * MIB, gib // 2) == 1  # at least one
    assert decode_processes_for(4, None, gib // 2) == 4  # memory unknown: cores


def test_available_memory_reads_meminfo_and_a_cgroup_limit(tmp_path: Path) -> None:
    meminfo = tmp_path / "meminfo"
    meminfo.write_text("MemTotal: 8000000 kB\nMemAvailable:    4000000 kB\n")
    cgroup = tmp_path / "cgroup"
    cgroup.mkdir()
    assert available_memory_bytes(meminfo, cgroup) == 4_000_000 * 1024
    (cgroup / "memory.max").write_text("max\n")
    (cgroup / "memory.current").write_text("100\n")
    assert available_memory_bytes(meminfo, cgroup) == 4_000_000 * 1024
    (cgroup / "memory.max").write_text(f"{1 << 30}\n")
    (cgroup / "memory.current").write_text(f"{1 << 28}\n")
    assert available_memory_bytes(meminfo, cgroup) == (1 << 30) - (1 << 28)
    assert available_memory_bytes(tmp_path / "none", tmp_path / "none") is None


def test_settings_size_the_pool_by_the_memory_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    from safelight import settings as settings_module

    monkeypatch.setattr(settings_module, "available_cores", lambda: 8)
    monkeypatch.setattr(settings_module, "available_memory_bytes", lambda: 2048 * MIB)
    assert Settings.load({}, {}).decode_processes == 4  # 2 GiB / 512 MiB
    env = {"SAFELIGHT_DECODE_MEMORY_MIB": "1024"}
    loaded = Settings.load({}, env)
    assert (loaded.decode_memory_mib, loaded.decode_processes) == (1024, 2)
    assert Settings.load({"decode_processes": 3}, env).decode_processes == 3  # explicit wins
    with pytest.raises(SettingsError, match="decode_memory_mib must be at least 128"):
        Settings.load({}, {"SAFELIGHT_DECODE_MEMORY_MIB": "64"})


@pytest.mark.usefixtures("loop_errors")
async def test_a_decode_process_has_an_address_space_limit() -> None:
    async with running_decoder(1, memory_mib=300) as decoder:
        soft, _ = await decoder.run(resource.getrlimit, resource.RLIMIT_AS)
        assert soft == 300 * MIB + ADDRESS_SPACE_HEADROOM_BYTES
        (pid,) = decoder.pids()
        # Beyond it, an allocation is this photo's error, and the process lives on.
        with pytest.raises(DecodeOutOfMemory, match="ran out of memory decoding this photo"):
            await decoder.run(bytearray, 8 << 30)
        assert await decoder.run(len, b"next") == 4
        assert decoder.pids() == [pid]


# --- ffprobe and ffmpeg -------------------------------------------------------------------


def test_tool_time_limits_follow_the_files_bytes_and_packets_not_its_duration() -> None:
    """A 1.4 KB file of two packets gets the base limit, whatever duration it claims;
    a real video gets half a second a frame, a twentieth an audio packet, and reading
    time for its bytes; nothing more than the cap."""
    assert ffmpeg_timeout_seconds(1420, 2, 0) == pytest.approx(
        limits.FFMPEG_BASE_SECONDS + 1.0, abs=0.01
    )
    # A minute of 30 fps video with 48 kHz AAC (2,813 packets), 150 MiB.
    assert ffmpeg_timeout_seconds(150 * MIB, 1800, 2813) == pytest.approx(
        300 + 1800 * 0.5 + 2813 * 0.05 + 150 * 0.5
    )
    assert ffmpeg_timeout_seconds(100 * 1024 * MIB, 10_000_000, 0) == FFMPEG_MAX_SECONDS
    assert ffmpeg_timeout_seconds(-1, -1, -1) == limits.FFMPEG_BASE_SECONDS
    assert ffprobe_timeout_seconds(0) == limits.FFPROBE_TIMEOUT_SECONDS <= 60
    assert ffprobe_timeout_seconds(4096 * MIB) == pytest.approx(60 + 4096 * 0.5)


def test_the_web_videos_size_limit_follows_the_packets() -> None:
    assert web_video_max_bytes(2, 0) == MIB + 2 * 256 * 1024
    assert web_video_max_bytes(1800, 2813) == MIB + 1800 * 256 * 1024 + 2813 * 32 * 1024
    # A remux copies the packets: the source's bytes and a little index for each.
    assert remux_max_bytes(10 * MIB, 100) == 11 * MIB + 100 * 64


def test_a_tools_address_space_is_the_decode_processes_and_room_for_its_threads() -> None:
    budget = 512 * MIB
    assert tool_address_space_bytes(budget, 2) == (
        budget + ADDRESS_SPACE_HEADROOM_BYTES + 2 * limits.TOOL_THREAD_ADDRESS_SPACE_BYTES
    )
    assert tool_address_space_bytes(budget, 8) - tool_address_space_bytes(budget, 2) == (
        6 * 256 * MIB
    )


def test_a_tool_runs_with_its_address_space_limit() -> None:
    """The preexec function caps the child's RLIMIT_AS (and lowers its priority)."""
    completed = subprocess.run(
        ["sh", "-c", "ulimit -v"],
        capture_output=True,
        check=True,
        preexec_fn=tool_preexec(700 * MIB),
    )
    assert completed.stdout.decode().strip() == str(700 * 1024)


def test_ffmpeg_threads_are_capped_by_cores() -> None:
    assert tool_threads(1) == 1
    assert tool_threads(4) == 4
    assert tool_threads(64) == limits.MAX_TOOL_THREADS
    meta = VideoMetadata(
        width=640, height=480, rotation=0, duration_seconds=3.0, codec="h264",
        has_audio=False, captured_at=datetime(2020, 1, 1, tzinfo=UTC), captured_at_source="file",
        make=None, model=None, content_identifier=None, video_packets=90,
    )  # fmt: skip
    bounds = ToolBounds.of(meta, VIDEO_SPEC)
    command = _web_video_command(Path("in.mp4"), Path("out.mp4"), "scale", bounds, meta, VIDEO_SPEC)
    threads = str(tool_threads())
    input_at = command.index("-i")
    # Before -i: the decoder's; after it: the encoder's; and the filters' (global).
    assert command[command.index("-threads") + 1] == threads
    assert command.index("-threads") < input_at
    assert command[command.index("-filter_threads") + 1] == threads
    after = command[input_at:]
    assert after[after.index("-threads") + 1] == threads


_PRIORITY = """
import ctypes, os, platform
ioprio_get = {{"x86_64": 252, "aarch64": 31, "riscv64": 31, "i686": 290, "i386": 290}}
number = ioprio_get[platform.machine()]
libc = ctypes.CDLL(None, use_errno=True)
ioprio = libc.syscall(ctypes.c_long(number), ctypes.c_long(1), ctypes.c_long(0))
print(os.getpriority(os.PRIO_PROCESS, 0), ioprio >> 13, ioprio & 0xFF)
"""


@pytest.mark.usefixtures("loop_errors")
@pytest.mark.skipif(
    platform.machine() not in ("x86_64", "aarch64", "riscv64", "i686", "i386"),
    reason="ioprio_get's number is known here only for common machines",
)
async def test_tools_run_at_nice_10_and_best_effort_io_7() -> None:
    result = await run_killable([sys.executable, "-c", _PRIORITY.format()])
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == [b"10", b"2", b"7"]
    assert os.getpriority(os.PRIO_PROCESS, 0) < 10  # the Worker itself is left alone


def forever(tmp_path: Path) -> tuple[str, Path]:
    """A fake ffmpeg that starts a grandchild and never ends; it records both pids."""
    pids = tmp_path / "pids"
    script = tmp_path / "ffmpeg-forever"
    script.write_text(
        f"#!/bin/sh\nsleep 600 &\necho $$ $! > {pids}.tmp\nmv {pids}.tmp {pids}\nwait\n"
    )
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return str(script), pids


def running(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state not in ("Z", "X")


@pytest.mark.usefixtures("loop_errors")
async def test_a_tool_past_its_time_limit_is_killed_with_its_group(tmp_path: Path) -> None:
    script, pids = forever(tmp_path)
    loop = asyncio.get_running_loop()
    started = loop.time()
    with pytest.raises(ToolTimedOut, match=r"time limit of 0\.3 s"):
        await asyncio.wait_for(run_killable([script], timeout_seconds=0.3), 10)
    assert loop.time() - started < 5
    shell, grandchild = (int(p) for p in pids.read_text().split())
    assert not running(shell)
    for _ in range(500):  # the group's kill reaches the grandchild within milliseconds
        if not running(grandchild):
            break
        await asyncio.sleep(0.01)
    assert not running(grandchild)


@pytest.mark.usefixtures("loop_errors")
async def test_the_time_limit_runs_on_the_injected_clock(tmp_path: Path) -> None:
    script, pids = forever(tmp_path)
    clock = FakeClock()
    task = asyncio.create_task(run_killable([script], timeout_seconds=100.0, clock=clock))
    for _ in range(1000):
        if pids.exists():
            break
        await asyncio.sleep(0.01)
    shell, _ = (int(p) for p in pids.read_text().split())
    await clock.advance(99)
    assert not task.done() and running(shell)
    await clock.advance(1)
    with pytest.raises(ToolTimedOut):
        await asyncio.wait_for(task, 10)
    assert not running(shell)


@pytest.mark.usefixtures("loop_errors")
async def test_a_video_whose_ffmpeg_hangs_gets_a_per_file_timeout(tmp_path: Path) -> None:
    """The whole path: probe (real ffprobe), then a poster ffmpeg that never ends; the
    fake clock passes its limit, and the video's error names the limit."""
    from safelight.library.render.video import make_video_proxies
    from safelight.testing.samplegen import generate_library

    library = generate_library(tmp_path / "library", seed=9)
    if library.video_skipped_reason is not None:
        pytest.skip(library.video_skipped_reason)
    script, pids = forever(tmp_path)
    clock = FakeClock()
    task = asyncio.create_task(
        make_video_proxies(
            library.root / "2022/videos/clip.mp4", tmp_path, video_spec(ffmpeg=script),
            lambda: None, clock=clock,
        )
    )  # fmt: skip
    for _ in range(2000):
        if pids.exists():
            break
        await asyncio.sleep(0.01)
    probed = read_video_metadata(library.root / "2022/videos/clip.mp4")
    assert probed.size_bytes and probed.video_packets and probed.audio_packets
    limit = ffmpeg_timeout_seconds(probed.size_bytes, probed.video_packets, probed.audio_packets)
    await clock.advance(limit)
    with pytest.raises(ToolTimedOut) as caught:
        await asyncio.wait_for(task, 10)
    assert caught.value.reason == (
        f"ffmpeg-forever ran past its time limit of {limit:g} s and was killed"
    )
