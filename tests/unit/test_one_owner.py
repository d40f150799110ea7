"""Facts that had two owners in src/ have one (ADR 0050): each test fails if a second
owner reappears, read from the source where that can be checked, or by making a name
with the owner's one function and parsing it with its other."""

from __future__ import annotations

import ast
import re
from datetime import UTC, datetime
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from starlette.exceptions import HTTPException

from safelight.db.embedded import DATA_FOLDER
from safelight.library.proxystore.layout import STAGING_FOLDER, is_staging_name
from safelight.library.proxystore.publishing import write_atomically
from safelight.views import answers
from safelight.web import actions
from safelight.web.viewer import SCOPE_KEY, Viewer, not_signed_in, viewer_of
from safelight.work.model import CancelResult, RetryResult, Status, WorkItem

SRC = Path(__file__).resolve().parents[2] / "src"
PACKAGE = SRC / "safelight"
MIGRATIONS = PACKAGE / "db" / "migrations"


def _strings(path: Path) -> list[str]:
    """Every string constant of a module, f-strings' literal parts included; not its
    docstrings and other bare strings, which are prose that nothing reads."""
    tree = ast.parse(path.read_text("utf-8"), filename=str(path))
    prose = {
        id(n.value)
        for n in ast.walk(tree)
        if isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant)
    }
    return [
        n.value
        for n in ast.walk(tree)
        if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in prose
    ]


def _modules_with(pattern: re.Pattern[str]) -> list[str]:
    return sorted(
        path.relative_to(PACKAGE).as_posix()
        for path in PACKAGE.rglob("*.py")
        if any(pattern.search(s) for s in _strings(path))
    )


# --- the embedded data folder's name ------------------------------------------------


def test_the_data_folder_keeps_its_name() -> None:
    """Existing homes have their database in it: a new name would start an empty one."""
    assert DATA_FOLDER == "pgdata"


def test_the_data_folder_is_named_only_in_db_embedded() -> None:
    # A path part: "pgdata", "home/pgdata/x", ".pgdata-initdb"; not prose ("pgdata/ the
    # data folder" in a docstring has spaces, and is not read by anything).
    name = re.compile(r"^(?:\S*/)?\.?pgdata(?:[-/]\S*)?$")
    assert name.fullmatch("home/pgdata/x") and name.fullmatch(".pgdata-initdb")
    assert _modules_with(name) == ["db/embedded.py"]


# --- the staging folder's names -----------------------------------------------------


def test_the_staging_folders_names_are_spelled_only_in_the_layout() -> None:
    staging = re.compile(r"^\.staging(/|$)|\.video-")
    assert _modules_with(staging) == ["library/proxystore/layout.py"]


def test_a_staged_file_is_a_staging_name(tmp_path: Path) -> None:
    """write_atomically's temporary file, caught as it is written, is what the sweep
    recognises as a left-over of the staging folder."""
    staging = tmp_path / STAGING_FOLDER
    seen: list[str] = []

    def writer(out: object) -> None:
        (temp,) = staging.iterdir()
        seen.append(temp.relative_to(tmp_path).as_posix())

    write_atomically(tmp_path / "thumbnail.jpg", writer, lambda: None, staging)
    assert len(seen) == 1 and is_staging_name(seen[0])


# --- the dedup key's queued item (the superseded rule) ------------------------------

_RULE = re.compile(
    r"EXISTS\s*\(\s*SELECT\s[^;]*?\bdedup_key\s*=[^;]*?status\s*=\s*'queued'", re.IGNORECASE
)


def _sql_outside_the_rules_home() -> list[Path]:
    """Every .sql file under src/ but the rule's migration (0020) and those before it,
    which are history: a migration is never edited once released."""
    return [
        path
        for path in sorted(PACKAGE.rglob("*.sql"))
        if path.parent != MIGRATIONS or int(path.name[:4]) > 20
    ]


