"""The store's group commit: calls made while a batch is in flight go out together."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import pytest

from safelight.work.batching import Batcher


class Recorder:
    """A batch function that records each batch and can be held open by a gate."""

    def __init__(self) -> None:
        self.batches: list[list[int]] = []
        self.gate: asyncio.Event | None = None
        self.entered = asyncio.Event()
        self.fail_with: Exception | None = None
        self.short = False

    async def __call__(self, requests: Sequence[int]) -> list[str]:
        self.batches.append(list(requests))
        self.entered.set()
        if self.gate is not None:
            await self.gate.wait()
        if self.fail_with is not None:
            raise self.fail_with
        answers = [f"answer {r}" for r in requests]
        return answers[:-1] if self.short else answers


async def hold_first_batch(batcher: Batcher[int, str], rec: Recorder) -> asyncio.Task[str]:
    """Start call 0 and wait until its batch is in flight, held open by the gate."""
    rec.gate = asyncio.Event()
    first = asyncio.create_task(batcher.call(0))
    await rec.entered.wait()
    return first


async def test_a_lone_call_goes_out_alone_and_gets_its_answer() -> None:
    rec = Recorder()
    batcher = Batcher(rec, max_batch=8)
    assert await batcher.call(7) == "answer 7"
    assert await batcher.call(8) == "answer 8"
    assert rec.batches == [[7], [8]]


async def test_calls_made_on_one_turn_go_out_as_one_batch_in_order() -> None:
    rec = Recorder()
    batcher = Batcher(rec, max_batch=8)
    answers = await asyncio.gather(*(batcher.call(n) for n in (3, 1, 2)))
    assert answers == ["answer 3", "answer 1", "answer 2"]
    assert rec.batches == [[3, 1, 2]]


async def test_calls_made_while_a_batch_is_in_flight_wait_and_go_out_together() -> None:
    rec = Recorder()
    batcher = Batcher(rec, max_batch=8)
    first = await hold_first_batch(batcher, rec)
    later = [asyncio.create_task(batcher.call(n)) for n in (1, 2, 3)]
    await asyncio.sleep(0)
    assert rec.batches == [[0]]  # nothing else is sent while the first is in flight
    assert rec.gate is not None
    rec.gate.set()
    assert await first == "answer 0"
    assert [await t for t in later] == ["answer 1", "answer 2", "answer 3"]
    assert rec.batches == [[0], [1, 2, 3]]


async def test_a_batch_holds_at_most_max_batch_calls() -> None:
    rec = Recorder()
    batcher = Batcher(rec, max_batch=2)
    answers = await asyncio.gather(*(batcher.call(n) for n in range(5)))
    assert answers == [f"answer {n}" for n in range(5)]
    assert rec.batches == [[0, 1], [2, 3], [4]]


async def test_an_error_reaches_every_call_of_its_batch_and_no_other() -> None:
    rec = Recorder()
    batcher = Batcher(rec, max_batch=8)
    first = await hold_first_batch(batcher, rec)
    later = [asyncio.create_task(batcher.call(n)) for n in (1, 2)]
    await asyncio.sleep(0)
    rec.fail_with = ConnectionError("the database went away")
    assert rec.gate is not None
    rec.gate.set()
    with pytest.raises(ConnectionError, match="went away"):
        await first
    for task in later:
        with pytest.raises(ConnectionError, match="went away"):
            await task
    rec.fail_with = None
    assert await batcher.call(9) == "answer 9"  # the batcher recovers for the next call
    assert rec.batches == [[0], [1, 2], [9]]


async def test_a_call_cancelled_before_its_batch_is_sent_is_left_out() -> None:
    rec = Recorder()
    batcher = Batcher(rec, max_batch=8)
    first = await hold_first_batch(batcher, rec)
    gone = asyncio.create_task(batcher.call(1))
    kept = asyncio.create_task(batcher.call(2))
    await asyncio.sleep(0)
    gone.cancel()
    assert rec.gate is not None
    rec.gate.set()
    assert await first == "answer 0"
    assert await kept == "answer 2"
    with pytest.raises(asyncio.CancelledError):
        await gone
    assert rec.batches == [[0], [2]]


async def test_a_caller_that_gives_up_does_not_cancel_the_batch_it_rides_in() -> None:
    rec = Recorder()
    batcher = Batcher(rec, max_batch=8)
    rec.gate = asyncio.Event()
    impatient = asyncio.create_task(batcher.call(1))
    patient = asyncio.create_task(batcher.call(2))
    await rec.entered.wait()  # both are in the batch in flight
    impatient.cancel()
    with pytest.raises(asyncio.CancelledError):
        await impatient
    rec.gate.set()
    assert await patient == "answer 2"
    assert rec.batches == [[1, 2]]


async def test_a_batch_function_that_answers_the_wrong_number_of_calls_is_an_error() -> None:
    rec = Recorder()
    rec.short = True
    batcher = Batcher(rec, max_batch=8)
    results = await asyncio.gather(batcher.call(1), batcher.call(2), return_exceptions=True)
    assert [str(r) for r in results] == ["a batch of 2 calls got 1 answers"] * 2
    assert all(isinstance(r, RuntimeError) for r in results)


async def test_a_batch_cancelled_in_flight_cancels_its_calls_instead_of_leaving_them_hanging() -> (
    None
):
    """When the event loop shuts down it cancels the sending task: its callers must
    not wait for ever on answers that will never come."""
    rec = Recorder()
    batcher = Batcher(rec, max_batch=8)
    rec.gate = asyncio.Event()
    calls = [asyncio.create_task(batcher.call(n)) for n in (1, 2)]
    await rec.entered.wait()
    senders = asyncio.all_tasks() - {asyncio.current_task(), *calls}
    assert len(senders) == 1
    senders.pop().cancel()
    for call in calls:
        with pytest.raises(asyncio.CancelledError):
            await call
    rec.gate = None
    assert await batcher.call(3) == "answer 3"  # a new sender for the next call
    assert rec.batches == [[1, 2], [3]]


def test_max_batch_must_be_at_least_one() -> None:
    with pytest.raises(ValueError, match=r"^max_batch must be at least 1$"):
        Batcher(Recorder(), max_batch=0)
    assert Batcher(Recorder(), max_batch=1) is not None
