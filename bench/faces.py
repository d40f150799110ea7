"""What finding faces costs a photo, and how far apart the faces at hand are (ADR 0067).

    .venv/bin/python bench/faces.py [--copies 4] [--rounds 3]

The photos: previews as the crawl makes them (``make_image_proxies`` with the default
settings: 1920 pixels wide) of the shared samples' photos that hold a face, of as many
that hold none, and of drawn faces (``safelight.testing.faces``) in 1920x1440 pictures;
``--copies`` times each, so a process's figures are not its first photo's.

1. Cost: each process is fresh (``--child``): the models' load, then per photo the
   decode, the detection (``finding.detect``) and each face's description
   (``finding.describe``) in CPU seconds; its peak RSS (``ru_maxrss``) after the imports,
   after the load and at the end. Then the whole set by one process and by two at once
   (each the whole set): wall time a photo on the two cores.
2. Distances: each face of the samples against the same face made over (the preview of
   its turned copy, half size, a JPEG of quality 40, mirrored, darker, turned 8 degrees)
   and against every other face; how many fall each side of ``grouping.THRESHOLD``.
3. The grouping's cost: ``grouping.group`` with synthetic faces (placed, unplaced, fresh).

Figures in docs/benchmarks.md ("Faces").
"""

from __future__ import annotations

import argparse
import io
import itertools
import json
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np
from common import print_table, versions, write_result
from PIL import Image, ImageEnhance, ImageOps

from safelight.library.faces import finding, grouping, models
from safelight.library.faces.descriptors import DIMENSIONS, unpack
from safelight.library.render.images import make_image_proxies
from safelight.testing.faces import drawn_face, jpeg_of
from safelight.testing.samples import IMAGES, SAMPLES
from safelight.testing.specs import DEFAULT_SPEC

PORTRAITS = "immich-test-assets/metadata/faces"


