"""Benchmark 5: crawl speed against the fastest loop Pillow allows, on the same files.

    .venv/bin/python bench/crawl.py [--count 2000] [--megapixels 12] [--rounds 2]
                                    [--max-concurrent-files 4[,8...]]
                                    [--decode-processes default[,0...]]
                                    [--folder PATH]
                                    [--raw [--sensor-megapixels 2] | --motion | --heic]

Generates ``--count`` distinct JPEGs of ``--megapixels`` (samplegen.generate_jpegs;
kept in ``--folder`` if given, else a temporary folder removed afterwards), or with
``--raw`` DNGs whose embedded preview has ``--megapixels`` and whose (uncompressed)
mosaic ``--sensor-megapixels`` (testing.dng.generate_dngs: the preview is what a crawl
decodes, the mosaic only read), or with ``--motion`` those JPEGs as Google motion photos
(a 3 s 720p H.264 clip inside each, which the crawl remuxes into its web video; the
loop makes only the two JPEGs), or with ``--heic`` HEICs of ``--megapixels`` (four
frames encoded once by pillow-heif, each file one of them with a ``free`` box of its own
at the end: distinct content at the cost of a copy), then, in each round, in turns:

- read: every file read whole in 1 MiB chunks, one thread (the raw read rate);
- hash: every file through ``hashing.hash_file`` (XXH3-64), one thread, and two;
- loop: the fastest path the image library allows, on both cores: a pool of 2
  processes, each file opened, ``draft``-decoded to at least the preview size, resized
  to the preview (1920 px, Lanczos) and the thumbnail (300 px, from the preview), both
  encoded as JPEG (quality 85 and 75): the same two JPEGs a crawl makes, and nothing
  else (no hash, metadata, BlurHash, colour management, files or database); with
  ``--raw`` each file is first opened by LibRaw (rawpy) and its embedded preview taken;
  with ``--heic`` it is the bare pillow-heif loop (libheif has no scaled decode, so
  ``draft`` does nothing: the whole picture is decoded, then resized);
- crawl: a fresh database and proxy folder, one storage config on the folder, one
  ``crawl`` item, drained by one Worker process (``safelight worker --until-idle``,
  default settings: max_concurrent_files 4, decode_processes one per core, ADR 0010).
  Files per second = count / (the crawl item's finished_at - started_at). Sampled
  every 0.2 s: the Worker's peak RSS (VmHWM) and CPU time, the same of each of its
  decode processes (its children started by multiprocessing's ``spawn``), and the whole
  machine's busy CPU over the crawl. The decode processes' RSS is reported as the sum
  of their peaks (each VmHWM; they live as long as the Worker, so their peaks coexist
  at most, and pages they share are counted in each) and as the largest single peak.
  CPU "cores" are CPU seconds over the crawl's span: the Worker's own, the decode
  processes' summed, and both together.

The page cache is warm for every pass (the files are read before): the rates are
CPU-bound, as on a NAS whose disks keep up.
"""

from __future__ import annotations

import argparse
import asyncio
import io
import multiprocessing
import os
import shutil
import statistics
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import psycopg
import rawpy
from PIL import Image

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import (
    Processes,
    bench_database,
    print_table,
    spread,
    versions,
    worker_argv,
    worker_env,
    write_result,
)

from safelight.core.clock import SystemClock
from safelight.db.pool import open_pool
from safelight.handlers import KIND_SPECS
from safelight.library.catalogue.configs import StorageConfigs
from safelight.library.files.hashing import hash_file
from safelight.settings import Settings
from safelight.testing.dng import generate_dngs
from safelight.testing.motionphotos import google_xmp, tiny_mp4, with_xmp
from safelight.testing.samplegen import generate_jpegs, marker_picture
from safelight.work.store import WorkStore

CHUNK = 1 << 20
PREVIEW_WIDTH, PREVIEW_QUALITY = 1920, 85
THUMBNAIL_WIDTH, THUMBNAIL_QUALITY = 300, 75


def make_motion_photos(paths: tuple[Path, ...]) -> None:
    """Turn each JPEG into a Google motion photo (format 1: the container directory in
    its XMP, the video appended), with one 3 s 720p H.264 clip, as a phone records."""
    with tempfile.TemporaryDirectory() as scratch:
        video = tiny_mp4(Path(scratch) / "clip.mp4", seconds=3.0, size="1280x720")
    for path in paths:
        still = path.read_bytes()
        path.write_bytes(with_xmp(still, google_xmp(video_length=len(video))) + video)


