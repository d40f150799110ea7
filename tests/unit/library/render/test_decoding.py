"""The decode processes: the same proxies and errors as in a thread, a dead process is
one photo's error and the next photo gets a fresh pool, nothing outlives shutdown.

Real process pools (one or two processes) on tiny generated photos. A call that must be
running while the test acts holds its process (``hold``) until the test lets go, so no
test waits for time to pass.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import logging
import os
import select
import signal
import subprocess
import sys
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path

import pytest

from safelight.library.files.errors import CorruptMedia, MediaError
from safelight.library.render.decoding import (
    START_METHOD,
    DecodeProcessDied,
    ImageDecoder,
    decode_image,
)
from safelight.testing.decoders import running_decoder
from safelight.testing.samplegen import Manifest, generate_library
from safelight.testing.specs import proxy_spec

SPEC = proxy_spec(thumbnail_width=32, preview_width=96)
# Only a test that hangs on a bug waits this long; a passing one never does.
DEADLOCK_SECONDS = 30.0


@pytest.fixture(scope="module")
def library(tmp_path_factory: pytest.TempPathFactory) -> Manifest:
    return generate_library(tmp_path_factory.mktemp("library"), seed=3, ffmpeg=None)


@pytest.fixture
async def decoder() -> AsyncIterator[ImageDecoder]:
    async with running_decoder(2) as decoder:
        yield decoder


@pytest.fixture
async def one_process() -> AsyncIterator[ImageDecoder]:
    async with running_decoder(1) as decoder:
        yield decoder


# --- run in a decode process (importable there: this module is on sys.path) --------------


def hold(fifo: str) -> int:
    """Write this process's pid into ``fifo``, then wait until the test closes its end."""
    fd = os.open(fifo, os.O_WRONLY)
    try:
        os.write(fd, b"%d\n" % os.getpid())
        poller = select.poll()
        poller.register(fd, select.POLLERR)  # the reading end closed
        poller.poll()
    finally:
        os.close(fd)
    return os.getpid()


def hold_once(fifo: str, marker: str) -> str:
    """``hold`` the first time; at once when called again (a retry)."""
    if os.path.exists(marker):
        return "again"
    Path(marker).touch()
    hold(fifo)
    return "first"


def death_signal() -> int:
    """This process's PR_SET_PDEATHSIG signal (0: none)."""
    value = ctypes.c_int(0)
    libc = ctypes.CDLL(None, use_errno=True)
    assert libc.prctl(2, ctypes.byref(value), 0, 0, 0) == 0  # PR_GET_PDEATHSIG
    return value.value


def interrupt_handler() -> object:
    return signal.getsignal(signal.SIGINT)


def blocked_signals() -> set[int]:
    """This thread's blocked signals."""
    return {int(s) for s in signal.pthread_sigmask(signal.SIG_BLOCK, [])}


def say(text: str, fail: bool) -> int:
    """Write ``text`` to descriptor 2 as a codec does (from C, past Python's sys.stderr)
    and warn it, in Python; then fail as a photo does, or return the process's pid."""
    import warnings

    os.write(2, f"{text} (from C)\n".encode())
    warnings.warn(text, UserWarning, stacklevel=1)
    if fail:
        raise CorruptMedia(f"corrupt: {text}")
    return os.getpid()


class Holder:
    """The test's end of a FIFO that ``hold`` writes its pid into."""

    def __init__(self, folder: Path, name: str) -> None:
        self.path = folder / name
        os.mkfifo(self.path)
        # Opened first, without blocking, so that the decode process's open returns.
        self._fd = os.open(self.path, os.O_RDONLY | os.O_NONBLOCK)

    async def pid(self) -> int:
        """The pid of the process running ``hold``, once it runs."""
        loop = asyncio.get_running_loop()
        ready: asyncio.Future[None] = loop.create_future()
        loop.add_reader(self._fd, lambda: ready.done() or ready.set_result(None))  # type: ignore[func-returns-value]
        try:
            await asyncio.wait_for(ready, DEADLOCK_SECONDS)
        finally:
            loop.remove_reader(self._fd)
        return int(os.read(self._fd, 64).decode())

    def release(self) -> None:
        with contextlib.suppress(OSError):
            os.close(self._fd)


@pytest.fixture
def holder(tmp_path: Path) -> Iterator[Callable[[str], Holder]]:
    """Makes a named :class:`Holder` in the test's folder; all are released after it."""
    made: list[Holder] = []

    def make(name: str) -> Holder:
        made.append(Holder(tmp_path, name))
        return made[-1]

    yield make
    for each in made:
        each.release()