def test_whether_a_dedup_key_is_queued_is_defined_once() -> None:
    home = (MIGRATIONS / "0020_dedup_key_queued.sql").read_text("utf-8")
    assert len(_RULE.findall(home)) == 1
    assert any(p.name == "queries.sql" for p in _sql_outside_the_rules_home())
    written_again = [
        p.relative_to(PACKAGE).as_posix()
        for p in _sql_outside_the_rules_home()
        if _RULE.search(p.read_text("utf-8"))
    ]
    assert written_again == []


def test_the_superseded_error_is_written_once() -> None:
    text = "superseded: its dedup key already had a queued item"
    assert [p.name for p in _sql_outside_the_rules_home() if text in p.read_text("utf-8")] == []


# --- what a cancel or a retry answers ----------------------------------------------


@pytest.mark.parametrize(
    ("words", "owner"),
    [
        ("there is no work item", "views/answers.py"),
        ("nothing to retry", "views/answers.py"),
        ("had already finished", "views/answers.py"),
        ("is queued again, due now", "views/answers.py"),
        # Other sentences that were written in two places.
        ("stopped: the attempt was asked to stop", "handlers/contract.py"),
        ("safelight: error: ", "cli/exits.py"),
        ("the database does not answer", "db/availability.py"),
    ],
)
def test_a_sentence_is_worded_in_one_module(words: str, owner: str) -> None:
    assert _modules_with(re.compile(re.escape(words))) == [owner]


def test_the_401_of_no_user_is_worded_once() -> None:
    """The sign-in gate's own longer line (web.auth) says where to sign in."""
    assert _modules_with(re.compile(r"^sign in to see this$")) == ["web/viewer.py"]


def test_a_request_without_a_viewer_is_answered_401_in_those_words() -> None:
    anonymous: Any = SimpleNamespace(scope={})
    with pytest.raises(HTTPException) as raised:
        viewer_of(anonymous)
    assert (raised.value.status_code, raised.value.detail) == (401, "sign in to see this")
    assert not_signed_in().status_code == 401
    alice = Viewer(1, "alice", is_admin=False)
    signed_in: Any = SimpleNamespace(scope={SCOPE_KEY: alice})
    assert viewer_of(signed_in) is alice


def test_each_cancel_answer_in_words() -> None:
    assert answers.cancel_message(CancelResult.CANCELLED, 7) == "cancelled item 7"
    assert answers.cancel_message(CancelResult.REQUESTED, 7) == (
        "asked item 7 to stop: it is running, and its attempt stops as soon as its Worker "
        "hears, at the latest at its next heartbeat"
    )
    assert answers.cancel_message(CancelResult.FINISHED, 7) == (
        "item 7 had already finished; nothing to cancel"
    )
    assert answers.cancel_message(CancelResult.NOT_FOUND, 7) == "there is no work item 7"


def _item(status: Status, dedup_key: str | None) -> WorkItem:
    return WorkItem(
        id=7,
        kind="crawl",
        storage_config_id=None,
        dedup_key=dedup_key,
        payload={},
        status=status,
        requested_at=datetime(2026, 1, 1, tzinfo=UTC),
        attempt=1,
        stalls=0,
    )


def test_a_retry_answer_names_what_the_item_is() -> None:
    failed = _item(Status.FAILED, "nightly")
    queued = _item(Status.QUEUED, None)
    assert answers.retry_message(RetryResult.RETRIED, 7, None) == "item 7 is queued again, due now"
    assert answers.retry_message(RetryResult.NOT_FOUND, 7, None) == "there is no work item 7"
    assert answers.retry_message(RetryResult.KEY_QUEUED, 7, None) == "there is no work item 7"
    assert answers.retry_message(RetryResult.KEY_QUEUED, 7, failed) == (
        "item 7 stays failed: its dedup key nightly already has a queued item, which does its work"
    )
    assert answers.retry_message(RetryResult.NOT_FAILED, 7, queued) == (
        "item 7 is queued, not failed: nothing to retry"
    )


