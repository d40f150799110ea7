"""The database's digest of a range of a config's live assets
(``assets.live_digest_in_range``) is the walk's digest of the same keys
(``library.walk.matching.stat_keys_digest``): the two encodings are one, whatever a name holds,
and a range is bounded as the crawl asks (after one path, up to another)."""

from __future__ import annotations

from typing import Any
from uuid import UUID

import pytest
from psycopg_pool import AsyncConnectionPool

from safelight.library.catalogue import assets
from safelight.library.walk.decisions import StatKey
from safelight.library.walk.matching import stat_keys_digest
from safelight.testing.fakeclock import FakeClock
from safelight.testing.rows import add_config

pytestmark = pytest.mark.integration

# Paths in byte order (the walk's), with what a name may hold: capitals, accents, emoji,
# spaces, the digest's own separators, a colon and digits that look like a length.
KEYS: list[StatKey] = sorted(
    [
        ("A/IMG 0001.JPG", 1, 1_700_000_000_123_456_789, None, None, None),
        ("a/b.jpg", 2**40, 5, "a/b.xmp", 7, -3),  # a sidecar; an mtime before 1970
        ("a/sep\x1fin\x1ename.jpg", 3, 6, None, None, None),
        ("a/3:x.jpg", 4, 7, "a/3:x.JPG.xmp", 0, 0),
        ("é/ü ß.heic", 5, 8, None, None, None),
        ("é/🌅.jpg", 6, 9, None, None, None),
        ("z.mov", 1, 0, None, None, None),
    ]
)


async def _insert(conn: Any, config: UUID, key: StatKey, *, deleted: bool = False) -> None:
    path, size, mtime, sidecar, sidecar_size, sidecar_mtime = key
    await conn.execute(
        """
        INSERT INTO assets (storage_config_id, file_path, file_name, content_hash,
            size_bytes, modified_at, modified_ns, media_type, captured_at, captured_local,
            captured_at_source, captured_year, captured_month, captured_day,
            is_deleted, deleted_at, last_seen_at, created_at,
            sidecar_path, sidecar_size, sidecar_modified_ns)
        VALUES (%(c)s, %(p)s, %(p)s, left(md5(%(p)s), 16), %(s)s, now(), %(m)s, 'image',
            now(), localtimestamp, 'file', 2026, 12, 2, %(d)s,
            CASE WHEN %(d)s THEN now() END, now(), now(), %(sp)s, %(ss)s, %(sm)s)
        """,
        {"c": config, "p": path, "s": size, "m": mtime, "d": deleted, "sp": sidecar,
         "ss": sidecar_size, "sm": sidecar_mtime},
    )  # fmt: skip


async def test_the_databases_digest_of_a_range_is_the_walks_of_its_keys(
    pool: AsyncConnectionPool[Any],
) -> None:
    config = await add_config(pool, FakeClock(), owner="digest", root="/digest/a")
    other = await add_config(pool, FakeClock(), owner="digest", root="/digest/b")
    async with pool.connection() as conn:
        for key in KEYS:
            await _insert(conn, config, key)
        # Neither another config's assets nor a soft-deleted one are in a range.
        await _insert(conn, other, KEYS[0])
        await _insert(conn, config, ("a/gone.jpg", 1, 1, None, None, None), deleted=True)
        for start in range(len(KEYS)):
            for end in range(start, len(KEYS)):
                after = KEYS[start - 1][0] if start else ""
                got = await assets.live_digest_in_range(conn, config, after, KEYS[end][0])
                expected = KEYS[start : end + 1]
                assert got == (len(expected), stat_keys_digest(expected)), (start, end)
        # An empty range, and one whose bounds are no asset's path.
        assert await assets.live_digest_in_range(conn, config, "a/b.jpg", "a/b.jpg") == (
            0,
            stat_keys_digest([]),
        )
        assert await assets.live_digest_in_range(conn, config, "a/", "a/zzz") == (
            3,
            stat_keys_digest([k for k in KEYS if "a/" < k[0] <= "a/zzz"]),
        )


async def test_a_range_with_any_key_changed_has_another_digest(
    pool: AsyncConnectionPool[Any],
) -> None:
    config = await add_config(pool, FakeClock(), owner="digest", root="/digest/c")
    async with pool.connection() as conn:
        for key in KEYS:
            await _insert(conn, config, key)
        whole = await assets.live_digest_in_range(conn, config, "", KEYS[-1][0])
        assert whole == (len(KEYS), stat_keys_digest(KEYS))
        changes = [
            "UPDATE assets SET size_bytes = size_bytes + 1 WHERE file_path = 'z.mov'",
            "UPDATE assets SET modified_ns = modified_ns + 1 WHERE file_path = 'z.mov'",
            "UPDATE assets SET sidecar_size = 1 WHERE file_path = 'a/b.jpg'",
            "UPDATE assets SET sidecar_path = NULL, sidecar_size = NULL,"
            " sidecar_modified_ns = NULL WHERE file_path = 'a/b.jpg'",
        ]
        for change in changes:
            async with conn.transaction(force_rollback=True):
                await conn.execute(change)
                count, digest = await assets.live_digest_in_range(conn, config, "", KEYS[-1][0])
                assert count == len(KEYS) and digest != whole[1], change