def generate_heics(folder: Path, count: int, megapixels: float) -> tuple[Path, ...]:
    """``count`` distinct HEICs: four frames encoded once, each file one of them with a
    ``free`` box of its own appended (a top-level box any reader skips)."""
    width = max(16, round((megapixels * 1_000_000 * 4 / 3) ** 0.5))
    height = max(12, round(width * 3 / 4))
    frames = []
    for index in range(4):
        picture = marker_picture(width, height, seed=index)
        out = io.BytesIO()
        picture.save(out, format="HEIF", quality=80)
        frames.append(out.getvalue())
    paths = []
    for index in range(count):
        sub = folder / f"{index // 1000:04d}"
        sub.mkdir(parents=True, exist_ok=True)
        path = sub / f"IMG_{index:06d}.heic"
        tag = f"safelight bench {index}".encode()
        path.write_bytes(frames[index % 4] + (8 + len(tag)).to_bytes(4, "big") + b"free" + tag)
        paths.append(path)
    return tuple(paths)


def read_all(paths: list[Path]) -> float:
    buffer = bytearray(CHUNK)
    start = time.perf_counter()
    for path in paths:
        with open(path, "rb", buffering=0) as f:
            while f.readinto(buffer):
                pass
    return time.perf_counter() - start


def hash_all(paths: list[Path], threads: int) -> float:
    start = time.perf_counter()
    with ThreadPoolExecutor(threads) as pool:
        list(pool.map(hash_file, paths, chunksize=16))
    return time.perf_counter() - start


def _fit(width: int, height: int, max_width: int) -> tuple[int, int]:
    scale = min(1.0, max_width / width)
    return max(1, round(width * scale)), max(1, round(height * scale))


def two_jpegs(path: Path) -> int:
    """The loop's work on one file: draft decode, preview and thumbnail, both encoded."""
    if path.suffix == ".dng":
        with rawpy.imread(str(path)) as raw:
            return _two_jpegs_of(io.BytesIO(raw.extract_thumb().data))
    return _two_jpegs_of(path)


def _two_jpegs_of(source: Path | io.BytesIO) -> int:
    with Image.open(source) as image:
        preview_size = _fit(*image.size, PREVIEW_WIDTH)
        image.draft("RGB", preview_size)
        preview = image.convert("RGB").resize(
            preview_size, Image.Resampling.LANCZOS, reducing_gap=3.0
        )
    thumbnail = preview.resize(
        _fit(*preview.size, THUMBNAIL_WIDTH), Image.Resampling.LANCZOS, reducing_gap=3.0
    )
    size = 0
    for picture, quality in ((preview, PREVIEW_QUALITY), (thumbnail, THUMBNAIL_QUALITY)):
        out = io.BytesIO()
        picture.save(out, "JPEG", quality=quality)
        size += out.tell()
    return size


def loop_all(paths: list[Path]) -> float:
    # LibRaw is built with OpenMP, which a forked process must not use (rawpy warns of
    # deadlocks): RAWs get spawned processes, as the crawl's decode processes are.
    method = "spawn" if paths and paths[0].suffix == ".dng" else "fork"
    start = time.perf_counter()
    with multiprocessing.get_context(method).Pool(2) as pool:
        list(pool.imap_unordered(two_jpegs, paths, chunksize=4))
    return time.perf_counter() - start


def _stat_fields(pid: int) -> list[str] | None:
    """/proc/PID/stat after the command name (field 3 onwards), or None if it is gone."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return None


def _peak_rss_kib(pid: int) -> int | None:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return None
    for line in status.splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    return None


def _decode_processes(parent: int) -> list[int]:
    """The children of ``parent`` that multiprocessing's spawn started (not its resource
    tracker): the decode processes."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        fields = _stat_fields(int(entry.name))
        if fields is None or int(fields[1]) != parent:
            continue
        try:
            command = (entry / "cmdline").read_bytes()
        except (FileNotFoundError, ProcessLookupError):
            continue
        if b"multiprocessing.spawn" in command:
            found.append(int(entry.name))
    return found


