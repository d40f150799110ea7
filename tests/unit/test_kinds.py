"""The kinds table: each kind declared once, and what it hands the store, the executor and
the scheduler."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast
from uuid import UUID

import pytest

from safelight.handlers import (
    BURST_DETECTION,
    CRAWL,
    KIND_SPECS,
    KINDS,
    NOOP,
    PROXY_DELETION,
    PURGE,
    SCRUB,
    HandlerContext,
    Kind,
    MalformedPayload,
    NoPayload,
    Payload,
    Services,
    build_handlers,
    schedule_settings,
)
from safelight.settings import Settings
from safelight.testing.items import running_item
from safelight.work.kinds import KindSpec, Scope
from safelight.work.maintenance import PerConfig, Periodic, ScheduleSettings
from safelight.work.retry import RetryPolicy

pytestmark = pytest.mark.usefixtures("loop_errors", "unwind")

C1 = UUID("00000000-0000-0000-0000-0000000000c1")


def test_each_kind_is_declared_once_and_the_store_gets_its_spec() -> None:
    names = [kind.name for kind in KINDS]
    assert len(set(names)) == len(names)
    assert (
        tuple(
            KindSpec(kind.name, kind.scope, kind.retry, check_payload=kind.check_payload)
            for kind in KINDS
        )
        == KIND_SPECS
    )


def test_every_kind_is_retried_by_the_settings_policy_unless_its_row_says_otherwise() -> None:
    assert {kind.name: kind.retry for kind in KINDS} == dict.fromkeys(
        [kind.name for kind in KINDS], None
    )
    own = RetryPolicy(max_attempts=2, delay_seconds=1.0, max_delay_seconds=1.0, jitter=0.0)
    kind = Kind("retried", Scope.FORBIDDEN, NOOP.run, retry=own)
    assert kind.spec == KindSpec("retried", Scope.FORBIDDEN, own, check_payload=kind.check_payload)
    plain = Kind("plain", Scope.FORBIDDEN, NOOP.run)
    assert plain.spec == KindSpec("plain", Scope.FORBIDDEN, check_payload=plain.check_payload)


def test_the_payload_fields_are_those_the_handlers_take() -> None:
    taking = {kind.name: set(kind.payload.model_fields) for kind in KINDS}
    assert taking == {
        "crawl": set(),
        "burst_detection": set(),
        "purge": set(),
        "proxy_deletion": {"paths", "asset_ids"},
        "proxy_sweep": set(),
        "token_cleanup": set(),
        "work_item_retention": set(),
        "noop": {"seconds", "result"},
        "catalogue_backup": set(),
        "scrub": set(),
        "proxy_remake": {"mode"},
        "place_fill": set(),
        "faces": set(),
    }
    assert all(kind.payload is NoPayload for kind in KINDS if not kind.payload.model_fields)


def test_dedup_keys_name_the_kind_and_the_config() -> None:
    assert CRAWL.dedup_key(C1) == f"crawl:{C1}"
    assert BURST_DETECTION.dedup_key(C1) == f"burst_detection:{C1}"
    assert PURGE.dedup_key(C1) == f"purge:{C1}"


def test_the_scheduler_gets_every_kind_with_an_interval(tmp_path: Path) -> None:
    defaults = schedule_settings(Settings(home=tmp_path))
    assert defaults == ScheduleSettings(
        periodic=(
            Periodic("proxy_sweep", 3600.0),
            Periodic("token_cleanup", 86400.0),
            Periodic("work_item_retention", 86400.0),
            Periodic("catalogue_backup", 86400.0),
        ),
        per_config=(
            PerConfig("crawl", 14400.0, CRAWL.dedup_key),
            PerConfig("scrub", 3600.0, SCRUB.dedup_key),
        ),
    )
    chosen = Settings(
        home=tmp_path,
        crawl_interval_seconds=1.0,
        proxy_sweep_interval_seconds=2.0,
        token_cleanup_interval_seconds=3.0,
        retention_interval_seconds=4.0,
        backup_interval_seconds=5.0,
        scrub_interval_seconds=5.0,
    )
    assert schedule_settings(chosen) == ScheduleSettings(
        periodic=(
            Periodic("proxy_sweep", 2.0),
            Periodic("token_cleanup", 3.0),
            Periodic("work_item_retention", 4.0),
            Periodic("catalogue_backup", 5.0),
        ),
        per_config=(
            PerConfig("crawl", 1.0, CRAWL.dedup_key),
            PerConfig("scrub", 5.0, SCRUB.dedup_key),
        ),
    )
    assert NOOP.schedule(chosen) is None and PROXY_DELETION.schedule(chosen) is None


async def _answer(ctx: HandlerContext, services: Services, payload: Payload) -> dict[str, Any]:
    return {"services": services, "payload": payload}


class _EchoPayload(Payload):
    a: int = 0
    b: int = 0


async def _echo(ctx: HandlerContext, services: Services, payload: _EchoPayload) -> dict[str, Any]:
    return {"services": services, "a": payload.a, "b": payload.b}


def test_a_scheduled_kind_is_scoped_or_unscoped() -> None:
    with pytest.raises(ValueError, match=r"^a scheduled kind is scoped or unscoped, not "):
        Kind("x", Scope.OPTIONAL, _answer, interval=lambda settings: 1.0)
    Kind("x", Scope.OPTIONAL, _answer)
    required = Kind("x", Scope.REQUIRED, _answer, interval=lambda settings: 5.0)
    forbidden = Kind("x", Scope.FORBIDDEN, _answer, interval=lambda settings: 5.0)
    settings = cast(Settings, None)
    assert required.schedule(settings) == PerConfig("x", 5.0, required.dedup_key)
    assert forbidden.schedule(settings) == Periodic("x", 5.0)


def _context(kind: str, payload: dict[str, Any]) -> HandlerContext:
    item = running_item(id=1, attempt=1, config=None, kind=kind, payload=payload)
    return cast(HandlerContext, SimpleNamespace(item=item))


async def test_a_bound_handler_checks_the_payload_and_hands_the_handler_its_model() -> None:
    services = cast(Services, object())
    kind = Kind("echo", Scope.OPTIONAL, _echo, payload=_EchoPayload)
    handler = kind.bind(services)
    assert handler.__name__ == handler.__qualname__ == "_echo"
    assert await handler(_context("echo", {"a": 1})) == {"services": services, "a": 1, "b": 0}
    with pytest.raises(MalformedPayload) as refused:
        await handler(_context("echo", {"b": 1, "z": 2, "c": 3}))
    assert str(refused.value) == (
        'echo: payload field "z" is not one it takes (it takes: a, b) (and 1 more)'
    )
    with pytest.raises(MalformedPayload) as refused:
        await handler(_context("echo", {"a": "1"}))
    assert str(refused.value) == 'echo: payload field "a": expected a whole number, got "1"'
    bare = Kind("bare", Scope.OPTIONAL, _answer).bind(services)
    with pytest.raises(MalformedPayload) as refused:
        await bare(_context("bare", {"a": 1}))
    assert str(refused.value) == 'bare: payload field "a" is not one it takes (it takes: none)'
    assert await bare(_context("bare", {})) == {"services": services, "payload": NoPayload()}


def test_a_kinds_spec_checks_the_payload_as_its_binding_does() -> None:
    spec = Kind("echo", Scope.OPTIONAL, _echo, payload=_EchoPayload).spec
    assert spec.check_payload is not None
    spec.check_payload({"a": 2})
    with pytest.raises(ValueError, match=r'^payload field "b": expected a whole number, got true$'):
        spec.check_payload({"b": True})


async def test_build_handlers_binds_one_handler_per_kind_to_the_services(
    tmp_path: Path,
) -> None:
    class Store:
        async def delete_finished(self, retention: timedelta) -> int:
            return int(retention / timedelta(days=1))

    services = SimpleNamespace(store=Store(), settings=Settings(home=tmp_path))
    handlers = build_handlers(cast(Services, services))
    assert list(handlers) == [kind.name for kind in KINDS]
    assert {name: h.__name__ for name, h in handlers.items()} == {
        kind.name: kind.run.__name__ for kind in KINDS
    }
    # The retention handler needs nothing but the services' store and settings.
    retention = handlers["work_item_retention"]
    assert await retention(_context("work_item_retention", {})) == {
        "deleted": 7,
        "retention_days": 7.0,
    }
