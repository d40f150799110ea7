"""The run summary's line for files whose name lies and for JPEGs cut short (ADR 0052):
counted in one line of text each, listed in full in ``--json``'s document."""

from __future__ import annotations

from safelight.testing.summaries import rendered, summary_document

MISNAMED = [
    {"path": "2024/DSC_0001.nef", "reason": "holds a JPEG, named .nef"},
    {"path": "2024/IMG_0002.jpg", "reason": "holds a HEIF, named .jpg"},
]
CUT = [{"path": "2024/IMG_0004.jpg", "reason": "cut short: its last bytes are missing"}]


def test_files_whose_name_lies_are_counted_in_a_line_and_listed_in_the_document() -> None:
    document = summary_document(result={"total": 3, "misnamed": MISNAMED, "cut_short": CUT})

    assert document["misnamed"] == MISNAMED and document["cut_short"] == CUT
    text = rendered(document)
    assert "2 files hold another format than their name says" in text
    assert "1 photo was cut short, decoded as far as the data goes" in text
    assert "DSC_0001.nef" not in text  # the list is --json's


def test_one_file_is_told_in_the_singular_and_none_not_at_all() -> None:
    one = rendered(summary_document(result={"total": 1, "misnamed": MISNAMED[:1]}))
    assert "1 file holds another format than its name says" in one
    none = summary_document(result={"total": 1})
    assert none["misnamed"] == none["cut_short"] == []
    assert "another format" not in rendered(none) and "cut short" not in rendered(none)
