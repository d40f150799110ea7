"""The fault-injection suite runs on a PostgreSQL cluster of its own, which it may cut off
and restart; it needs no database URL (and never uses one it is given)."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from tests.faults import checker
from tests.faults.cluster import PrivateCluster
from tests.faults.rig import Rig
from tests.reaper import remove_folder, temporary_folder

_names = itertools.count()


@pytest.fixture(scope="session")
def private_cluster() -> Iterator[PrivateCluster]:
    cluster = PrivateCluster()
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.destroy()


@pytest.fixture
def fault_database(private_cluster: PrivateCluster) -> Iterator[str]:
    """A fresh, migrated database in the private cluster, with the checker's audit
    triggers; its URL (TCP, 127.0.0.1)."""
    name = f"faults_{next(_names)}"
    url = private_cluster.create_database(name)
    checker.install_audit(url)
    try:
        yield url
    finally:
        with psycopg.connect(private_cluster.url(), autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture
def scratch() -> Iterator[Path]:
    """A folder outside pytest's temp base (which a concurrent session may reset)."""
    folder = temporary_folder("safelight-faults-test-")
    try:
        yield folder
    finally:
        remove_folder(folder)


@pytest.fixture
def rig(private_cluster: PrivateCluster, fault_database: str, scratch: Path) -> Iterator[Rig]:
    state = Rig(private_cluster, fault_database, scratch)
    try:
        yield state
    finally:
        for proxy in state.proxies:
            proxy.heal()
        for worker in state.workers:
            worker.ensure_dead()
        for proxy in state.proxies:
            proxy.close()
