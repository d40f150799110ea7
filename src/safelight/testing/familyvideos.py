"""Videos as a family's cameras and phones leave them, built with ffmpeg for tests:
clips of a few frames, the old phone formats (3GP, 3G2), a raw MPEG-2 elementary
stream, AVCHD's MPEG-TS with 192-byte packets and its recording date in the H.264
stream, and QuickTime files with a local-time ``creationdate`` key (ADR 0054).

Every frame is ffmpeg's ``testsrc2`` (colour bars and a moving pattern), so a poster
that came out blank is told apart from one of the clip; ``black_clip`` is the clip a
blank poster is right for.
"""

from __future__ import annotations

import struct
import subprocess
from datetime import datetime
from pathlib import Path

AVCHD_UUID = bytes.fromhex("17ee8c60f84d11d98cd60800200c9a66")
"""The unregistered user data (SEI) that carries AVCHD's Modified DV Pack Metadata.
Written here from ExifTool's H264 module, not taken from the reader
(``containers``): the builder stays an independent witness, checked by ExifTool."""

_PATTERN = "testsrc2=s={size}:r={rate}"


def _ffmpeg(*args: str) -> None:
    subprocess.run(["ffmpeg", "-v", "error", "-y", *args], check=True, capture_output=True)


def short_clip(
    path: Path, *, frames: int, rate: int = 25, audio_seconds: float | None = None
) -> Path:
    """An H.264 MP4 of ``frames`` frames; with ``audio_seconds``, an AAC track that long,
    so the container's duration (the longest track) claims more than the frames cover."""
    # The source's own duration, not -frames:v, which would end the audio with the frames.
    pattern = _PATTERN.format(size="320x240", rate=rate) + f":d={frames / rate}"
    args = ["-f", "lavfi", "-i", pattern]
    if audio_seconds is not None:
        args += ["-f", "lavfi", "-i", f"sine=frequency=440:duration={audio_seconds}"]
        args += ["-c:a", "aac"]
    args += ["-c:v", "libx264", "-preset", "ultrafast"]
    _ffmpeg(*args, "-pix_fmt", "yuv420p", str(path))
    return path


def black_clip(path: Path, *, seconds: float = 1.0) -> Path:
    """A clip whose every frame is black: a blank poster is the right one."""
    _ffmpeg(
        "-f", "lavfi", "-i", f"color=c=black:s=320x240:r=25:d={seconds}",
        "-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p", str(path),
    )  # fmt: skip
    return path


def family_format_clip(path: Path, *, seconds: float = 1.0) -> Path:
    """A one-second clip in the format ``path``'s extension names, as cameras and phones
    wrote it, within what this ffmpeg can encode:

    - ``.3gp``: H.263 (176x144) with AAC (a phone's AMR needs an encoder Debian's ffmpeg
      lacks); ``.3g2``: MPEG-4 Part 2 with AAC in the 3GPP2 brand;
    - ``.m2v``: a raw MPEG-2 video elementary stream, with no container and no duration;
    - ``.m2ts``/``.mts``: AVCHD's layout, H.264 and AC-3 in MPEG-TS with 192-byte packets
      (a 4-byte arrival time stamp before each 188-byte packet: ``-mpegts_m2ts_mode``).
    """
    suffix = path.suffix.lower()
    video = ["-f", "lavfi", "-i", _PATTERN.format(size="176x144", rate=15) + f":d={seconds}"]
    sound = ["-f", "lavfi", "-i", f"sine=frequency=440:duration={seconds}"]
    if suffix == ".3gp":
        _ffmpeg(*video, *sound, "-c:v", "h263", "-c:a", "aac", "-ac", "1", "-f", "3gp", str(path))
    elif suffix == ".3g2":
        _ffmpeg(*video, *sound, "-c:v", "mpeg4", "-c:a", "aac", "-ac", "1", "-f", "3g2", str(path))
    elif suffix == ".m2v":
        _ffmpeg(*video, "-c:v", "mpeg2video", "-f", "mpeg2video", str(path))
    elif suffix in (".m2ts", ".mts"):
        avchd_clip(path, seconds=seconds, recorded=None)
    else:
        raise ValueError(f"no family format for {suffix!r}")
    return path


def avchd_clip(
    path: Path,
    *,
    recorded: datetime | None,
    seconds: float = 1.0,
    zone_byte: int | None = None,
) -> Path:
    """An AVCHD clip (H.264 + AC-3 in 192-byte-packet MPEG-TS) whose first access unit
    carries, when ``recorded`` is given, the camcorder's recording date as AVCHD writes
    it: an SEI of unregistered user data (``AVCHD_UUID``) holding ``MDPM`` tags 0x18 and
    0x19 in BCD, the first byte of 0x18 the zone (``mdpm_zone_byte``, or ``zone_byte``).

    x264's own SEI is dropped and this one placed before the first slice, where
    camcorders put it (and the only SEI ExifTool looks at in the first access unit).
    """
    raw = path.with_suffix(".h264")
    _ffmpeg(
        "-f", "lavfi", "-i", _PATTERN.format(size="320x240", rate=25) + f":d={seconds}",
        "-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p",
        "-bsf:v", "filter_units=remove_types=6", "-f", "h264", str(raw),
    )  # fmt: skip
    if recorded is not None:
        zone = mdpm_zone_byte(recorded) if zone_byte is None else zone_byte
        raw.write_bytes(_with_sei_before_first_slice(raw.read_bytes(), mdpm_sei(recorded, zone)))
    try:
        _ffmpeg(
            "-f", "h264", "-r", "25", "-i", str(raw),
            "-f", "lavfi", "-i", f"sine=frequency=440:duration={seconds}",
            "-c:v", "copy", "-c:a", "ac3", "-f", "mpegts", "-mpegts_m2ts_mode", "1", str(path),
        )  # fmt: skip
    finally:
        raw.unlink()
    return path


