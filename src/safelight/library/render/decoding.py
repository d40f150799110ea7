"""Photos decoded in a pool of processes, so that a crawl uses every core.

A photo's metadata and proxies (``read_image_metadata`` + ``make_image_proxies``) are
CPU work, and about a quarter of it holds the GIL (metadata parsing, the BlurHash's
sample, Pillow's bookkeeping between its C calls). In threads of one process a crawl
therefore used 1.4 of 2 cores (docs/benchmarks.md, section 5); in a pool of processes
each photo gets a core of its own (ADR 0010).

Only the decoding moves. What crosses the process boundary is a path (in a crawl, an
``originals.OriginalRef``: which open file to read) and a ``ProxySpec`` in, and
``ImageMetadata`` and ``ImageProxies`` out (frozen dataclasses of bytes, numbers,
strings and datetimes), or the ``MediaError`` the photo raised, which pickles as its
class and reason and so reaches the crawl as the same per-file error it is in a thread.
A decode process writes no file and holds no database connection: every
write stays in the Worker, behind the attempt's ``ensure_alive``.

Processes are started with ``spawn``: a fresh interpreter that imports what it needs.
Never ``fork``: the Worker has threads, an event loop and open connections, which a
fork would copy in whatever state they were. Not ``forkserver`` either: each of its
children holds the fork server's "parent alive" pipe, so a SIGKILLed Worker would leave
the fork server, and every decode process, running for good.

Lifetimes:

- One ``ImageDecoder`` per Worker process (``safelight.app.build_engine``), shared by
  its Workers, shut down when they end (``Engine.close``).
- A decode process dies with the Worker, even a SIGKILLed one: the kernel kills it
  when its parent dies (``PR_SET_PDEATHSIG``). "Parent" is the thread that started it,
  so processes are started only from the event loop's thread, which lives as long as
  the Worker (``ImageDecoder.run`` is called there; the pool starts a process in
  ``submit`` while none is idle).
- A decode process has an address-space limit: its memory budget plus room for its
  code (``limits.limit_address_space``). A photo that needs more fails alone with
  ``DecodeOutOfMemory``, and the process lives on for the next; a photo too large for
  the budget by its header never gets that far (``limits.check_decode_fits``).
- A decode process that dies (the OOM killer, a SIGKILL, a crash in a codec) breaks the
  pool. The photo it was decoding gets a per-file error naming how it died; photos that
  were only waiting in the pool, or running in the other processes, are sent once more
  to a fresh pool, which the next photo starts.

What a decoder says while it decodes a photo (Pillow's Python warnings, libtiff's and
the other codecs' lines written from C to the process's stderr) is heard per call: the
decode process's descriptor 2 points at a file of its own while a call runs, and the
warnings the call raises are recorded (those the filters make errors still raise). Both
come back with the call's outcome and go to the Worker's log, with the file's name
(``ImageDecoder.run``'s ``about``), never as bare lines on the terminal (ADR 0057).
"""

from __future__ import annotations

import asyncio
import ctypes
import multiprocessing
import os
import signal
import sys
import tempfile
import threading
import warnings
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from contextlib import contextmanager
from dataclasses import dataclass, replace
from multiprocessing.process import BaseProcess
from pathlib import Path
from typing import Any, TypeVar

from safelight.library.files import sniffing
from safelight.library.files.errors import MediaError, UnsupportedMedia
from safelight.library.files.limits import (
    DEFAULT_DECODE_MEMORY_MIB,
    MIB,
    address_space_limit_bytes,
    limit_address_space,
)
from safelight.library.files.mediatypes import extension_of
from safelight.library.files.originals import OriginalRef, open_source
from safelight.library.media.metadata import NOT_AN_IMAGE, ImageMetadata, read_image_metadata
from safelight.library.media.sidecars import NO_FACTS, SidecarFacts
from safelight.library.render.heard import said_lines, tell_heard
from safelight.library.render.images import ImageProxies, ProxySpec, make_image_proxies
from safelight.library.render.raw import decode_raw

T = TypeVar("T")

START_METHOD = "spawn"
TRACKED_CALLS = 256
"""Calls in flight whose process is known (far more than Workers x max_concurrent_files);
a call beyond it still runs, but a pool that breaks under it counts as its own death."""
TRIES = 2
"""Pools a call may see break under it before it is an error: once, then a fresh pool."""

_PR_SET_PDEATHSIG = 1  # <linux/prctl.h>
_NOT_STARTED = 0
HEARD_BYTES = 64 * 1024
"""At most this much of what a codec wrote to stderr during one call is read back."""


class DecodeProcessDied(MediaError):
    """The process decoding this photo died (or the pool broke twice under it)."""


class DecodeOutOfMemory(MediaError):
    """Decoding this photo reached its decode process's address-space limit."""


