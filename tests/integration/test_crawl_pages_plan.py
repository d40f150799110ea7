"""A crawl's page of known assets, and the digest of a batch's range of them, is a walk of
ix_assets_live_path_c (migration 0018) from its keyset, never a sort of the config's live
assets: at a million files a crawl asks for 200 ranges, and a sort each would read the
library 200 times."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from psycopg_pool import AsyncConnectionPool

from safelight.library.catalogue import assets
from safelight.testing.fakeclock import FakeClock
from safelight.testing.rows import add_config

pytestmark = pytest.mark.integration


def _nodes(plan: dict[str, Any]) -> Iterator[dict[str, Any]]:
    yield plan
    for child in plan.get("Plans", []):
        yield from _nodes(child)


async def test_a_page_of_known_assets_walks_the_path_index_from_its_keyset(
    pool: AsyncConnectionPool[Any],
) -> None:
    async with pool.connection() as conn:
        configs = []
        for root in ("/a", "/b"):
            configs.append(await add_config(conn, FakeClock(), "bench", root))
        # 30,000 live assets in each of two configs, a tenth of them soft-deleted; paths
        # whose byte order differs from a linguistic one (capitals, an accent, digits).
        await conn.execute(
            """
            INSERT INTO assets (storage_config_id, file_path, file_name, content_hash,
                size_bytes, modified_at, modified_ns, media_type, captured_at, captured_local,
                captured_at_source, captured_year, captured_month, captured_day,
                is_deleted, deleted_at, last_seen_at, created_at)
            SELECT c, p, p, left(md5(c::text || p), 16), 1000, now(), n, 'image', now(),
                   localtimestamp, 'file', 2026, 12, 1, n %% 10 = 0,
                   CASE WHEN n %% 10 = 0 THEN now() END, now(), now()
            FROM unnest(%(configs)s::uuid[]) c, generate_series(1, 30000) n,
                 LATERAL (SELECT (ARRAY['A', 'b', 'é', 'Z', '1'])[n %% 5 + 1]
                                 || '/' || n || '.jpg' AS p) s
            """,
            {"configs": configs},
        )
        await conn.execute("ANALYZE assets")
        # Whether the index can serve the page, not what the planner picks for 27,000
        # rows (a bitmap scan and a sort, cheap at that size; at a million, where a sort
        # a page would cost, it walks the index: bench/library.py, docs/benchmarks.md 7).
        # A plan that needs a sort or a full scan still gets one with these off.
        await conn.execute("SET enable_seqscan = off")
        await conn.execute("SET enable_bitmapscan = off")
        await conn.execute("SET enable_sort = off")
        plans = []
        for query in (assets.LIVE_AFTER_PATH, assets.LIVE_IN_RANGE, assets.LIVE_DIGEST_IN_RANGE):
            cur = await conn.execute(
                "EXPLAIN (FORMAT JSON) " + query,
                {"config_id": configs[0], "after": "b/17", "upto": "b/9", "limit": 5000},
            )
            plan_row = await cur.fetchone()
            assert plan_row is not None
            plans.append(list(_nodes(plan_row[0][0]["Plan"])))
        await conn.execute("RESET ALL")
    for nodes in plans:
        assert all(n["Node Type"] not in ("Sort", "Incremental Sort", "Seq Scan") for n in nodes), (
            nodes
        )
        (scan,) = [n for n in nodes if n.get("Relation Name") == "assets"]
        assert scan["Index Name"] == "ix_assets_live_path_c", scan
        # The keyset is where the walk starts, not a filter over the rows before it.
        assert "file_path" in scan["Index Cond"] and "storage_config_id" in scan["Index Cond"], scan
