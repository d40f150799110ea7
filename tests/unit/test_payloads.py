"""Each kind's payload shape (``handlers.payloads``): what it takes, and the one line
that names the field of a payload it refuses."""

from __future__ import annotations

import math
from typing import Any

import pytest

from safelight.handlers import KINDS, NOOP, PROXY_DELETION, NoPayload, PayloadRejected
from safelight.handlers.noop import MAX_NOOP_SECONDS, NoopPayload
from safelight.handlers.payloads import (
    MAX_PAYLOAD_DEPTH,
    Payload,
    json_text_too_deep,
    parse_payload,
)
from safelight.handlers.proxy_deletion import ProxyDeletionPayload
from safelight.handlers.proxy_remake import PROXY_REMAKE, RemakePayload


@pytest.mark.parametrize(
    ("payload", "seconds", "result"),
    [
        ({}, 0, None),
        ({"seconds": 2}, 2, None),
        ({"seconds": 0.25, "result": {"answer": [42]}}, 0.25, {"answer": [42]}),
        ({"result": None}, 0, None),
    ],
)
def test_noop_takes_a_number_of_seconds_and_a_result(
    payload: dict[str, Any], seconds: float, result: dict[str, Any] | None
) -> None:
    checked = NOOP.check_payload(payload)
    assert checked == NoopPayload(seconds=seconds, result=result)


@pytest.mark.parametrize(
    ("payload", "line"),
    [
        ({"seconds": "abc"}, 'payload field "seconds": expected a number, got "abc"'),
        ({"seconds": "2"}, 'payload field "seconds": expected a number, got "2"'),
        ({"seconds": True}, 'payload field "seconds": expected a number, got true'),
        ({"seconds": None}, 'payload field "seconds": expected a number, got null'),
        ({"seconds": -1}, 'payload field "seconds": expected a number >= 0, got -1'),
        ({"seconds": -0.5}, 'payload field "seconds": expected a number >= 0, got -0.5'),
        ({"seconds": math.nan}, "payload is not JSON: Out of range float values are not JSON"),
        ({"seconds": math.inf}, "payload is not JSON: Out of range float values are not JSON"),
        ({"result": [1]}, 'payload field "result": expected a JSON object, got [1]'),
        ({"result": "x" * 100}, 'payload field "result": expected a JSON object, got "xxxxx'),
        (
            {"sleep": 1},
            'payload field "sleep" is not one it takes (it takes: result, seconds)',
        ),
        (
            {"seconds": "x", "sleep": 1},
            'payload field "seconds": expected a number, got "x" (and 1 more)',
        ),
        ({"seconds": object()}, "payload is not JSON: Object of type object is not JSON"),
    ],
)
def test_noop_refuses_a_payload_that_does_not_fit_in_one_line(
    payload: dict[str, Any], line: str
) -> None:
    with pytest.raises(PayloadRejected) as refused:
        NOOP.check_payload(payload)
    message = str(refused.value)
    assert message.startswith(line)
    assert "\n" not in message and len(message) < 120


def test_a_long_refused_value_is_cut_short() -> None:
    with pytest.raises(PayloadRejected) as refused:
        NOOP.check_payload({"result": "x" * 100})
    assert str(refused.value) == (
        'payload field "result": expected a JSON object, got "' + "x" * 38 + "…"
    )


@pytest.mark.parametrize(
    ("payload", "paths", "asset_ids"),
    [
        ({"paths": ["a/b/c.jpg"]}, ["a/b/c.jpg"], None),
        ({"paths": []}, [], None),
        ({"asset_ids": [3, 1, 3]}, None, [3, 1, 3]),
    ],
)
def test_proxy_deletion_takes_paths_or_asset_ids(
    payload: dict[str, Any], paths: list[str] | None, asset_ids: list[int] | None
) -> None:
    checked = PROXY_DELETION.check_payload(payload)
    assert (checked.paths, checked.asset_ids) == (paths, asset_ids)


@pytest.mark.parametrize(
    ("payload", "line"),
    [
        ({}, 'payload: it takes exactly one of "paths", "asset_ids"'),
        ({"paths": [], "asset_ids": []}, 'payload: it takes exactly one of "paths", "asset_ids"'),
        ({"paths": None}, 'payload: "paths" must be a list, not null'),
        ({"paths": "p0.jpg"}, 'payload field "paths": expected a list, got "p0.jpg"'),
        ({"paths": ["a", 3]}, 'payload field "paths[1]": expected a string, got 3'),
        ({"asset_ids": ["1"]}, 'payload field "asset_ids[0]": expected a whole number, got "1"'),
        ({"asset_ids": [True]}, 'payload field "asset_ids[0]": expected a whole number, got true'),
        ({"asset_ids": [1.5]}, 'payload field "asset_ids[0]": expected a whole number, got 1.5'),
        ({"asset_ids": [4, 0]}, 'payload field "asset_ids[1]": expected a number > 0, got 0'),
        (
            {"paths": [], "force": True},
            'payload field "force" is not one it takes (it takes: asset_ids, paths)',
        ),
    ],
)
def test_proxy_deletion_refuses_a_payload_that_does_not_fit(
    payload: dict[str, Any], line: str
) -> None:
    with pytest.raises(PayloadRejected) as refused:
        PROXY_DELETION.check_payload(payload)
    assert str(refused.value) == line