def decode_image(
    path: Path | OriginalRef,
    spec: ProxySpec,
    name: str | None = None,
    sidecar: SidecarFacts = NO_FACTS,
) -> tuple[ImageMetadata, ImageProxies]:
    """A photo's metadata and proxies, in whichever process runs it (blocking), decoded
    as what its content is (``sniffing``, ADR 0052): a camera RAW through LibRaw
    (``raw.decode_raw``), any other photo through Pillow. ``name``: the file's name
    (its extension), a path's own when None (an ``OriginalRef`` has none: nothing is
    noted of it); when it names another format than the content, the metadata's
    ``misnamed`` says so.

    The crawl passes an ``OriginalRef``: the decode process (spawned, so it inherits no
    descriptor) reopens the Worker's open original through ``/proc``, the same file
    whatever became of its name (see ``originals``). ``sidecar``: what its XMP sidecar
    says, which wins over the embedded capture time and orientation (``sidecars``)."""
    if name is None and isinstance(path, Path):
        name = path.name
    with open_source(path) as original:
        content = sniffing.sniff_file(original.fileno())
    if content is None:
        raise UnsupportedMedia(f"{NOT_AN_IMAGE}: its content is no format safelight knows")
    if content.kind == "video":
        named = f", named {extension_of(name) or 'without an extension'}" if name else ""
        raise UnsupportedMedia(f"holds {content.a}{named}: not read as a photo")
    content, (meta, proxies) = _decode_content(path, spec, name or "", content, sidecar)
    misnamed = sniffing.misnamed(content, name) if name is not None else None
    return replace(meta, misnamed=misnamed, cut_short=proxies.cut_short), proxies


def _decode_content(
    path: Path | OriginalRef,
    spec: ProxySpec,
    name: str,
    content: sniffing.Content,
    sidecar: SidecarFacts,
) -> tuple[sniffing.Content, tuple[ImageMetadata, ImageProxies]]:
    """The photo decoded, with what it turned out to be (a TIFF LibRaw reads is a RAW)."""
    if sniffing.raw_by_name(content, name):
        try:
            return sniffing.RAW_TIFF if content is sniffing.TIFF else content, decode_raw(
                path, spec, sidecar
            )
        except UnsupportedMedia:
            if content.kind == "raw":
                raise
            # A TIFF with a RAW's name that LibRaw refuses: the plain TIFF it is.
    meta = read_image_metadata(path, sidecar)
    return content, (meta, make_image_proxies(path, spec, sidecar.orientation))


# --- in a decode process -----------------------------------------------------------------

_started_by: Any = None
"""This process's view of the parent's table: call slot -> pid of the process that
started the call (0: not started). Set by the initializer."""


_memory_limit_bytes = 0
"""This process's address-space limit (0: none); named in ``DecodeOutOfMemory``."""

_stderr_fd = -1
"""An unnamed file this process's descriptor 2 points at while a call runs (``_heard``)."""


@dataclass(frozen=True, slots=True)
class _Said:
    """A call's outcome as it crosses back to the Worker, with what the decoder said
    meanwhile: its value, or the ``MediaError`` it raised."""

    value: Any
    error: MediaError | None
    heard: tuple[str, ...]


def _initialize(worker_pid: int, started_by: Any, memory_budget_bytes: int) -> None:
    global _started_by, _memory_limit_bytes, _stderr_fd
    _started_by = started_by
    limit_address_space(memory_budget_bytes)
    _memory_limit_bytes = address_space_limit_bytes(memory_budget_bytes)
    _stderr_fd, name = tempfile.mkstemp(prefix="safelight-decode-")
    os.unlink(name)  # no name anyone else sees; it goes with the process
    # Ctrl-C in a terminal reaches the whole process group. The Worker handles it (it
    # stops, then shuts this pool down); a decode process must not die of it first. It
    # was started with SIGINT blocked (``_SpawnQuietly``), so one that came during its
    # start-up is pending: ignored first, it is dropped when unblocked (ADR 0063).
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
    _die_with_parent(worker_pid)


@contextmanager
def sigint_blocked() -> Iterator[None]:
    """SIGINT held back in this thread meanwhile (delivered when the block ends)."""
    old = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


class _SpawnQuietly(multiprocessing.context.SpawnProcess):
    """A decode process that starts with SIGINT blocked, until ``_initialize`` ignores it.

    A spawned process imports its modules (NumPy, Pillow, this one) for half a second
    before its initializer runs; a Ctrl-C meanwhile, which a terminal sends to the whole
    process group, would end it with a traceback of its imports on the terminal. A
    signal mask is inherited across fork and exec, a handler is not: so the mask, set
    around the start in whichever thread starts it. Not a process group of its own:
    spawn gives no hook between fork and exec, and the mask covers the same window.
    """

    def start(self) -> None:
        with sigint_blocked():
            super().start()


