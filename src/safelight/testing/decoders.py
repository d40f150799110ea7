"""A decode-process pool for the span of a test: started on entry, its processes shut
down on exit (in a thread, as shutting them down blocks), whatever the test raised."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from safelight.library.files.limits import DEFAULT_DECODE_MEMORY_MIB
from safelight.library.render.decoding import ImageDecoder


@asynccontextmanager
async def running_decoder(
    processes: int, memory_mib: int = DEFAULT_DECODE_MEMORY_MIB
) -> AsyncIterator[ImageDecoder]:
    decoder = ImageDecoder(processes, memory_mib)
    try:
        yield decoder
    finally:
        await asyncio.to_thread(decoder.shutdown)


@asynccontextmanager
async def decoder_or_threads(processes: int) -> AsyncIterator[ImageDecoder | None]:
    """``running_decoder(processes)``; or, with no processes, None: the crawl then decodes
    in threads. For the tests that run a crawl both ways."""
    if not processes:
        yield None
        return
    async with running_decoder(processes) as decoder:
        yield decoder
