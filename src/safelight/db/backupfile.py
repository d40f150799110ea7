"""The file a backup of the catalogue is (ADR 0061): a ZIP archive, one member per table
in COPY's text format and a manifest that says what it holds.

::

    manifest.json           the format, safelight's version, when, the server's version,
                            the migrations applied (version, name, sha256), each table's
                            columns, rows and the sha256 of its member, each sequence's
                            last value
    tables/<table>.copy     the table's rows, COPY ... TO STDOUT (text)

The manifest is written last, so a file cut short has none (nor ZIP's central
directory); :func:`read_manifest` also checks every member against the manifest (rows,
sha256; ZIP's CRC as it reads), so a restore refuses a damaged file before it touches
the database. Any ``unzip`` can list and extract it.
"""

from __future__ import annotations

import hashlib
import json
import zipfile
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from safelight.db.migrate import AppliedMigration

FORMAT = "safelight-backup"
FORMAT_VERSION = 1
MANIFEST = "manifest.json"
CHUNK_BYTES = 1 << 20
"""How much of a table is read or written at once."""


class BackupError(RuntimeError):
    """A backup cannot be made or restored; the message says why, names the file and is
    safe to print (never a password)."""


def member_of(table: str) -> str:
    return f"tables/{table}.copy"


@dataclass(frozen=True, slots=True)
class TableEntry:
    name: str
    columns: tuple[str, ...]
    rows: int
    sha256: str


@dataclass(frozen=True, slots=True)
class SequenceEntry:
    name: str
    last_value: int | None
    """None: the sequence was never used."""


@dataclass(frozen=True, slots=True)
class Manifest:
    safelight_version: str
    created_at: str
    """UTC, ISO 8601."""
    server_version: str
    migrations: tuple[AppliedMigration, ...]
    tables: tuple[TableEntry, ...]
    sequences: tuple[SequenceEntry, ...]

    @property
    def rows(self) -> int:
        return sum(table.rows for table in self.tables)

    def to_json(self) -> bytes:
        document = {
            "format": FORMAT,
            "format_version": FORMAT_VERSION,
            "safelight_version": self.safelight_version,
            "created_at": self.created_at,
            "server_version": self.server_version,
            "migrations": [
                {"version": m.version, "name": m.name, "checksum": m.checksum}
                for m in self.migrations
            ],
            "tables": [
                {"name": t.name, "columns": list(t.columns), "rows": t.rows, "sha256": t.sha256}
                for t in self.tables
            ],
            "sequences": [{"name": s.name, "last_value": s.last_value} for s in self.sequences],
        }
        return json.dumps(document, indent=2).encode()

    @classmethod
    def from_json(cls, data: bytes) -> Manifest:
        """Raises ``ValueError`` (``KeyError``, ``TypeError``) for a manifest that is not
        one of this format."""
        document = json.loads(data)
        if document.get("format") != FORMAT:
            raise ValueError("not a safelight backup")
        if document.get("format_version") != FORMAT_VERSION:
            raise ValueError(
                f"format version {document.get('format_version')!r}, and this safelight "
                f"reads version {FORMAT_VERSION}: restore it with the release that made it"
            )
        return cls(
            safelight_version=str(document["safelight_version"]),
            created_at=str(document["created_at"]),
            server_version=str(document["server_version"]),
            migrations=tuple(
                AppliedMigration(str(m["version"]), str(m["name"]), _optional_text(m["checksum"]))
                for m in document["migrations"]
            ),
            tables=tuple(
                TableEntry(
                    str(t["name"]),
                    tuple(str(c) for c in t["columns"]),
                    _count(t["rows"]),
                    str(t["sha256"]),
                )
                for t in document["tables"]
            ),
            sequences=tuple(
                SequenceEntry(
                    str(s["name"]), None if s["last_value"] is None else int(s["last_value"])
                )
                for s in document["sequences"]
            ),
        )


def _optional_text(value: Any) -> str | None:
    return None if value is None else str(value)


def _count(value: Any) -> int:
    if not isinstance(value, int) or value < 0:
        raise ValueError(f"a row count of {value!r}")
    return value


class TableWriter:
    """One table's member being written: counts its rows (COPY's text format ends each
    with a newline, and escapes the newlines inside values) and hashes its bytes."""

    def __init__(self, member: IO[bytes]) -> None:
        self._member = member
        self._hash = hashlib.sha256()
        self.rows = 0

    def write(self, data: bytes) -> None:
        self._member.write(data)
        self._hash.update(data)
        self.rows += data.count(b"\n")

    @property
    def sha256(self) -> str:
        return self._hash.hexdigest()


def read_manifest(path: Path) -> Manifest:
    """The manifest of the backup at ``path``, once every table's member was read and
    found to be what it says; raises :class:`BackupError` naming the file otherwise.
    Blocking: it reads the whole file."""
    try:
        with zipfile.ZipFile(path) as archive:
            try:
                manifest = Manifest.from_json(archive.read(MANIFEST))
            except KeyError:
                raise BackupError(f"{path} is not a safelight backup: it has no manifest") from None
            except (ValueError, TypeError) as exc:
                raise BackupError(f"{path} is not a backup this safelight reads: {exc}") from None
            for table in manifest.tables:
                _check_member(archive, path, table)
    except (zipfile.BadZipFile, zlib.error, EOFError) as exc:
        # A byte changed in a member's compressed data: zlib's error, or the CRC's.
        raise BackupError(
            f"{path} is damaged or cut short ({exc or type(exc).__name__}); nothing was restored"
        ) from None
    except OSError as exc:
        raise BackupError(f"cannot read {path}: {exc.strerror or exc}") from None
    return manifest


def _check_member(archive: zipfile.ZipFile, path: Path, table: TableEntry) -> None:
    digest, rows = hashlib.sha256(), 0
    try:
        with archive.open(member_of(table.name)) as member:
            while chunk := member.read(CHUNK_BYTES):
                digest.update(chunk)
                rows += chunk.count(b"\n")
    except KeyError:
        raise BackupError(f"{path} is damaged: table {table.name}'s rows are missing") from None
    if digest.hexdigest() != table.sha256 or rows != table.rows:
        raise BackupError(
            f"{path} is damaged: table {table.name} holds {rows} rows with sha256 "
            f"{digest.hexdigest()[:12]}…, and its manifest says {table.rows} with "
            f"{table.sha256[:12]}…"
        )
