"""Write docs/schema.sql: the full current schema, dumped from a freshly migrated database.

Usage: .venv/bin/python scripts/dump_schema.py   (uses SAFELIGHT_TEST_DATABASE_URL or
SAFELIGHT_DATABASE_URL when set, else a temporary embedded PostgreSQL). A test fails
when the file no longer matches the migrations.
"""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import psycopg

from safelight.db.embedded import start_embedded, venv_pginstall
from safelight.db.migrate import migrate
from safelight.db.pool import connect, with_database
from safelight.testing.serverusers import remove_users_of_gone_homes

ROOT = Path(__file__).resolve().parent.parent
TARGET = ROOT / "docs" / "schema.sql"

HEADER = """\
-- The full current schema of safelight, dumped from a database with every migration
-- applied (scripts/dump_schema.py). Do not edit: write a migration, then regenerate.
-- tests/integration/test_migrations.py fails when this file is stale.
"""


def pg_dump_binary() -> str:
    bundled = venv_pginstall() / "bin" / "pg_dump"
    return str(bundled) if bundled.exists() else (shutil.which("pg_dump") or "pg_dump")


def normalise(dump: str) -> str:
    """Keep the DDL; drop what varies between dumps (versions, SET lines, comments)."""
    kept = []
    for line in dump.splitlines():
        if line.startswith("--") or line.startswith("SET ") or line.startswith("\\"):
            continue
        if line.startswith("SELECT pg_catalog.set_config"):
            continue
        kept.append(line.rstrip())
    text = re.sub(r"\n{3,}", "\n\n", "\n".join(kept)).strip()
    return HEADER + "\n" + text + "\n"


async def _migrated(url: str) -> None:
    conn = await connect(url)
    try:
        await migrate(conn)
    finally:
        await conn.close()


def dump(admin_url: str) -> str:
    name = f"safelight_schema_dump_{os.getpid()}"
    with psycopg.connect(admin_url, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}"')
        conn.execute(f'CREATE DATABASE "{name}"')
    try:
        url = with_database(admin_url, name)
        asyncio.run(_migrated(url))
        out = subprocess.run(
            [pg_dump_binary(), "--schema-only", "--no-owner", "--no-privileges", "-d", url],
            check=True,
            capture_output=True,
            text=True,
        ).stdout
        return normalise(out)
    finally:
        with psycopg.connect(admin_url, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def main() -> int:
    url = os.environ.get("SAFELIGHT_TEST_DATABASE_URL") or os.environ.get("SAFELIGHT_DATABASE_URL")
    handle = None
    if not url:
        home = Path(tempfile.mkdtemp(prefix="safelight-schema-"))
        home.chmod(0o711)  # as root, the server's own user must enter it
        url, handle = start_embedded(home)
    try:
        TARGET.write_text(dump(url), encoding="utf-8")
    finally:
        if handle is not None:
            handle.cleanup()
            # The home and, as root, its server's user (ADR 0037).
            shutil.rmtree(home, ignore_errors=True)
            remove_users_of_gone_homes(home)
    print(f"wrote {TARGET.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