class Sampler:
    """Peak RSS and CPU time of the Worker and of each of its decode processes, and the
    machine's busy CPU, every 0.2 s."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.peak_rss_kib = 0
        self.cpu_seconds = 0.0
        self.decoders_peak_rss_kib: dict[int, int] = {}
        self.decoders_cpu_seconds: dict[int, float] = {}
        self._ticks = os.sysconf("SC_CLK_TCK")
        self._machine: list[tuple[float, int, int]] = []

    def _cpu_seconds(self, fields: list[str]) -> float:
        # utime, stime: fields 14-15 of stat (11-12 after the name). Not the children's
        # (cutime, cstime): the Worker reaps its decode processes only when it ends.
        return (int(fields[11]) + int(fields[12])) / self._ticks

    def sample(self) -> None:
        stat = _stat_fields(self.pid)
        peak = _peak_rss_kib(self.pid)
        if stat is None or peak is None:
            return
        self.peak_rss_kib = max(self.peak_rss_kib, peak)
        self.cpu_seconds = self._cpu_seconds(stat)
        for child in _decode_processes(self.pid):
            child_stat, child_peak = _stat_fields(child), _peak_rss_kib(child)
            if child_stat is None or child_peak is None:
                continue
            self.decoders_peak_rss_kib[child] = max(
                self.decoders_peak_rss_kib.get(child, 0), child_peak
            )
            self.decoders_cpu_seconds[child] = self._cpu_seconds(child_stat)
        fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
        idle = fields[3] + fields[4]
        self._machine.append((time.time(), sum(fields) - idle, sum(fields)))

    def machine_busy_cores(self, start: float, end: float) -> float:
        inside = [m for m in self._machine if start <= m[0] <= end]
        if len(inside) < 2:
            return float("nan")
        busy = inside[-1][1] - inside[0][1]
        total = inside[-1][2] - inside[0][2]
        return (os.cpu_count() or 1) * busy / total if total else float("nan")


async def add_crawl(url: str, folder: Path) -> int:
    pool = await open_pool(url, min_size=1, max_size=2)
    try:
        clock = SystemClock()
        config = (await StorageConfigs(pool, clock).add("bench", folder)).config.id
        return await WorkStore(pool, clock, KIND_SPECS, max_stalls=Settings().max_stalls).enqueue(
            "crawl", config_id=config
        )
    finally:
        await pool.close()


def crawl_once(
    folder: Path, count: int, max_concurrent_files: int, decode_processes: int | None
) -> dict[str, Any]:
    settings: dict[str, object] = {"max_concurrent_files": max_concurrent_files}
    if decode_processes is not None:
        settings["decode_processes"] = decode_processes
    with (
        bench_database("crawl") as url,
        tempfile.TemporaryDirectory(prefix="safelight-bench-home-") as home,
    ):
        item = asyncio.run(add_crawl(url, folder))
        with Processes() as procs:
            child = procs.start(
                worker_argv(1, until_idle=True, name="crawler"),
                env=worker_env(url, Path(home), **settings),
            )
            sampler = Sampler(child.pid)
            while child.poll() is None:
                sampler.sample()
                time.sleep(0.2)
        with psycopg.connect(url) as conn:
            row = conn.execute(
                "SELECT status::text, started_at, finished_at, result FROM work_items"
                " WHERE id = %s",
                (item,),
            ).fetchone()
        assert row is not None
        status, started, finished, result = row
        if status != "succeeded" or result["ingested"] != count:
            raise SystemExit(f"the crawl ended {status}: {result}")
        span = (finished - started).total_seconds()
    decoders = sampler.decoders_peak_rss_kib.values()
    decoder_cpu = sum(sampler.decoders_cpu_seconds.values())
    return {
        "files_per_second": count / span,
        "span_seconds": span,
        "peak_rss_mib": sampler.peak_rss_kib / 1024,
        "decode_processes": len(sampler.decoders_peak_rss_kib),
        "decoders_peak_rss_sum_mib": sum(decoders) / 1024,
        "decoders_peak_rss_max_mib": max(decoders, default=0) / 1024,
        "worker_cores": sampler.cpu_seconds / span,
        "decoders_cores": decoder_cpu / span,
        "worker_and_decoders_cores": (sampler.cpu_seconds + decoder_cpu) / span,
        "machine_busy_cores": sampler.machine_busy_cores(started.timestamp(), finished.timestamp()),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--count", type=int, default=2000)
    parser.add_argument("--megapixels", type=float, default=12.0)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--folder", type=Path, help="keep the generated files here")
    parser.add_argument("--raw", action="store_true", help="DNGs instead of JPEGs")
    parser.add_argument(
        "--motion",
        action="store_true",
        help="Google motion photos: each JPEG with a 3 s 720p H.264 video inside (needs ffmpeg)",
    )
    parser.add_argument("--heic", action="store_true", help="HEICs instead of JPEGs")
    parser.add_argument("--sensor-megapixels", type=float, default=2.0)
    parser.add_argument(
        "--max-concurrent-files",
        default="4",
        help="the Worker setting (default 4, as shipped); a list (4,8) crawls once for each",
    )
    parser.add_argument(
        "--decode-processes",
        default="default",
        help="the Worker setting (default: the Worker's, one per core); a list (default,0) "
        "crawls once for each, with each --max-concurrent-files",
    )
    args = parser.parse_args()
    folder = args.folder or Path(tempfile.mkdtemp(prefix="safelight-bench-jpegs-"))
    try:
        started = time.monotonic()
        suffix = "*.dng" if args.raw else "*.heic" if args.heic else "*.jpg"
        existing = sorted(folder.rglob(suffix))
        if len(existing) != args.count:
            shutil.rmtree(folder, ignore_errors=True)
            if args.raw:
                made = generate_dngs(folder, args.count, args.megapixels, args.sensor_megapixels)
            elif args.heic:
                made = generate_heics(folder, args.count, args.megapixels)
            else:
                made = generate_jpegs(folder, args.count, args.megapixels)
                if args.motion:
                    make_motion_photos(made)
            existing = sorted(made)
        paths = existing
        total_bytes = sum(p.stat().st_size for p in paths)
        print(
            f"{len(paths)} files, {total_bytes / 1e9:.2f} GB "
            f"({time.monotonic() - started:.0f} s to generate or find)",
            flush=True,
        )
        read_all(paths)  # warm the page cache
        settings = [
            (int(n), None if d == "default" else int(d))
            for n in args.max_concurrent_files.split(",")
            for d in args.decode_processes.split(",")
        ]
        runs: dict[str, list[Any]] = {"read": [], "hash1": [], "hash2": [], "loop": []}
        runs.update({_crawl_key(n, d): [] for n, d in settings})
        for r in range(args.rounds):
            runs["read"].append(len(paths) / read_all(paths))
            runs["hash1"].append(len(paths) / hash_all(paths, 1))
            runs["hash2"].append(len(paths) / hash_all(paths, 2))
            runs["loop"].append(len(paths) / loop_all(paths))
            for n, d in settings:
                key = _crawl_key(n, d)
                runs[key].append(crawl_once(folder, len(paths), n, d))
                print(
                    f"round {r + 1}: loop {runs['loop'][-1]:.1f} files/s, crawl "
                    f"({_crawl_label(n, d)}) {runs[key][-1]['files_per_second']:.1f} files/s",
                    flush=True,
                )
    finally:
        if args.folder is None:
            shutil.rmtree(folder, ignore_errors=True)
    mean_mb = total_bytes / len(paths) / 1e6
    out = {
        "versions": versions({"pillow": Image.__version__, "rawpy": rawpy.__version__}),
        "settings": {**vars(args), "folder": str(args.folder), "mean_file_mb": mean_mb},
        "runs": runs,
    }
    name = "crawl-raw" if args.raw else "crawl-motion" if args.motion else "crawl"
    write_result("crawl-heic" if args.heic else name, out)
    loop = statistics.median(runs["loop"])
    read = statistics.median(runs["read"])
    hash1 = statistics.median(runs["hash1"])
    hash2 = statistics.median(runs["hash2"])
    rows = [
        ("read (1 thread)", spread(runs["read"]), f"{read * mean_mb:.0f} MB/s", ""),
        ("hash (1 thread)", spread(runs["hash1"]), "", f"{hash1 / read:.2f}x read"),
        ("hash (2 threads)", spread(runs["hash2"]), "", f"{hash2 / read:.2f}x read"),
        (
            f"{'pillow-heif' if args.heic else 'Pillow'} loop (2 processes)",
            spread(runs["loop"]),
            "",
            "1.00x",
        ),
    ]
    for n, d in settings:
        crawl = runs[_crawl_key(n, d)]

        def of(name: str, crawl: list[Any] = crawl) -> str:
            return spread([c[name] for c in crawl])

        rows.append(
            (
                f"safelight crawl ({_crawl_label(n, d)})",
                of("files_per_second"),
                f"Worker peak RSS {of('peak_rss_mib')} MiB; "
                f"{of('decode_processes')} decode processes, peak RSS summed "
                f"{of('decoders_peak_rss_sum_mib')} MiB, largest "
                f"{of('decoders_peak_rss_max_mib')} MiB; CPU cores: Worker "
                f"{of('worker_cores')}, decode processes {of('decoders_cores')}, both "
                f"{of('worker_and_decoders_cores')}; machine {of('machine_busy_cores')} "
                "cores busy",
                f"{statistics.median(c['files_per_second'] for c in crawl) / loop:.2f}x loop",
            )
        )
    print_table(("pass", "files/s, median [min..max]", "notes", "ratio"), rows)


def _crawl_key(max_concurrent_files: int, decode_processes: int | None) -> str:
    shown = "default" if decode_processes is None else decode_processes
    return f"crawl-{max_concurrent_files}-{shown}"


def _crawl_label(max_concurrent_files: int, decode_processes: int | None) -> str:
    shown = "default" if decode_processes is None else decode_processes
    return f"max_concurrent_files {max_concurrent_files}, decode_processes {shown}"


if __name__ == "__main__":
    main()
