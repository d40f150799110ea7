"""Benchmark: the threshold of similar shots (ADR 0066), on a labelled set built from
the shared samples.

    .venv/bin/python bench/similar.py [--samples DIR] [--max-bits 20] [--window-seconds 120]

The set: every photo of ``../shared/samples`` (``$SAFELIGHT_SAMPLES_DIR``) that safelight
decodes, less the ones that are one picture again (the orientation test set, one file
copied under four names: kept once, the first by path, where two thumbnails are at most
``SAME_PICTURE_BITS`` apart under both hashes), the ones too small to be a photo (a
thumbnail under ``MIN_SIDE`` px a side) and blank test images (``FLAT_STDDEV``). Photos
that are one scene (``ONE_SCENE``, labelled by eye) are one family. Each photo has its
variants, made with Pillow from its upright preview:

- edits: brighter (+25%), more contrast (+30%), a warm filter (red up, blue down),
  black and white;
- re-encodes: JPEG at quality 50 and 30, WebP at 70, PNG;
- crops: 5%, 10% and 15% off the width and height (from the top-left corner, the
  worst case for a hash of the whole frame) and 10% centred;
- resizes: to half and to a quarter.

Every file, original and variant, goes through the crawl's own decode
(``render.decoding.decode_image``, the default proxy sizes), and its hash is taken from
the thumbnail it would store, under both hashes measured: the picture hash
(``fingerprints.fingerprint_of``, a DCT hash: pHash) and the difference hash it replaced
(dHash, ADR 0056, ``dhash_of`` here).

Per threshold (Hamming distance <= t):

- ``false pairs``: pairs from two families within t; ``false groups``: groups of the
  single-linkage grouping (``similar.group_similar``'s rule) that hold more than one
  family;
- ``missed``: same-scene pairs (each variant, and each second photo of a scene, with
  its family's first photo) over t; ``apart``: those not in their family's group.

"With window" applies the time window: each family's time is its original's capture
time as read from itself; its variants are taken 2 s apart after it (a reshoot); a
family whose original has no time of its own is left out (safelight does not group a
photo dated by its file). Without window: every pair is a candidate.

No database is written; the versions record asks the server's version.
"""

from __future__ import annotations

import argparse
import io
import itertools
import os
import sys
import tempfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

from PIL import Image, ImageEnhance, ImageStat

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import print_table, versions, write_result

from safelight.library.files.errors import MediaError
from safelight.library.grouping.copies import FILE_DATED
from safelight.library.grouping.fingerprints import fingerprint_of
from safelight.library.render.decoding import decode_image
from safelight.library.render.images import ProxySpec
from safelight.settings import Settings

SAME_PICTURE_BITS = 3
MIN_SIDE = 48
FLAT_STDDEV = 2.0
"""A thumbnail whose grey levels spread less than this is a blank test image, no photo."""
ONE_SCENE = {
    # Two shots of one scene, seconds apart (with and without HDR): one family.
    "exif-samples/jpg/hdr/canon_hdr_YES.jpg": "exif-samples/jpg/hdr/canon_hdr_NO.jpg",
    "exif-samples/jpg/hdr/iphone_hdr_YES.jpg": "exif-samples/jpg/hdr/iphone_hdr_NO.jpg",
    # One picture, turned by its orientation tag in one of them.
    "immich-test-assets/metadata/faces/portrait-orientation-6.jpg": (
        "immich-test-assets/metadata/faces/portrait.jpg"
    ),
}
"""Sample photos that are one scene or one picture, labelled so by eye."""
VARIANT_GAP = timedelta(seconds=2)


@dataclass(frozen=True)
class Hashed:
    family: int
    name: str
    dhash: int
    phash: int
    at: datetime | None
    variant: str | None = None
    """None: the distinct photo itself."""


def dhash_of(image: Image.Image) -> int:
    """The difference hash of ADR 0056, for the comparison: whether each cell of a 9x8
    grey grid is brighter than its right neighbour."""
    grey = image.convert("L").resize((9, 8), Image.Resampling.BOX)
    pixels = grey.tobytes()
    bits = 0
    for y in range(8):
        for x in range(8):
            bits = (bits << 1) | (pixels[y * 9 + x] > pixels[y * 9 + x + 1])
    return bits


def _encode(image: Image.Image, fmt: str, **options: object) -> bytes:
    out = io.BytesIO()
    image.save(out, fmt, **options)
    return out.getvalue()