def mdpm_zone_byte(recorded: datetime) -> int:
    """AVCHD's zone byte of an aware time (0x20 the sign, bits 1-4 the hours, 0x01 the
    half hour; as ExifTool's H264 module reads it); 0x80 ("unused") for a naive one."""
    offset = recorded.utcoffset()
    if offset is None:
        return 0x80
    minutes = int(offset.total_seconds()) // 60
    sign = 0x20 if minutes < 0 else 0
    hours, half = divmod(abs(minutes), 60)
    return sign | (hours << 1) | (1 if half == 30 else 0)


def mdpm_sei(recorded: datetime, zone: int) -> bytes:
    """The SEI NAL unit (Annex B, start code first) of AVCHD's recording date."""

    def bcd(value: int) -> int:
        return (value // 10) << 4 | value % 10

    date = bytes([0x18, zone, bcd(recorded.year // 100), bcd(recorded.year % 100)])
    date += bytes([bcd(recorded.month), 0x19, bcd(recorded.day), bcd(recorded.hour)])
    date += bytes([bcd(recorded.minute), bcd(recorded.second)])
    payload = AVCHD_UUID + b"MDPM" + bytes([2]) + date
    # SEI: payload type 5 (unregistered user data), its size, the payload, the RBSP stop.
    body = bytes([5, len(payload)]) + payload + b"\x80"
    return b"\0\0\0\1\x06" + _escaped(body)


def _escaped(rbsp: bytes) -> bytes:
    """A NAL unit's payload with H.264's emulation prevention: a 3 after two zeros
    before any byte of 0 to 3, so that no start code appears inside it."""
    out = bytearray()
    zeros = 0
    for byte in rbsp:
        if zeros >= 2 and byte <= 3:
            out.append(3)
            zeros = 0
        out.append(byte)
        zeros = zeros + 1 if byte == 0 else 0
    return bytes(out)


def _with_sei_before_first_slice(stream: bytes, sei: bytes) -> bytes:
    """``stream`` (Annex B H.264) with ``sei`` inserted before its first slice's NAL."""
    position = 0
    while True:
        start = stream.index(b"\0\0\1", position)
        if stream[start + 3] & 0x1F in (1, 5):  # a slice (non-IDR or IDR)
            begin = start - 1 if start > 0 and stream[start - 1] == 0 else start
            return stream[:begin] + sei + stream[begin:]
        position = start + 3


def quicktime_clip(
    path: Path,
    *,
    creation_time: str | None = None,
    creationdate: str | None = None,
    content_date: str | None = None,
    location: str | None = None,
) -> Path:
    """A short MOV or MP4 (by ``path``'s extension) with the container's
    ``creation_time`` (UTC, in ``mvhd``) and, if given, Apple's
    ``com.apple.quicktime.creationdate`` as an ``mdta`` key (``use_metadata_tags``),
    the local time with its zone as an iPhone writes it (``2024-07-14T18:03:12+0200``);
    ``content_date``: ``©day`` (in ``udta`` of a MOV, ``ilst`` of an MP4), as older
    iPhones wrote it (``2010-02-12T13:27:14-0800``); ``location``: the ISO 6709 position
    (``+40.7128-074.0060/``) as ``©xyz`` in ``udta``, as Android phones write it."""
    args = ["-f", "lavfi", "-i", _PATTERN.format(size="320x240", rate=25) + ":d=1"]
    args += ["-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p"]
    if creation_time is not None:
        args += ["-metadata", f"creation_time={creation_time}"]
    if content_date is not None:
        args += ["-metadata", f"date={content_date}"]
    if location is not None:
        args += ["-metadata", f"location={location}"]
    if creationdate is not None:
        args += ["-metadata", f"com.apple.quicktime.creationdate={creationdate}"]
        args += ["-movflags", "use_metadata_tags"]
    _ffmpeg(*args, str(path))
    return path


def claim_duration(path: Path, seconds: float) -> Path:
    """Rewrite the ``mvhd`` duration of the MP4 at ``path`` to claim ``seconds``, its
    tracks left as they are: a header that lies about how long the clip is."""
    data = bytearray(path.read_bytes())
    box = data.find(b"mvhd")
    if box < 0:
        raise ValueError(f"{path} has no mvhd box")
    if data[box + 4] == 1:  # version 1: 64-bit times, then a 32-bit time scale
        (scale,) = struct.unpack_from(">I", data, box + 24)
        struct.pack_into(">Q", data, box + 28, round(seconds * scale))
    else:
        (scale,) = struct.unpack_from(">I", data, box + 16)
        struct.pack_into(">I", data, box + 20, round(seconds * scale))
    path.write_bytes(bytes(data))
    return path
