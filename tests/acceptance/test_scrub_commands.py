"""A scrub queued and run by a Worker finds a flipped byte whose modification time was
put back, and ``status`` and ``assets --changed`` say so (ADR 0062)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import xxhash

from safelight.testing.handlers import jpeg, write
from safelight.testing.invoking import Invoke
from tests.acceptance.harness import json_of

pytestmark = pytest.mark.acceptance

LINE = "1 original changed without its time changing: run `safelight assets --changed`"


def last_line(text: str) -> str:
    return text.strip().splitlines()[-1]


def test_status_and_assets_changed_report_a_flipped_byte(invoke: Invoke, tmp_path: Path) -> None:
    root = tmp_path / "library"
    for seed, name in enumerate(("a.jpg", "b.jpg"), start=1):
        write(root, name, jpeg(seed))
    config_id = last_line(invoke("config", "add", str(root)).stdout)
    assert invoke("enqueue", "crawl", "--config", config_id).exit_code == 0
    assert invoke("worker", "--until-idle").exit_code == 0
    assert LINE not in invoke("status").stdout
    assert json_of(invoke("status", "--json"))["originals_changed"] == 0

    path = root / "b.jpg"
    st = path.stat()
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x10
    path.write_bytes(bytes(data))
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert invoke("enqueue", "scrub", "--config", config_id).exit_code == 0
    assert invoke("worker", "--until-idle").exit_code == 0

    status = invoke("status")
    assert status.exit_code == 0 and LINE in status.stdout
    assert json_of(invoke("status", "--json"))["originals_changed"] == 1
    (changed,) = json_of(invoke("assets", "--changed", "--json"))
    assert changed["file_path"] == "b.jpg"
    assert changed["content_found_hash"] == xxhash.xxh3_64(bytes(data)).hexdigest()
    assert changed["content_hash"] != changed["content_found_hash"]
    listed = invoke("assets", "--changed")
    assert listed.exit_code == 0 and "b.jpg" in listed.stdout and "a.jpg" not in listed.stdout
    refused = invoke("assets", "--changed", "--deleted")
    assert refused.exit_code == 2 and "do not go together" in refused.output
