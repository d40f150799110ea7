"""The metrics port's own connection (``db.pool.OneConnection``, issue #27), with the
connecting faked: made on first use, one user at a time, dropped after a use that
failed or was cancelled. On a real server: ``tests/integration/test_hostile_connections.py``.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from safelight.db import pool as pool_module
from safelight.db.pool import OneConnection

pytestmark = pytest.mark.usefixtures("loop_errors")

URL = "postgresql://metrics@db/photos"


class Conn:
    def __init__(self, number: int, *, refuses_closing: bool = False) -> None:
        self.number = number
        self.closed = False
        self.refuses_closing = refuses_closing

    async def close(self) -> None:
        if self.refuses_closing:
            raise OSError("the socket is gone already")
        self.closed = True


@pytest.fixture
def made(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, str, Conn]]:
    """Every connection made, with the URL and application name it was made for."""
    connections: list[tuple[str, str, Conn]] = []

    async def connect(url: str, application_name: str = "safelight") -> Any:
        conn = Conn(len(connections) + 1)
        connections.append((url, application_name, conn))
        return conn

    monkeypatch.setattr(pool_module, "connect", connect)
    return connections


async def test_it_connects_at_first_use_under_its_own_name_and_keeps_the_connection(
    made: list[tuple[str, str, Conn]],
) -> None:
    one = OneConnection(URL, "safelight-metrics")
    assert made == []
    async with one.connection() as first:
        pass
    async with one.connection() as second:
        pass
    assert first is second and [(url, name) for url, name, _ in made] == [
        (URL, "safelight-metrics")
    ]
    await one.close()
    assert first.closed
    async with one.connection() as third:
        assert third is not first  # closed: made again
    made[1][2].closed = True  # the server closed it meanwhile
    async with one.connection() as fourth:
        assert fourth is not third
    assert len(made) == 3


@pytest.mark.parametrize("ending", [ValueError("a query failed"), asyncio.CancelledError()])
async def test_a_use_that_fails_or_is_cancelled_drops_the_connection(
    made: list[tuple[str, str, Conn]], ending: BaseException
) -> None:
    one = OneConnection(URL, "safelight-metrics")
    with pytest.raises(type(ending)):
        async with one.connection() as cut:
            raise ending
    assert cut.closed
    async with one.connection() as fresh:
        assert fresh is not cut


async def test_one_user_at_a_time(made: list[tuple[str, str, Conn]]) -> None:
    one = OneConnection(URL, "safelight-metrics")
    inside: list[int] = []
    release = asyncio.Event()

    async def use(number: int) -> None:
        async with one.connection():
            inside.append(number)
            if number == 1:
                await release.wait()
            inside.append(-number)

    first = asyncio.create_task(use(1))
    await asyncio.sleep(0)
    second = asyncio.create_task(use(2))
    for _ in range(5):
        await asyncio.sleep(0)
    assert inside == [1]  # the second waits for the first to be done
    release.set()
    await asyncio.gather(first, second)
    assert inside == [1, -1, 2, -2] and len(made) == 1


async def test_closing_a_connection_that_will_not_close_is_not_an_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    stubborn = Conn(1, refuses_closing=True)

    async def connect(url: str, application_name: str = "safelight") -> Any:
        return stubborn

    monkeypatch.setattr(pool_module, "connect", connect)
    one = OneConnection(URL, "safelight-metrics")
    async with one.connection():
        pass
    await one.close()
    await one.close()  # nothing left to close
    with pytest.raises(ValueError, match="a query failed"):
        async with one.connection():
            raise ValueError("a query failed")  # the error, not the closing's