@pytest.mark.parametrize(
    "kind", [k for k in KINDS if k.payload is NoPayload], ids=lambda kind: kind.name
)
def test_a_kind_that_takes_no_payload_takes_only_an_empty_one(kind: Any) -> None:
    assert kind.check_payload({}) == NoPayload()
    with pytest.raises(PayloadRejected) as refused:
        kind.check_payload({"full": True})
    assert str(refused.value) == 'payload field "full" is not one it takes (it takes: none)'


def test_a_proxy_remake_takes_missing_by_default_or_all() -> None:
    assert PROXY_REMAKE.check_payload({}) == RemakePayload(mode="missing")
    assert PROXY_REMAKE.check_payload({"mode": "all"}).mode == "all"
    with pytest.raises(PayloadRejected) as refused:
        PROXY_REMAKE.check_payload({"mode": "everything"})
    assert str(refused.value) == (
        "payload field \"mode\": expected 'missing' or 'all', got \"everything\""
    )


def test_every_payload_model_forbids_extra_keys_and_coercion() -> None:
    models: list[type[Payload]] = [NoPayload, NoopPayload, ProxyDeletionPayload, RemakePayload]
    assert {kind.payload for kind in KINDS} == set(models)
    for model in models:
        assert model.model_config.get("extra") == "forbid"
        assert model.model_config.get("strict") is True


def test_a_nested_field_is_named_by_its_path() -> None:
    class Inner(Payload):
        size: int

    class Outer(Payload):
        inner: Inner
        items: list[Inner] = []

    with pytest.raises(PayloadRejected) as refused:
        parse_payload(Outer, {"inner": {"size": 1}, "items": [{"size": 1}, {"size": "2"}]})
    assert str(refused.value) == 'payload field "items[1].size": expected a whole number, got "2"'
    with pytest.raises(PayloadRejected) as refused:
        parse_payload(Outer, {})
    assert str(refused.value) == 'payload field "inner" is required'


def nested(depth: int) -> dict[str, Any]:
    """An object ``depth`` levels deep, built without recursion."""
    value: dict[str, Any] = {}
    for _ in range(depth - 1):
        value = {"a": value}
    return value


def test_a_payload_nested_too_deep_is_refused_before_anything_recursive_reads_it() -> None:
    assert NOOP.check_payload({"result": nested(MAX_PAYLOAD_DEPTH - 1)}).result is not None
    for depth in (MAX_PAYLOAD_DEPTH, 20_000):  # with the payload's own level, one too many
        with pytest.raises(PayloadRejected) as refused:
            NOOP.check_payload({"result": nested(depth)})
        assert str(refused.value) == f"payload is nested more than {MAX_PAYLOAD_DEPTH} levels deep"
    deep_list: list[Any] = []
    for _ in range(20_000):
        deep_list = [deep_list]
    with pytest.raises(PayloadRejected, match="nested more than"):
        NOOP.check_payload({"result": {"a": deep_list}})


@pytest.mark.parametrize("payload", [5, None, "text"])
def test_a_payload_that_is_not_an_object_is_refused_in_one_line(payload: Any) -> None:
    # The database holds only objects (a CHECK), but the binding reads what it is given:
    # a scalar is refused as any payload that does not fit, never an internal error.
    with pytest.raises(PayloadRejected):
        NOOP.check_payload(payload)


def test_json_text_is_measured_before_it_is_parsed() -> None:
    def text(depth: int) -> str:
        return '{"a": ' * (depth - 1) + "{}" + "}" * (depth - 1)

    assert not json_text_too_deep(text(MAX_PAYLOAD_DEPTH))
    assert json_text_too_deep(text(MAX_PAYLOAD_DEPTH + 1))
    assert json_text_too_deep("[" * 20_000 + "]" * 20_000)
    # Brackets inside strings, escaped quotes included, are text, not nesting.
    assert not json_text_too_deep('{"a": "' + "[{" * 100 + '\\" [[[ \\\\"}')
    assert not json_text_too_deep('{"a": "' + '\\"[' * 100 + '"}')


def test_noop_waits_at_most_an_hour() -> None:
    assert NOOP.check_payload({"seconds": MAX_NOOP_SECONDS}).seconds == MAX_NOOP_SECONDS
    with pytest.raises(PayloadRejected) as refused:
        NOOP.check_payload({"seconds": MAX_NOOP_SECONDS + 0.5})
    assert str(refused.value) == ('payload field "seconds": expected a number <= 3600, got 3600.5')
    with pytest.raises(PayloadRejected, match="<= 3600"):
        NOOP.check_payload({"seconds": 1e300})
