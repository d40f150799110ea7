"""Android motion photos built for tests: a still with an MP4 inside, laid out as Google
(XMP with a container directory, or the older MicroVideo offset) and Samsung (the
``MotionPhoto_Data`` block and its SEF trailer; the ``mpvd`` box of a HEIC) write them.
"""

from __future__ import annotations

import io
import struct
import subprocess
from pathlib import Path

from PIL import Image

XMP_APP1_HEADER = b"http://ns.adobe.com/xap/1.0/\x00"


def tiny_mp4(path: Path, *, seconds: float = 0.2, size: str = "64x48") -> bytes:
    """A short H.264 MP4 made by ffmpeg (the caller skips when ffmpeg is missing)."""
    subprocess.run(
        ["ffmpeg", "-v", "error", "-y", "-f", "lavfi", "-i", f"testsrc2=s={size}:d={seconds}",
         "-c:v", "libx264", "-pix_fmt", "yuv420p", "-f", "mp4", str(path)],
        check=True,
    )  # fmt: skip
    return path.read_bytes()


def still_jpeg(color: tuple[int, int, int] = (200, 40, 40)) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (64, 48), color).save(out, "JPEG")
    return out.getvalue()


def still_heic(color: tuple[int, int, int] = (40, 200, 40)) -> bytes:
    import pillow_heif

    pillow_heif.register_heif_opener()
    out = io.BytesIO()
    Image.new("RGB", (64, 48), color).save(out, "HEIF")
    return out.getvalue()


def with_xmp(jpeg: bytes, packet: bytes) -> bytes:
    """``jpeg`` with an APP1 XMP segment right after its start of image."""
    assert jpeg[:2] == b"\xff\xd8"
    body = XMP_APP1_HEADER + packet
    return jpeg[:2] + b"\xff\xe1" + struct.pack(">H", len(body) + 2) + body + jpeg[2:]


def google_xmp(*, video_length: int, padding: int = 0, motion: str = "1") -> bytes:
    """Motion Photo format 1 XMP: the primary, then the video item of that length."""
    return f"""<x:xmpmeta xmlns:x="adobe:ns:meta/">
  <rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#">
    <rdf:Description rdf:about=""
        xmlns:Camera="http://ns.google.com/photos/1.0/camera/"
        xmlns:Container="http://ns.google.com/photos/1.0/container/"
        xmlns:Item="http://ns.google.com/photos/1.0/container/item/"
      Camera:MotionPhoto="{motion}" Camera:MotionPhotoVersion="1"
      Camera:MotionPhotoPresentationTimestampUs="100000">
      <Container:Directory>
        <rdf:Seq>
          <rdf:li rdf:parseType="Resource">
            <Container:Item Item:Mime="image/jpeg" Item:Semantic="Primary"
              Item:Length="0" Item:Padding="0"/>
          </rdf:li>
          <rdf:li rdf:parseType="Resource">
            <Container:Item Item:Mime="video/mp4" Item:Semantic="MotionPhoto"
              Item:Length="{video_length}" Item:Padding="{padding}"/>
          </rdf:li>
        </rdf:Seq>
      </Container:Directory>
    </rdf:Description>
  </rdf:RDF>
</x:xmpmeta>""".encode()


def micro_video_xmp(offset: int) -> bytes:
    """The older Google layout: ``GCamera:MicroVideo`` and the offset from the end."""
    return f"""<x:xmpmeta xmlns:x="adobe:ns:meta/">
  <rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#">
    <rdf:Description rdf:about="" xmlns:GCamera="http://ns.google.com/photos/1.0/camera/">
      <GCamera:MicroVideo>1</GCamera:MicroVideo>
      <GCamera:MicroVideoVersion>1</GCamera:MicroVideoVersion>
      <GCamera:MicroVideoOffset>{offset}</GCamera:MicroVideoOffset>
    </rdf:Description>
  </rdf:RDF>
</x:xmpmeta>""".encode()


def google_motion_jpeg(video: bytes, *, length: int | None = None) -> bytes:
    """A Motion Photo format 1 JPEG; ``length`` lies about the video's length if given."""
    xmp = google_xmp(video_length=len(video) if length is None else length)
    return with_xmp(still_jpeg(), xmp) + video


def micro_video_jpeg(video: bytes, *, offset: int | None = None) -> bytes:
    xmp = micro_video_xmp(len(video) if offset is None else offset)
    return with_xmp(still_jpeg((40, 40, 200)), xmp) + video


def sef_block(name: bytes, data: bytes, type_code: int) -> bytes:
    return b"\x00\x00" + struct.pack("<HI", type_code, len(name)) + name + data


def sef_trailer(blocks: list[tuple[int, bytes]], blocks_start: int) -> bytes:
    """The SEFH directory and SEFT end of Samsung's trailer, for ``blocks`` (type code,
    whole block) laid end to end from ``blocks_start`` up to the directory."""
    total = sum(len(b) for _, b in blocks)
    sefh = blocks_start + total
    entries = b""
    at = blocks_start
    for type_code, block in blocks:
        entries += b"\x00\x00" + struct.pack("<HII", type_code, sefh - at, len(block))
        at += len(block)
    directory = b"SEFH" + struct.pack("<II", 107, len(blocks)) + entries
    return directory + struct.pack("<I", len(directory)) + b"SEFT"


def samsung_motion_jpeg(video: bytes, *, still: bytes | None = None) -> bytes:
    """A Samsung motion photo JPEG: the still, the ``MotionPhoto_Data`` block holding the
    MP4 (here ``video``: not checked), another block, then the SEF directory."""
    start = still if still is not None else still_jpeg((200, 200, 40))
    blocks = [
        (0x0A01, sef_block(b"Image_UTC_Data", b"1705124333853", 0x0A01)),
        (0x0A30, sef_block(b"MotionPhoto_Data", video, 0x0A30)),
    ]
    body = b"".join(b for _, b in blocks)
    return start + body + sef_trailer(blocks, len(start))


def heic_with_mpvd(video: bytes, *, heic: bytes | None = None) -> bytes:
    """A HEIC with the MP4 in a top-level ``mpvd`` box after the image's boxes."""
    still = heic if heic is not None else still_heic()
    return still + struct.pack(">I", len(video) + 8) + b"mpvd" + video