def rss_mb() -> float:
    """This process's peak RSS (``VmHWM``: of its own memory since its exec; the
    ``ru_maxrss`` of a child keeps its parent's peak across the exec)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def previews(folder: Path) -> list[Path]:
    """The benchmark's previews written into ``folder``: sample photos with faces, as
    many without, and drawn faces."""
    out: list[Path] = []
    with_faces: list[Path] = []
    without: list[Path] = []
    for path in IMAGES:
        try:
            data = make_image_proxies(path, DEFAULT_SPEC).preview.data
        except Exception:  # a sample safelight refuses is no preview
            continue
        (with_faces if finding.find_faces(data) else without).append(path)
        target = folder / f"{len(out):03d}-{path.stem}.jpg"
        target.write_bytes(data)
        out.append(target)
    keep = {p.stem for p in with_faces} | {p.stem for p in without[: len(with_faces)]}
    out = [p for p in out if p.stem.split("-", 1)[1] in keep]
    for n in range(6):
        target = folder / f"drawn-{n}.jpg"
        target.write_bytes(
            jpeg_of(drawn_face((1920, 1440), at=(300 + 250 * n, 700), scale=0.4 + 0.15 * n))
        )
        out.append(target)
    return out


def child(paths: list[Path]) -> dict[str, Any]:
    """In a fresh process: load, then every photo; CPU seconds of each step."""
    imported = rss_mb()
    started = time.process_time()
    loaded = models.models()
    load = time.process_time() - started
    after_load = rss_mb()
    steps: dict[str, list[float]] = {"decode": [], "detect": [], "describe": []}
    faces = 0
    wall = time.monotonic()
    for path in paths:
        t0 = time.process_time()
        pixels = finding.decode(path.read_bytes())
        t1 = time.process_time()
        rects = finding.detect(loaded, pixels)
        t2 = time.process_time()
        for rect in rects:
            finding.describe(loaded, pixels, rect)
            faces += 1
        t3 = time.process_time()
        steps["decode"].append(t1 - t0)
        steps["detect"].append(t2 - t1)
        if rects:
            steps["describe"].append((t3 - t2) / len(rects))
    return {
        "photos": len(paths),
        "faces": faces,
        "wall_s": time.monotonic() - wall,
        "load_cpu_s": load,
        "rss_imported_mb": imported,
        "rss_loaded_mb": after_load,
        "rss_peak_mb": rss_mb(),
        "steps": {k: statistics.mean(v) if v else 0.0 for k, v in steps.items()},
        "detect_max_s": max(steps["detect"]),
    }


def run_children(paths: list[Path], processes: int) -> tuple[float, list[dict[str, Any]]]:
    listing = json.dumps([str(p) for p in paths])
    started = time.monotonic()
    procs = [
        subprocess.Popen(
            [sys.executable, __file__, "--child"], stdin=subprocess.PIPE, stdout=subprocess.PIPE
        )
        for _ in range(processes)
    ]
    for proc in procs:  # every child has its list before any is waited for
        assert proc.stdin is not None
        proc.stdin.write(listing.encode())
        proc.stdin.close()
    outs = []
    for proc in procs:
        assert proc.stdout is not None
        outs.append(proc.stdout.read())
        proc.wait()
    wall = time.monotonic() - started
    return wall, [json.loads(o) for o in outs]


def made_over(image: Image.Image) -> dict[str, Image.Image]:
    w, h = image.size
    return {
        "half size": image.resize((w // 2, h // 2)),
        "JPEG q40": Image.open(io.BytesIO(jpeg_of(image, quality=40))),
        "mirrored": ImageOps.mirror(image),
        "darker": ImageEnhance.Brightness(image).enhance(0.6),
        "turned 8 degrees": image.rotate(8, expand=True, fillcolor=(128, 128, 128)),
    }


def distances(paths: list[Path]) -> dict[str, Any]:
    people: list[tuple[str, np.ndarray]] = []
    same: list[tuple[str, float]] = []
    for path in paths:
        if path.name.startswith("drawn-"):
            continue
        data = path.read_bytes()
        for n, face in enumerate(finding.find_faces(data)):
            vector = unpack([face.descriptor])[0]
            people.append((f"{path.stem}#{n}", vector))
            image = Image.open(io.BytesIO(data)).convert("RGB")
            for how, other in made_over(image).items():
                found = finding.find_faces(jpeg_of(other))
                if not found:
                    same.append((how, float("nan")))
                    continue
                nearest = min(
                    float(np.linalg.norm(vector - unpack([f.descriptor])[0])) for f in found
                )
                same.append((how, nearest))
    assert SAMPLES is not None
    folder = SAMPLES / PORTRAITS
    portraits = [
        unpack(
            [
                finding.find_faces(make_image_proxies(folder / n, DEFAULT_SPEC).preview.data)[
                    0
                ].descriptor
            ]
        )[0]
        for n in ("portrait.jpg", "portrait-orientation-6.jpg")
        if (folder / n).is_file()
    ]
    if len(portraits) == 2:
        same.append(("its EXIF-turned copy", float(np.linalg.norm(portraits[0] - portraits[1]))))
    # The portrait and its turned copy are one person, not a pair of two.
    pairs = [
        (a[0], b[0], float(np.linalg.norm(a[1] - b[1])))
        for a, b in itertools.combinations(people, 2)
        if _person(a[0]) != _person(b[0])
    ]
    different = [d for _, _, d in pairs]
    threshold = grouping.THRESHOLD
    found_same = [d for _, d in same if d == d]
    return {
        "faces": len(people),
        "same_pairs": len(same),
        "same_not_found": sum(1 for _, d in same if d != d),
        "same_over_threshold": sum(1 for d in found_same if d >= threshold),
        "same_max": max(found_same),
        "same_median": statistics.median(found_same),
        "same_by_kind": {
            how: max(d for h, d in same if h == how and d == d)
            for how in {h for h, _ in same}
            if any(h == how and d == d for h, d in same)
        },
        "different_pairs": len(different),
        "different_under_threshold": sum(1 for d in different if d < threshold),
        "different_min": min(different),
        "different_median": statistics.median(different),
        "by_threshold": {
            t: {
                "same_over": sum(1 for d in found_same if d >= t),
                "different_under": sum(1 for d in different if d < t),
            }
            for t in (0.45, 0.5, 0.55, 0.6, 0.65)
        },
        "different_under_threshold_pairs": [
            (a, b, round(d, 3)) for a, b, d in pairs if d < threshold
        ],
    }


ONE_PERSON = ("portrait", "canon_hdr")
"""Photos of one person under two names: the portrait and its turned copy, and the two
frames of one HDR pair."""


def _person(face: str) -> str:
    return next((name for name in ONE_PERSON if name in face), face)


def grouping_cost() -> list[dict[str, Any]]:
    rng = np.random.default_rng(67)
    rows = []
    for placed_n, unplaced_n, fresh_n in ((2_000, 500, 40), (20_000, 5_000, 40)):
        centres = rng.normal(size=(placed_n // 20 + 1, DIMENSIONS)).astype(np.float32)
        placed = (
            centres[np.arange(placed_n) % len(centres)]
            + 0.02 * rng.normal(size=(placed_n, DIMENSIONS))
        ).astype(np.float32)
        unplaced = rng.normal(size=(unplaced_n, DIMENSIONS)).astype(np.float32)
        started = time.process_time()
        grouping.group(
            grouping.Faces(
                list(range(placed_n)), placed, [i % len(centres) for i in range(placed_n)]
            ),
            grouping.Faces(list(range(placed_n, placed_n + unplaced_n)), unplaced),
            frozenset(range(placed_n, placed_n + fresh_n)),
        )
        rows.append(
            {
                "placed": placed_n,
                "unplaced": unplaced_n,
                "fresh": fresh_n,
                "cpu_s": time.process_time() - started,
            }
        )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--copies", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child([Path(p) for p in json.loads(sys.stdin.read())])))
        return
    if SAMPLES is None:
        raise SystemExit("bench/faces.py needs the samples (../shared/samples)")
    with tempfile.TemporaryDirectory() as tmp:
        paths = previews(Path(tmp))
        batch = paths * args.copies
        rounds = []
        for _ in range(args.rounds):
            one_wall, (one,) = run_children(batch, 1)
            two_wall, two = run_children(batch, 2)
            rounds.append({"one": one, "one_wall_s": one_wall, "two": two, "two_wall_s": two_wall})
        far = distances(paths)
    cost = grouping_cost()
    photos = len(batch)
    med = lambda key: statistics.median(key(r) for r in rounds)  # noqa: E731
    table = [
        ["models' load (CPU s, once per process)", f"{med(lambda r: r['one']['load_cpu_s']):.2f}"],
        ["decode of a preview (CPU s)", f"{med(lambda r: r['one']['steps']['decode']):.3f}"],
        ["detection a photo (CPU s)", f"{med(lambda r: r['one']['steps']['detect']):.3f}"],
        ["detection, the slowest photo (CPU s)", f"{med(lambda r: r['one']['detect_max_s']):.3f}"],
        ["description a face (CPU s)", f"{med(lambda r: r['one']['steps']['describe']):.3f}"],
        ["one process: wall a photo (s)", f"{med(lambda r: r['one_wall_s']) / photos:.3f}"],
        [
            "two processes at once: wall a photo (s)",
            f"{med(lambda r: r['two_wall_s']) / (2 * photos):.3f}",
        ],
        ["peak RSS: imports (MB)", f"{med(lambda r: r['one']['rss_imported_mb']):.0f}"],
        ["peak RSS: models loaded (MB)", f"{med(lambda r: r['one']['rss_loaded_mb']):.0f}"],
        ["peak RSS: after every photo (MB)", f"{med(lambda r: r['one']['rss_peak_mb']):.0f}"],
    ]
    print(
        f"{photos} photos a process ({len(paths)} previews x {args.copies}), "
        f"{rounds[0]['one']['faces']} faces, {args.rounds} rounds (medians)"
    )
    print_table(["what", "figure"], table)
    print(json.dumps(far, indent=1))
    print_table(
        ["placed", "unplaced", "fresh", "group() CPU s"],
        [[c["placed"], c["unplaced"], c["fresh"], f"{c['cpu_s']:.3f}"] for c in cost],
    )
    write_result(
        "faces",
        {
            "versions": versions(),
            "rounds": rounds,
            "distances": far,
            "grouping": cost,
            "photos": photos,
        },
    )


if __name__ == "__main__":
    main()
