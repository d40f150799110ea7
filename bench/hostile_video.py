"""What ffprobe and ffmpeg cost on issue 27's two hostile videos (item 3).

    .venv/bin/python bench/hostile_video.py [--rounds 3] [--before 2348a7a] [--before-limit 60]

The videos (``safelight.testing.hostilevideos``, made here with ffmpeg):

- the timestamp gap: a 1.3 KB MKV of two frames 36,000 s apart (it claims ten hours);
- the huge frame: a 3.3 MB MKV of one 16000x16000 frame.

Each is made into its proxies (``video.make_video_proxies``: probe, poster, web video,
probe of the web video) in a fresh Python process, so that process's children are
exactly the tools of that one video: the wall time, the tools' CPU time (user + system)
and their peak RSS (``getrusage(RUSAGE_CHILDREN).ru_maxrss``: the largest of them), the
outcome (the web video's size, or the recorded reason).

``--before REV`` runs the same with the code of ``REV`` (``git archive`` of its ``src``
into a temporary folder), once, each video stopped after ``--before-limit`` seconds
(the old time limit of the timestamp gap was six hours); ``--before ''`` skips it.
Figures in docs/benchmarks.md ("Hostile videos").
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import ROOT, print_table, versions, write_result

from safelight.testing.hostilevideos import hostile_videos

_CHILD = r"""
import asyncio, json, resource, sys, time
from pathlib import Path
from safelight.library.files.errors import MediaError
from safelight.library.render.images import ProxySpec
from safelight.library.render.video import VideoProxySpec, make_video_proxies

source, out, limit = Path(sys.argv[1]), Path(sys.argv[2]), float(sys.argv[3])
spec = VideoProxySpec(image=ProxySpec(
    thumbnail_width=320, thumbnail_quality=80, preview_width=1600, preview_quality=85))

async def main():
    started = time.monotonic()
    outcome = {}
    try:
        made = await asyncio.wait_for(
            make_video_proxies(source, out, spec, lambda: None), limit)
        outcome = {"outcome": "made", "web_video_bytes": made.web_video.stat().st_size}
    except MediaError as error:
        outcome = {"outcome": "refused", "reason": error.reason}
    except TimeoutError:
        # Cancelled: the tool's process group was killed; what it wrote so far stays.
        written = out / "video.mp4"
        outcome = {
            "outcome": f"stopped after {limit:g} s",
            "web_video_bytes": written.stat().st_size if written.exists() else 0,
        }
    wall = time.monotonic() - started
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    outcome.update(
        wall_seconds=wall,
        cpu_seconds=usage.ru_utime + usage.ru_stime,
        peak_rss_mb=usage.ru_maxrss / 1024,
    )
    print(json.dumps(outcome))

asyncio.run(main())
"""


def run_case(source: Path, src_tree: Path, limit_seconds: float) -> dict[str, Any]:
    """One video's proxies in a fresh process running the code of ``src_tree``."""
    with tempfile.TemporaryDirectory(prefix="bench-hostile-") as out:
        env = {**os.environ, "PYTHONPATH": str(src_tree)}
        completed = subprocess.run(
            [sys.executable, "-c", _CHILD, str(source), out, str(limit_seconds)],
            capture_output=True,
            check=True,
            env=env,
        )
    result: dict[str, Any] = json.loads(completed.stdout.decode().strip().splitlines()[-1])
    return result


def old_tree(rev: str, folder: Path) -> Path:
    """``rev``'s ``src`` folder, unpacked into ``folder``."""
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", rev, "src"], capture_output=True, check=True
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(folder)], input=archive, check=True)
    return folder / "src"


def row(code: str, video: str, runs: list[dict[str, Any]]) -> list[object]:
    first = runs[0]
    outcome = first["outcome"]
    if "reason" in first:
        outcome += f': "{first["reason"]}"'
    if "web_video_bytes" in first:
        outcome += f", web video {first['web_video_bytes'] / 1e3:,.1f} kB"

    def median(key: str) -> float:
        return statistics.median(r[key] for r in runs)

    return [
        code,
        video,
        len(runs),
        f"{median('wall_seconds'):.2f}",
        f"{median('cpu_seconds'):.2f}",
        f"{median('peak_rss_mb'):,.0f}",
        outcome,
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--before", default="2348a7a", help="a git revision; '' to skip")
    parser.add_argument("--before-limit", type=float, default=60.0)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="bench-hostile-videos-") as scratch:
        videos = hostile_videos(Path(scratch) / "videos")
        cases = {"timestamp gap": videos.timestamp_gap, "huge frame": videos.huge_frame}
        rows: list[list[object]] = []
        results: dict[str, Any] = {"videos": {k: v.stat().st_size for k, v in cases.items()}}
        if args.before:
            tree = old_tree(args.before, Path(scratch))
            for name, path in cases.items():
                runs = [run_case(path, tree, args.before_limit)]
                results[f"before {name}"] = runs
                rows.append(row(args.before, name, runs))
        for name, path in cases.items():
            runs = [run_case(path, ROOT / "src", 3600.0) for _ in range(args.rounds)]
            results[f"now {name}"] = runs
            rows.append(row("now", name, runs))
    header = ["code", "video", "runs", "wall s", "tools' CPU s", "tools' peak RSS MB", "outcome"]
    print_table(header, rows)
    write_result("hostile_video", {"versions": versions(), "results": results})


if __name__ == "__main__":
    main()