class _QuietSpawnContext(multiprocessing.context.SpawnContext):
    """The spawn context (``START_METHOD``) whose processes start with SIGINT blocked."""

    Process = _SpawnQuietly


def _die_with_parent(worker_pid: int) -> None:
    """Have the kernel SIGKILL this process when its parent dies (Linux; a no-op elsewhere).

    The signal only covers a parent that dies from now on; one already gone shows as
    another parent (init, or a subreaper), and then this process exits at once.
    """
    if not sys.platform.startswith("linux"):
        return
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) != 0:
        error = ctypes.get_errno()
        raise OSError(error, f"prctl(PR_SET_PDEATHSIG): {os.strerror(error)}")
    if os.getppid() != worker_pid:
        os._exit(1)


def _call(slot: int, function: Callable[..., T], args: tuple[Any, ...]) -> _Said:
    if slot >= 0:
        _started_by[slot] = os.getpid()
    heard: list[str] = []
    try:
        with _heard(heard):
            value = function(*args)
        return _Said(value, None, tuple(heard))
    except MediaError as error:
        return _Said(None, error, tuple(heard))
    except MemoryError:
        # The allocation that failed is not made, and what the decode held is freed as
        # the exception unwinds: the process goes on with the next photo.
        raise DecodeOutOfMemory(
            "ran out of memory decoding this photo (the decode process's limit is "
            f"{_memory_limit_bytes // MIB} MiB of address space; "
            "SAFELIGHT_DECODE_MEMORY_MIB raises it)"
        ) from None


@contextmanager
def _heard(heard: list[str]) -> Iterator[None]:
    """What is said while the block runs, into ``heard``: the warnings it raises (as
    "Category: message"; a warning the filters make an error still raises) and the
    lines written to descriptor 2 (from C: libtiff, libjpeg, libheif...), which points
    at this process's own file meanwhile. One call at a time runs in a decode process,
    so nothing else writes there then."""
    _flush_stderr()
    saved = os.dup(2)
    os.dup2(_stderr_fd, 2)
    try:
        with warnings.catch_warnings(record=True) as caught:
            # Shown each time, not once per place: each photo's are its own. Appended,
            # so a filter that makes a warning an error (a decompression bomb) still wins.
            warnings.simplefilter("always", append=True)
            yield
    finally:
        _flush_stderr()
        os.dup2(saved, 2)
        os.close(saved)
        heard += [f"{w.category.__name__}: {w.message}" for w in caught]
        heard += _written()


def _flush_stderr() -> None:
    """What Python buffered for descriptor 2 goes where descriptor 2 points now."""
    if sys.stderr is not None:
        sys.stderr.flush()


def _written() -> list[str]:
    """What was written to the process's stderr file since the last call; emptied."""
    data = os.pread(_stderr_fd, HEARD_BYTES, 0)
    os.ftruncate(_stderr_fd, 0)
    os.lseek(_stderr_fd, 0, os.SEEK_SET)  # descriptor 2's offset too: they share it
    return said_lines(data)


# --- in the Worker -----------------------------------------------------------------------


@dataclass(slots=True)
class _Pool:
    executor: ProcessPoolExecutor
    processes: Mapping[int, BaseProcess]
    """The executor's own pid -> process map (filled as it starts them): how a dead
    process's exit code is found once the pool has broken."""
    ended: asyncio.Future[None] | None = None
    """Its shutdown, once it broke: every call it failed waits for the same one."""