def alive(pid: int) -> bool:
    return Path(f"/proc/{pid}").exists()


# A stand-in Worker: decodes a photo in two decode processes, prints their pids, waits.
WORKER = """
import asyncio, sys
from pathlib import Path
from safelight.library.render.decoding import ImageDecoder
from safelight.settings import Settings

async def main():
    decoder = ImageDecoder(2)
    photo = Path(sys.argv[1])
    spec = Settings(thumbnail_width=32, preview_width=96).proxy_spec()
    await asyncio.gather(decoder.decode(photo, spec), decoder.decode(photo, spec))
    print(*decoder.pids(), flush=True)
    sys.stdin.read()

asyncio.run(main())
"""


# --- the tests ---------------------------------------------------------------------------


def test_the_processes_are_not_forked() -> None:
    assert START_METHOD == "spawn"


async def test_photos_decode_in_a_process_as_they_do_in_a_thread(
    library: Manifest, decoder: ImageDecoder
) -> None:
    paths = [library.root / p.path for p in library.photos]
    assert len(paths) >= 5

    in_processes = await asyncio.gather(*(decoder.decode(p, SPEC) for p in paths))

    assert in_processes == [decode_image(p, SPEC) for p in paths]
    assert len(decoder.pids()) == 2


async def test_a_bad_photo_is_the_same_per_file_error_as_in_a_thread(
    library: Manifest, decoder: ImageDecoder
) -> None:
    assert library.errors
    for bad in library.errors:
        path = library.root / bad.path
        with pytest.raises(MediaError) as in_thread:
            decode_image(path, SPEC)
        with pytest.raises(MediaError) as in_process:
            await decoder.decode(path, SPEC)
        assert type(in_process.value) is type(in_thread.value), bad.path
        assert in_process.value.reason == in_thread.value.reason, bad.path