class _Store:
    """Answers one cancel or retry as told, and the item as it is afterwards."""

    def __init__(self, cancelled: CancelResult, retried: RetryResult, item: WorkItem | None):
        self.cancelled, self.retried, self.item = cancelled, retried, item
        self.calls: list[tuple[str, int]] = []

    async def request_cancel(self, item_id: int) -> CancelResult:
        self.calls.append(("cancel", item_id))
        return self.cancelled

    async def retry_failed(self, item_id: int) -> RetryResult:
        self.calls.append(("retry", item_id))
        return self.retried

    async def get(self, item_id: int) -> WorkItem | None:
        self.calls.append(("get", item_id))
        return self.item


def _store(
    cancelled: CancelResult = CancelResult.CANCELLED,
    retried: RetryResult = RetryResult.RETRIED,
    item: WorkItem | None = None,
) -> Any:
    return _Store(cancelled, retried, item)


async def test_the_cli_and_the_web_ask_the_same_store_call_and_get_the_same_words() -> None:
    store = _store(cancelled=CancelResult.REQUESTED)
    said = await answers.cancel(store, 7)
    assert (said.result, said.message) == (
        CancelResult.REQUESTED,
        answers.cancel_message(CancelResult.REQUESTED, 7),
    )
    done = await actions.cancel_item(store, 7)
    assert done.document() == {
        "ok": True,
        "outcome": "requested",
        "message": said.message,
        "item_id": 7,
    }
    assert store.calls == [("cancel", 7), ("cancel", 7)]


async def test_a_retry_reads_the_item_only_when_it_was_refused() -> None:
    store = _store(retried=RetryResult.RETRIED)
    assert (await answers.retry(store, 7)).message == "item 7 is queued again, due now"
    assert store.calls == [("retry", 7)]
    refused = _store(retried=RetryResult.KEY_QUEUED, item=_item(Status.FAILED, "nightly"))
    said = await answers.retry(refused, 7)
    assert said.result is RetryResult.KEY_QUEUED
    assert "its dedup key nightly" in said.message
    assert refused.calls == [("retry", 7), ("get", 7)]


@pytest.mark.parametrize(
    ("result", "status_code"),
    [
        (CancelResult.CANCELLED, 200),
        (CancelResult.REQUESTED, 200),
        (CancelResult.FINISHED, 409),
        (CancelResult.NOT_FOUND, 404),
    ],
)
async def test_the_web_answers_a_cancel_with_its_status(
    result: CancelResult, status_code: int
) -> None:
    done = await actions.cancel_item(_store(cancelled=result), 7)
    assert (done.status_code, done.outcome, done.item_id) == (status_code, result.value, 7)
    assert done.message == answers.cancel_message(result, 7)


@pytest.mark.parametrize(
    ("result", "status_code"),
    [
        (RetryResult.RETRIED, 200),
        (RetryResult.KEY_QUEUED, 409),
        (RetryResult.NOT_FAILED, 409),
        (RetryResult.NOT_FOUND, 404),
    ],
)
async def test_the_web_answers_a_retry_with_its_status(
    result: RetryResult, status_code: int
) -> None:
    item = None if result is RetryResult.NOT_FOUND else _item(Status.FAILED, "nightly")
    done = await actions.retry_item(_store(retried=result, item=item), 7)
    assert (done.status_code, done.outcome, done.item_id) == (status_code, result.value, 7)
    assert done.message == answers.retry_message(result, 7, item)


def test_an_unseen_item_is_answered_as_a_missing_one() -> None:
    """ADR 0044: the same status, outcome and words as an item that does not exist."""
    for done in (actions.cancel_unseen(7), actions.retry_unseen(7)):
        assert done.document() == {
            "ok": False,
            "outcome": "not_found",
            "message": "there is no work item 7",
            "item_id": 7,
        }
