"""``safelight assets --similar`` end to end: a library of reshoots run, its similar
groups listed with their members, the shown one first (ADR 0066)."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import pytest

from safelight.testing.invoking import Invoke
from safelight.testing.similarshots import similar_library
from tests.acceptance.harness import json_of

pytestmark = pytest.mark.acceptance


def test_assets_similar_lists_each_group_with_its_members(invoke: Invoke, tmp_path: Path) -> None:
    library = similar_library(tmp_path / "library", datetime(2024, 5, 1, 10, 0, 0))
    ran = invoke("run", str(library.root), "--json")
    assert ran.exit_code == 0, ran.output

    groups = json_of(invoke("assets", "--similar", "--json"))

    assert {frozenset(m["file_path"] for m in g["members"]) for g in groups} == library.groups
    for group in groups:
        assert group["count"] == len(group["members"])
        assert group["members"][0]["id"] == group["primary_asset_id"]
        assert group["members"][0]["file_path"] in library.primaries
    assert len(json_of(invoke("assets", "--similar", "--limit", "1", "--json"))) == 1
    text = " ".join(invoke("assets", "--similar").stdout.split())
    assert "similar shots" in text and "DSC_0104.JPG" in text and "DSC_0300.JPG" not in text
    both = invoke("assets", "--similar", "--deleted")
    assert both.exit_code == 2 and "do not go together" in both.output
