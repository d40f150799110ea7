"""The two hostile videos of issue 27, made here with ffmpeg and zlib (nothing
downloaded), for the tests and ``bench/hostile_video.py``:

- ``timestamp_gap_video``: a 1.3 KB MKV of two tiny frames, the second 36,000 s after the
  first; the container claims ten hours. Encoded at a constant frame rate, the gap
  becomes ten hours of copies of the first frame.
- ``huge_frame_video``: a 3.3 MB MKV of one 16000x16000 frame (a black PNG, which
  deflate shrinks a thousandfold); decoding it takes 768 MB of RGB, and every copy and
  conversion as much again.
"""

from __future__ import annotations

import json
import struct
import subprocess
import zlib
from dataclasses import dataclass
from pathlib import Path

GAP_SECONDS = 36_000
HUGE_SIDE = 16_000


def timestamp_gap_video(path: Path, gap_seconds: int = GAP_SECONDS) -> Path:
    """Two 64x48 H.264 frames at 30 fps, the second ``gap_seconds`` after the first, in
    an MKV at ``path`` (which claims ``gap_seconds`` of duration)."""
    subprocess.run(
        ["ffmpeg", "-nostdin", "-v", "error", "-y",
         "-f", "lavfi", "-i", "color=c=red:s=64x48:r=30", "-frames:v", "2",
         "-vf", f"setpts=N*{gap_seconds}/TB", "-fps_mode", "passthrough", "-r", "30",
         "-c:v", "libx264", "-preset", "ultrafast", "-g", "1", "-f", "matroska", str(path)],
        check=True,
    )  # fmt: skip
    return path


def huge_frame_video(path: Path, side: int = HUGE_SIDE) -> Path:
    """One black ``side`` x ``side`` RGB frame (PNG) in an MKV at ``path``: its streams
    copied by ffmpeg from a PNG written here, so nothing decodes the frame to make it."""
    png = path.with_suffix(".png")
    png.write_bytes(_black_png(side, side))
    try:
        subprocess.run(
            ["ffmpeg", "-nostdin", "-v", "error", "-y", "-f", "image2", "-c:v", "png",
             "-i", str(png), "-c:v", "copy", "-f", "matroska", str(path)],
            check=True,
        )  # fmt: skip
    finally:
        png.unlink(missing_ok=True)
    return path


def claimed_duration_seconds(path: Path) -> float:
    """The duration the container claims (ffprobe's ``format.duration``)."""
    out = subprocess.run(
        ["ffprobe", "-v", "error", "-print_format", "json", "-show_format", str(path)],
        capture_output=True,
        check=True,
    ).stdout
    return float(json.loads(out)["format"]["duration"])


def _black_png(width: int, height: int) -> bytes:
    row = bytes(1 + width * 3)  # filter "none", then black pixels
    compressor = zlib.compressobj(1)  # the fastest level: about a second at 16000x16000
    data = b"".join(compressor.compress(row) for _ in range(height)) + compressor.flush()
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)  # 8-bit RGB
    return (
        b"\x89PNG\r\n\x1a\n"
        + _chunk(b"IHDR", header)
        + _chunk(b"IDAT", data)
        + _chunk(b"IEND", b"")
    )


def _chunk(kind: bytes, body: bytes) -> bytes:
    return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))


@dataclass(frozen=True, slots=True)
class HostileVideos:
    timestamp_gap: Path
    huge_frame: Path


def hostile_videos(folder: Path) -> HostileVideos:
    """Both videos in ``folder``, made once (the huge frame takes a second or two):
    a session's tests share them by passing the same folder."""
    folder.mkdir(parents=True, exist_ok=True)
    gap, huge = folder / "timestamp-gap.mkv", folder / "huge-frame.mkv"
    if not gap.exists():
        timestamp_gap_video(folder / "timestamp-gap.tmp.mkv").rename(gap)
    if not huge.exists():
        huge_frame_video(folder / "huge-frame.tmp.mkv").rename(huge)
    return HostileVideos(gap, huge)