def _crop(image: Image.Image, share: float, centred: bool = False) -> Image.Image:
    w, h = image.size
    dx, dy = round(w * share), round(h * share)
    if centred:
        return image.crop((dx // 2, dy // 2, w - (dx - dx // 2), h - (dy - dy // 2)))
    return image.crop((dx, dy, w, h))


def _warm(image: Image.Image) -> Image.Image:
    r, g, b = image.split()
    return Image.merge(
        "RGB", (r.point(lambda v: min(255, int(v * 1.15))), g, b.point(lambda v: int(v * 0.8)))
    )


VARIANTS: dict[str, Callable[[Image.Image], bytes]] = {
    "brighter": lambda im: _encode(ImageEnhance.Brightness(im).enhance(1.25), "JPEG", quality=90),
    "contrast": lambda im: _encode(ImageEnhance.Contrast(im).enhance(1.3), "JPEG", quality=90),
    "warm filter": lambda im: _encode(_warm(im), "JPEG", quality=90),
    "black and white": lambda im: _encode(im.convert("L"), "JPEG", quality=90),
    "jpeg q50": lambda im: _encode(im, "JPEG", quality=50),
    "jpeg q30": lambda im: _encode(im, "JPEG", quality=30),
    "webp q70": lambda im: _encode(im, "WEBP", quality=70),
    "png": lambda im: _encode(im, "PNG"),
    "crop 5%": lambda im: _encode(_crop(im, 0.05), "JPEG", quality=90),
    "crop 10%": lambda im: _encode(_crop(im, 0.10), "JPEG", quality=90),
    "crop 15%": lambda im: _encode(_crop(im, 0.15), "JPEG", quality=90),
    "crop 10% centred": lambda im: _encode(_crop(im, 0.10, centred=True), "JPEG", quality=90),
    "half size": lambda im: _encode(
        im.resize((max(1, im.width // 2), max(1, im.height // 2)), Image.Resampling.LANCZOS),
        "JPEG",
        quality=90,
    ),
    "quarter size": lambda im: _encode(
        im.resize((max(1, im.width // 4), max(1, im.height // 4)), Image.Resampling.LANCZOS),
        "JPEG",
        quality=90,
    ),
}


def _hashes(thumbnail: bytes) -> tuple[int, int, tuple[int, int], float]:
    with Image.open(io.BytesIO(thumbnail)) as image:
        image.load()
        spread = ImageStat.Stat(image.convert("L")).stddev[0]
        return dhash_of(image), fingerprint_of(image), image.size, spread


def build_set(folder: Path, spec: ProxySpec, work: Path) -> tuple[list[Hashed], dict[str, int]]:
    """The labelled set: each distinct photo and its variants, hashed."""
    notes = {"decoded": 0, "unreadable": 0, "same picture": 0, "too small": 0, "flat": 0}
    originals: list[tuple[str, int, int, datetime | None, bytes]] = []
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        try:
            meta, proxies = decode_image(path, spec)
        except MediaError:
            notes["unreadable"] += 1
            continue
        notes["decoded"] += 1
        dhash, phash, size, spread = _hashes(proxies.thumbnail.data)
        if min(size) < MIN_SIDE:
            notes["too small"] += 1
            continue
        if spread < FLAT_STDDEV:
            notes["flat"] += 1
            continue
        if any(
            (dhash ^ d).bit_count() <= SAME_PICTURE_BITS
            and (phash ^ p).bit_count() <= SAME_PICTURE_BITS
            for _, d, p, _, _ in originals
        ):
            notes["same picture"] += 1
            continue
        own_time = meta.captured_at_source not in FILE_DATED
        at = meta.captured_at if own_time else None
        if at is not None and at.tzinfo is None:
            at = at.replace(tzinfo=UTC)  # a wall clock without a zone, read as UTC
        originals.append((str(path.relative_to(folder)), dhash, phash, at, proxies.preview.data))
    hashed: list[Hashed] = []
    number_of = {name: n for n, (name, *_) in enumerate(originals)}
    for n, (name, dhash, phash, at, preview) in enumerate(originals):
        family = number_of.get(ONE_SCENE.get(name, name), n)
        hashed.append(Hashed(family, name, dhash, phash, at))
        with Image.open(io.BytesIO(preview)) as image:
            upright = image.convert("RGB")
        for number, (label, make) in enumerate(VARIANTS.items(), start=1):
            variant = work / f"{family}-{number}"
            variant.write_bytes(make(upright))
            _, proxies = decode_image(variant, spec)
            d, p, _, _ = _hashes(proxies.thumbnail.data)
            when = at + VARIANT_GAP * number if at is not None else None
            hashed.append(Hashed(family, name, d, p, when, label))
            variant.unlink()
    return hashed, notes


def _candidates(items: list[Hashed], window: timedelta | None) -> Iterable[tuple[int, int]]:
    for i, j in itertools.combinations(range(len(items)), 2):
        a, b = items[i], items[j]
        if window is not None and (a.at is None or b.at is None or abs(a.at - b.at) > window):
            continue
        yield i, j


def _finder(parent: list[int]) -> Callable[[int], int]:
    def root(n: int) -> int:
        while parent[n] != n:
            parent[n] = parent[parent[n]]
            n = parent[n]
        return n

    return root


def measure(
    items: list[Hashed], which: str, max_bits: int, window: timedelta | None
) -> list[dict[str, int]]:
    if window is not None:
        items = [h for h in items if h.at is not None]
    distances = [
        (i, j, (getattr(items[i], which) ^ getattr(items[j], which)).bit_count())
        for i, j in _candidates(items, window)
    ]
    originals: dict[int, int] = {}
    for n, h in enumerate(items):
        if h.variant is None:
            originals.setdefault(h.family, n)
    rows = []
    for t in range(max_bits + 1):
        parent = list(range(len(items)))
        root = _finder(parent)
        false_pairs = 0
        for i, j, d in distances:
            if d <= t:
                parent[root(i)] = root(j)
                false_pairs += items[i].family != items[j].family
        families: dict[int, set[int]] = {}
        for n, h in enumerate(items):
            families.setdefault(root(n), set()).add(h.family)
        missed = 0
        apart = 0
        for n, h in enumerate(items):
            if n == originals[h.family]:
                continue
            o = items[originals[h.family]]
            missed += (getattr(h, which) ^ getattr(o, which)).bit_count() > t
            apart += root(n) != root(originals[h.family])
        rows.append(
            {
                "bits": t,
                "false_pairs": false_pairs,
                "false_groups": sum(1 for f in families.values() if len(f) > 1),
                "missed": missed,
                "apart": apart,
            }
        )
    return rows


def _spread(values: list[int]) -> str:
    ordered = sorted(values)
    return (
        f"{ordered[len(ordered) // 2]} / {ordered[int(0.9 * (len(ordered) - 1))]} / {ordered[-1]}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    default = os.environ.get("SAFELIGHT_SAMPLES_DIR") or str(
        Path(__file__).resolve().parents[2] / "shared" / "samples"
    )
    parser.add_argument("--samples", default=default)
    parser.add_argument("--max-bits", type=int, default=20)
    parser.add_argument("--window-seconds", type=int, default=120)
    args = parser.parse_args()
    folder = Path(args.samples)
    if not folder.is_dir():
        raise SystemExit(f"no samples folder at {folder}: pass --samples DIR")
    spec = Settings().proxy_spec()
    with tempfile.TemporaryDirectory(prefix="bench-similar-") as work:
        items, notes = build_set(folder, spec, Path(work))
    families = len({h.family for h in items})
    timed = len({h.family for h in items if h.at is not None})
    print(
        f"{families} distinct photos ({timed} dated by themselves), "
        f"{len(VARIANTS)} variants each, {len(items)} pictures; {notes}"
    )
    window = timedelta(seconds=args.window_seconds)
    result: dict[str, object] = {"versions": versions(), "notes": notes, "families": families}
    for which in ("dhash", "phash"):
        free = measure(items, which, args.max_bits, None)
        windowed = measure(items, which, args.max_bits, window)
        result[which] = {"no_window": free, "window": windowed}
        print(f"\n{which}: without window | with a {args.window_seconds} s window")
        print_table(
            [
                "bits",
                "false pairs",
                "false groups",
                "missed",
                "apart",
                "| false pairs",
                "false groups",
                "missed",
                "apart",
            ],
            [
                [
                    a["bits"],
                    a["false_pairs"],
                    a["false_groups"],
                    a["missed"],
                    a["apart"],
                    b["false_pairs"],
                    b["false_groups"],
                    b["missed"],
                    b["apart"],
                ]
                for a, b in zip(free, windowed, strict=True)
            ],
        )
    by_family: dict[int, Hashed] = {}
    for h in items:
        if h.variant is None:
            by_family.setdefault(h.family, h)
    per_variant: dict[str, dict[str, list[int]]] = {}
    for h in items:
        if h.variant is not None:
            o = by_family[h.family]
            seen = per_variant.setdefault(h.variant, {"dhash": [], "phash": []})
            seen["dhash"].append((h.dhash ^ o.dhash).bit_count())
            seen["phash"].append((h.phash ^ o.phash).bit_count())
    print("\ndistance from the original, per variant: median / 90th percentile / largest")
    print_table(
        ["variant", "dHash", "pHash"],
        [[k, _spread(v["dhash"]), _spread(v["phash"])] for k, v in per_variant.items()],
    )
    result["per_variant"] = per_variant
    write_result("similar", result)


if __name__ == "__main__":
    main()