async def test_a_corrupt_jpeg_is_corrupt_media_and_the_pool_goes_on(
    library: Manifest, tmp_path: Path, one_process: ImageDecoder
) -> None:
    photo = library.root / library.photos[0].path
    data = photo.read_bytes()
    corrupt = tmp_path / "corrupt.jpg"
    corrupt.write_bytes(data[: len(data) // 2])
    before = await one_process.decode(photo, SPEC)
    pids = one_process.pids()

    with pytest.raises(CorruptMedia):
        await one_process.decode(corrupt, SPEC)

    assert await one_process.decode(photo, SPEC) == before
    assert one_process.pids() == pids  # the same process: an error is no death


async def test_a_killed_decode_process_is_that_photos_error_and_the_next_photo_decodes(
    library: Manifest, one_process: ImageDecoder, holder: Callable[[str], Holder]
) -> None:
    photo = library.root / library.photos[0].path
    held = holder("held")
    call = asyncio.create_task(one_process.run(hold, str(held.path)))
    pid = await held.pid()
    assert one_process.pids() == [pid]

    os.kill(pid, signal.SIGKILL)

    with pytest.raises(DecodeProcessDied) as died:
        await asyncio.wait_for(call, DEADLOCK_SECONDS)
    assert isinstance(died.value, MediaError)  # so the crawl records it and goes on
    assert died.value.reason == (
        "the decode process died while decoding this photo "
        "(killed by SIGKILL, perhaps for lack of memory)"
    )
    assert await one_process.decode(photo, SPEC) == decode_image(photo, SPEC)
    assert pid not in one_process.pids() and len(one_process.pids()) == 1


async def test_photos_that_only_shared_the_pool_with_a_dying_process_are_decoded_again(
    library: Manifest, tmp_path: Path, decoder: ImageDecoder, holder: Callable[[str], Holder]
) -> None:
    photo = library.root / library.photos[1].path
    first, second = holder("first"), holder("second")
    dying = asyncio.create_task(decoder.run(hold, str(first.path)))
    running = asyncio.create_task(
        decoder.run(hold_once, str(second.path), str(tmp_path / "marker"))
    )
    victim, bystander = await first.pid(), await second.pid()
    assert victim != bystander
    # Both processes are busy: this call waits in the pool, not started.
    waiting = asyncio.create_task(decoder.decode(photo, SPEC))

    os.kill(victim, signal.SIGKILL)

    with pytest.raises(DecodeProcessDied, match="SIGKILL"):
        await asyncio.wait_for(dying, DEADLOCK_SECONDS)
    assert await asyncio.wait_for(running, DEADLOCK_SECONDS) == "again"  # in a fresh pool
    assert await asyncio.wait_for(waiting, DEADLOCK_SECONDS) == decode_image(photo, SPEC)
    assert not set(decoder.pids()) & {victim, bystander}


async def test_a_cancelled_caller_does_not_wait_for_its_photo(
    library: Manifest, one_process: ImageDecoder, holder: Callable[[str], Holder]
) -> None:
    photo = library.root / library.photos[0].path
    held = holder("held")
    busy = asyncio.create_task(one_process.run(hold, str(held.path)))
    pid = await held.pid()
    queued = asyncio.create_task(one_process.decode(photo, SPEC))
    for _ in range(3):  # to its await of the pool (it takes no lock anyone holds)
        await asyncio.sleep(0)

    queued.cancel()

    # The only process is held, so the photo cannot have been decoded: the caller
    # returned without waiting for it.
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(queued, DEADLOCK_SECONDS)
    assert not busy.done()
    held.release()
    assert await busy == pid
    assert await one_process.decode(photo, SPEC) == decode_image(photo, SPEC)


async def test_shutdown_ends_every_decode_process(library: Manifest, decoder: ImageDecoder) -> None:
    photo = library.root / library.photos[0].path
    await asyncio.gather(decoder.decode(photo, SPEC), decoder.decode(photo, SPEC))
    pids = decoder.pids()
    assert pids and all(alive(pid) for pid in pids)

    await asyncio.to_thread(decoder.shutdown)

    assert decoder.pids() == []
    assert not [pid for pid in pids if alive(pid)]
    with pytest.raises(RuntimeError, match="shut down"):
        await decoder.decode(photo, SPEC)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
def test_decode_processes_die_with_a_killed_worker(library: Manifest) -> None:
    photo = library.root / library.photos[0].path
    worker = subprocess.Popen(
        [sys.executable, "-c", WORKER, str(photo)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert worker.stdout is not None
        pids = [int(pid) for pid in worker.stdout.readline().split()]
        assert len(pids) == 2
        # Opened while they run: readable once the process has ended.
        ends = [os.pidfd_open(pid) for pid in pids]
    finally:
        worker.kill()
        worker.wait()
        if worker.stdin is not None:
            worker.stdin.close()
        if worker.stdout is not None:
            worker.stdout.close()
    try:
        waiting = list(ends)
        while waiting:
            ended, _, _ = select.select(waiting, [], [], DEADLOCK_SECONDS)
            assert ended, f"decode processes {pids} outlived their Worker"
            waiting = [fd for fd in waiting if fd not in ended]
    finally:
        for fd in ends:
            os.close(fd)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
async def test_a_decode_process_is_killed_when_its_parent_dies(one_process: ImageDecoder) -> None:
    assert await one_process.run(death_signal) == signal.SIGKILL


async def test_a_decode_process_leaves_ctrl_c_to_the_worker(one_process: ImageDecoder) -> None:
    assert await one_process.run(interrupt_handler) == signal.SIG_IGN


async def test_a_decode_process_starts_with_ctrl_c_held_and_ends_its_start_ignoring_it(
    one_process: ImageDecoder,
) -> None:
    """Started with SIGINT blocked (a Ctrl-C during its imports waits), then ignored and
    unblocked by its initializer: nothing else of the mask changes, here or there (ADR
    0063)."""
    before = blocked_signals()
    assert int(signal.SIGINT) not in await one_process.run(blocked_signals)
    assert blocked_signals() == before  # the starting thread's mask is as it was


def test_a_decoder_needs_a_process() -> None:
    with pytest.raises(ValueError, match="at least one"):
        ImageDecoder(0)


async def test_what_a_call_says_is_logged_with_its_file_and_only_with_it(
    one_process: ImageDecoder,
    capfd: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    capfd.readouterr()
    with caplog.at_level(logging.WARNING, logger="safelight.decode"):
        pid = await one_process.run(say, "first", False, about="a/one.tif")
        with pytest.raises(CorruptMedia, match="corrupt: second"):
            await one_process.run(say, "second", True, about="b/two.tif")
        assert await one_process.run(say, "third", False) == pid  # the same process
    said = [r.getMessage() for r in caplog.records if r.name == "safelight.decode"]
    assert said == [
        "decoding a/one.tif: UserWarning: first",
        "decoding a/one.tif: first (from C)",
        "decoding b/two.tif: UserWarning: second",
        "decoding b/two.tif: second (from C)",
        "decoding a photo: UserWarning: third",
        "decoding a photo: third (from C)",
    ]
    out, err = capfd.readouterr()
    assert "first" not in err + out and "second" not in err + out
