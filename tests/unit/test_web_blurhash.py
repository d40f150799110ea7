"""The dashboard's BlurHash decoder (``web/static/blurhash.js``, written for safelight)
against the reference decoder the crawl's encoder comes with (blurhash-python): the same
pixels, give or take one step of rounding, for hashes the crawl's own encoder made.
Runs the script in Node where it is installed (the browser tests run it in Chromium)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import blurhash
import pytest
from PIL import Image

from safelight.library.render.images import encode_blurhash

SCRIPT = Path(__file__).resolve().parents[2] / "src/safelight/web/static/blurhash.js"
NODE = shutil.which("node")

pytestmark = pytest.mark.skipif(NODE is None, reason="Node is not installed here")


def decode_in_node(hashes: list[str], width: int, height: int) -> list[list[int] | str]:
    program = (
        "globalThis.window = globalThis;\n"
        + SCRIPT.read_text("utf-8")
        + f"\nconst hashes = {json.dumps(hashes)};\n"
        + "console.log(JSON.stringify(hashes.map(function (h) {\n"
        + f"  try {{ return Array.from(window.safelightBlurhash.decode(h, {width}, {height})); }}\n"
        + "  catch (e) { return 'error: ' + e.message; }\n"
        + "})));\n"
    )
    assert NODE is not None
    done = subprocess.run(
        [NODE, "-e", program], capture_output=True, text=True, timeout=60, check=True
    )
    decoded: list[list[int] | str] = json.loads(done.stdout)
    return decoded


def reference(hash_: str, width: int, height: int) -> list[int]:
    image = blurhash.decode(hash_, width, height, mode=blurhash.PixelMode.RGBA)
    return list(image.tobytes())


def gradient(seed: int) -> Image.Image:
    image = Image.new("RGB", (32, 24))
    image.putdata(
        [
            ((x * 8 + seed * 40) % 256, (y * 10) % 256, (x * y + seed * 7) % 256)
            for y in range(24)
            for x in range(32)
        ]
    )
    return image


def test_the_decoder_gives_the_reference_pixels() -> None:
    hashes = ["LEHV6nWB2yk8pyo0adR*.7kCMdnj"] + [
        encode_blurhash(gradient(seed), x, y)
        for seed, (x, y) in enumerate([(4, 3), (1, 1), (9, 9), (3, 5)])
    ]
    width, height = 12, 9
    for hash_, pixels in zip(hashes, decode_in_node(hashes, width, height), strict=True):
        assert isinstance(pixels, list), pixels
        expected = reference(hash_, width, height)
        assert len(pixels) == len(expected) == width * height * 4
        assert max(abs(a - b) for a, b in zip(pixels, expected, strict=True)) <= 1, hash_


def test_a_malformed_hash_is_refused() -> None:
    answers = decode_in_node(["", "LEHV6nWB2yk8", "LEHV6nWB2yk8pyo0adR*.7kCMdn\u00e9"], 4, 3)
    assert all(isinstance(a, str) and a.startswith("error: ") for a in answers), answers
