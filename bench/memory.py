"""Benchmark 6: peak memory of a decode process, and of a crawl.

    .venv/bin/python bench/memory.py [--count 200] [--megapixels 12] [--skip-crawl]

Photos, each decoded in a fresh decode process (``ImageDecoder(1)``, as a crawl's):

- a 100 MP 16-bit greyscale PNG (a gradient, then "same as above" rows: about 240 KB,
  the issue's "226 KB PNG that took 2.5 GB");
- a JPEG at the pixel limit (``metadata.MAX_IMAGE_PIXELS``, 250 MP; decoded at an
  eighth by libjpeg);
- an 8-bit RGB PNG and a palette PNG with transparency just under their own caps at the
  default budget (decoded whole: the most a decode process takes by design);
- a PNG over its cap (refused from its header).

For each: the decode process's peak RSS (``VmHWM`` of ``/proc/PID/status``, read from
the Worker side after the photo), its peak before it (a tiny photo first: the
interpreter and libraries), and the time.

Crawl: ``--count`` generated JPEGs of ``--megapixels`` plus the 16-bit PNG in one
folder, crawled by one Worker process (``safelight worker --until-idle``, default
settings) as in ``bench/crawl.py``: the Worker's and each decode process's peak RSS
(sampled VmHWM), and the Worker's children's ``ru_maxrss`` once it is reaped.

Target (issue 12): under 400 MB per decode process at the pixel limit.
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import struct
import sys
import tempfile
import time
import zlib
from pathlib import Path
from typing import Any

from PIL import Image

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import print_table, versions, write_result
from crawl import crawl_once

from safelight.library.files.limits import DEFAULT_DECODE_MEMORY_MIB
from safelight.library.media.metadata import MAX_IMAGE_PIXELS
from safelight.library.render.decoding import ImageDecoder
from safelight.settings import Settings
from safelight.testing.samplegen import generate_jpegs

MB = 1e6


def _chunk(kind: bytes, body: bytes) -> bytes:
    return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))


def compressible_png(path: Path, width: int, height: int, kind: str) -> Path:
    """A large PNG of little data: one row, then rows filtered 'same as above' (zeros)."""
    extra = b""
    if kind == "I;16":
        colour_type, depth = 0, 16
        first = b"".join((x * 65535 // (width - 1)).to_bytes(2, "big") for x in range(width))
    elif kind == "RGB":
        colour_type, depth = 2, 8
        first = bytes((x * 7) % 256 for x in range(width * 3))
    else:  # palette with transparency
        colour_type, depth = 3, 8
        first = bytes(x % 16 for x in range(width))
        extra = _chunk(b"PLTE", bytes(range(48))) + _chunk(b"tRNS", b"\0\x80")
    compressor = zlib.compressobj(9)
    same_as_above = b"\x02" + bytes(len(first))
    data = compressor.compress(b"\0" + first)
    data += b"".join(compressor.compress(same_as_above) for _ in range(height - 1))
    data += compressor.flush()
    header = struct.pack(">IIBBBBB", width, height, depth, colour_type, 0, 0, 0)
    path.write_bytes(
        b"\x89PNG\r\n\x1a\n" + _chunk(b"IHDR", header) + extra + _chunk(b"IDAT", data)
        + _chunk(b"IEND", b"")
    )  # fmt: skip
    return path


def big_jpeg(path: Path, pixels: int) -> Path:
    width = int((pixels * 4 / 3) ** 0.5)
    height = pixels // width
    # Bands of colour, so the JPEG is not trivially flat (libjpeg decodes it all).
    image = Image.linear_gradient("L").resize((width, height)).convert("RGB")
    image.save(path, "JPEG", quality=85)
    return path


def _vm_hwm_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    raise RuntimeError("no VmHWM")


async def decode_peak(path: Path, tiny: Path) -> dict[str, Any]:
    """Peak RSS of a fresh decode process that decodes ``tiny`` and then ``path``."""
    decoder = ImageDecoder(1)
    spec = Settings().proxy_spec()
    try:
        await decoder.decode(tiny, spec)
        (pid,) = decoder.pids()
        before = _vm_hwm_kib(pid)
        started = time.perf_counter()
        try:
            meta, _ = await decoder.decode(path, spec)
            outcome = f"{meta.width}x{meta.height}"
        except Exception as error:  # a refusal is the result being measured
            outcome = f"{type(error).__name__}: {getattr(error, 'reason', error)}"
        seconds = time.perf_counter() - started
        return {
            "outcome": outcome,
            "baseline_mb": before * 1024 / MB,
            "peak_rss_mb": _vm_hwm_kib(pid) * 1024 / MB,
            "seconds": seconds,
            "file_bytes": path.stat().st_size,  # noqa: ASYNC240 (a benchmark, once)
        }
    finally:
        await asyncio.to_thread(decoder.shutdown)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--count", type=int, default=200, help="JPEGs in the crawl")
    parser.add_argument("--megapixels", type=float, default=12.0)
    parser.add_argument("--skip-crawl", action="store_true")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="safelight-bench-memory-"))
    try:
        tiny = work / "tiny.png"
        Image.new("RGB", (64, 48), "grey").save(tiny)
        photos = {
            "16-bit greyscale PNG, 100 MP": compressible_png(
                work / "grey16.png", 11547, 8660, "I;16"
            ),
            "JPEG at the pixel limit (250 MP)": big_jpeg(work / "limit.jpg", MAX_IMAGE_PIXELS - 1),
            "RGB PNG, 80 MP (its cap: about 87 MP)": compressible_png(
                work / "rgb.png", 10328, 7746, "RGB"
            ),
            "palette PNG with transparency, 200 MP": compressible_png(
                work / "palette.png", 16330, 12247, "P"
            ),
            "RGB PNG, 120 MP (over its cap)": compressible_png(
                work / "over.png", 12649, 9487, "RGB"
            ),
        }
        decodes = {name: asyncio.run(decode_peak(path, tiny)) for name, path in photos.items()}
        for name, found in decodes.items():
            print(f"{name}: {found}", flush=True)
        crawl: dict[str, Any] | None = None
        if not args.skip_crawl:
            folder = work / "library"
            generate_jpegs(folder / "jpegs", args.count, args.megapixels)
            shutil.copy(photos["16-bit greyscale PNG, 100 MP"], folder / "grey16.png")
            crawl = crawl_once(folder, args.count + 1, 4, None)
            print(f"crawl: {crawl}", flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    out = {
        "versions": versions({"pillow": Image.__version__}),
        "settings": {**vars(args), "decode_memory_mib": DEFAULT_DECODE_MEMORY_MIB},
        "decodes": decodes,
        "crawl": crawl,
    }
    write_result("memory", out)
    rows = [
        (
            name,
            f"{d['file_bytes'] / 1e3:,.0f} KB",
            f"{d['peak_rss_mb']:.0f} MB",
            f"{d['baseline_mb']:.0f} MB",
            f"{d['seconds']:.1f} s",
            d["outcome"],
        )
        for name, d in decodes.items()
    ]
    print_table(("photo", "file", "peak RSS", "before it", "time", "outcome"), rows)
    if crawl is not None:
        print()
        print_table(
            ("crawl", "files/s", "Worker peak RSS", "decode processes", "largest", "summed"),
            [
                (
                    f"{args.count} JPEGs of {args.megapixels:g} MP + the 16-bit PNG",
                    f"{crawl['files_per_second']:.1f}",
                    f"{crawl['peak_rss_mib']:.0f} MiB",
                    crawl["decode_processes"],
                    f"{crawl['decoders_peak_rss_max_mib']:.0f} MiB",
                    f"{crawl['decoders_peak_rss_sum_mib']:.0f} MiB",
                )
            ],
        )


if __name__ == "__main__":
    main()