class ImageDecoder:
    """Runs photo decodes in a pool of ``processes`` processes; shared by a process's
    Workers. ``decode`` and ``run`` are called from the event loop's thread."""

    def __init__(self, processes: int, memory_mib: int = DEFAULT_DECODE_MEMORY_MIB) -> None:
        if processes < 1:
            raise ValueError("an ImageDecoder needs at least one process")
        self.processes = processes
        self.memory_mib = memory_mib
        """Each process's budget: its address-space limit is this plus room for code."""
        self._context = _QuietSpawnContext()
        self._started_by = self._context.RawArray(ctypes.c_int64, TRACKED_CALLS)
        self._free_slots = list(range(TRACKED_CALLS))
        self._slots_lock = threading.Lock()  # slots come back from the pool's thread too
        self._pool: _Pool | None = None
        self._closed = False

    async def decode(
        self,
        path: Path | OriginalRef,
        spec: ProxySpec,
        name: str | None = None,
        sidecar: SidecarFacts = NO_FACTS,
        *,
        about: str | None = None,
    ) -> tuple[ImageMetadata, ImageProxies]:
        """``decode_image(path, spec, name, sidecar)`` in a decode process.

        Raises what the photo raises there (a ``MediaError``), or ``DecodeProcessDied``.
        Cancelling the caller cancels the call if it has not started; a call already
        running finishes in its process, and its result is dropped. What the decoder
        said meanwhile is logged with ``about`` (the file's name).
        """
        return await self.run(decode_image, path, spec, name, sidecar, about=about)

    async def run(self, function: Callable[..., T], *args: Any, about: str | None = None) -> T:
        """``function(*args)`` in a decode process; both must pickle (a module-level
        function). What it said (warnings, a codec's stderr) is logged with ``about``."""
        broken: BrokenProcessPool | None = None
        for _ in range(TRIES):
            pool = self._current_pool()
            slot = self._take_slot()
            try:
                future = pool.executor.submit(_call, slot, function, args)
            except BrokenProcessPool as error:  # broke since: nothing of this call ran
                self._give_back(slot)
                await self._end_broken(pool)
                broken = error
                continue
            try:
                said: _Said = await asyncio.wrap_future(future)
            except BrokenProcessPool as error:
                await self._end_broken(pool)
                death = self._death_of_call(pool, slot)
                if death is not None:
                    raise DecodeProcessDied(death) from error
                broken = error
            else:
                tell_heard(about, said.heard)
                if said.error is not None:
                    raise said.error
                value: T = said.value
                return value
            finally:
                self._give_back_when_done(future, slot)
        raise DecodeProcessDied(
            "decoding was interrupted twice by a decode process that died"
        ) from broken

    def pids(self) -> list[int]:
        """The decode processes of the current pool that are alive."""
        pool = self._pool
        if pool is None:
            return []
        return [pid for pid, process in list(pool.processes.items()) if process.is_alive()]

    def shutdown(self) -> None:
        """Cancel the calls not started, wait for those running (at most one photo per
        process) and end the processes. Blocking: run it in a thread. Idempotent."""
        self._closed = True
        pool, self._pool = self._pool, None
        if pool is not None:
            pool.executor.shutdown(wait=True, cancel_futures=True)

    # --- the pool ----------------------------------------------------------------------

    def _current_pool(self) -> _Pool:
        if self._closed:
            raise RuntimeError("the image decoder is shut down")
        if self._pool is None:
            # Started lazily: the pool starts a process at a submit that finds none idle,
            # up to its size, so the first photos start them. A Worker that never
            # decodes a photo (a video-only library, maintenance-only work, the test
            # suite's Workers) keeps no processes and their memory; the first photo
            # waits for a process's start-up (about half a second) once.
            executor = ProcessPoolExecutor(
                self.processes,
                mp_context=self._context,
                initializer=_initialize,
                initargs=(os.getpid(), self._started_by, self.memory_mib * MIB),
            )
            self._pool = _Pool(executor, executor._processes)
        return self._pool

    async def _end_broken(self, pool: _Pool) -> None:
        """Forget a broken pool and wait until its processes have all ended.

        Only then are their exit codes read: the pool's own thread reaps them (waitpid)
        while it ends them, and a second reaper at the same time could take an exit
        status away from the other.
        """
        if self._pool is pool:
            self._pool = None
        if pool.ended is None:
            pool.ended = asyncio.ensure_future(
                asyncio.to_thread(pool.executor.shutdown, wait=True, cancel_futures=True)
            )
        await asyncio.shield(pool.ended)

    def _death_of_call(self, pool: _Pool, slot: int) -> str | None:
        """How the process that ran this call died, if it did; None if the call never
        started, or ran in a process the broken pool ended because another one died."""
        if slot < 0:
            return "a decode process died while this photo was being decoded"
        pid = self._started_by[slot]
        if pid == _NOT_STARTED:
            return None
        process = pool.processes.get(pid)
        code = process.exitcode if process is not None else None
        if code == -signal.SIGTERM:  # how a broken pool ends the processes left
            return None
        return f"the decode process died while decoding this photo ({_describe_exit(code)})"

    # --- call slots --------------------------------------------------------------------

    def _take_slot(self) -> int:
        with self._slots_lock:
            slot = self._free_slots.pop() if self._free_slots else -1
        if slot >= 0:
            self._started_by[slot] = _NOT_STARTED
        return slot

    def _give_back(self, slot: int) -> None:
        if slot >= 0:
            with self._slots_lock:
                self._free_slots.append(slot)

    def _give_back_when_done(self, future: Future[Any], slot: int) -> None:
        # A slot is reused only once its call can no longer start: a call still queued
        # in a process would otherwise write its pid over the next call's.
        future.add_done_callback(lambda _: self._give_back(slot))


def _describe_exit(code: int | None) -> str:
    if code is None:
        return "how is unknown"
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        if -code == signal.SIGKILL:
            return f"killed by {name}, perhaps for lack of memory"
        return f"killed by {name}"
    return f"exit code {code}"
