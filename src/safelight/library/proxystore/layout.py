"""The proxy root's layout: where an asset's proxies lie and what their names say.

Invariants:

- The proxy folder of an asset derives only from its storage config id and content hash
  (``<proxy root>/<config id>/<hash[0:2]>/<hash>/``), so every actor (crawl, purge, sweep)
  computes the same folder without a lookup.
- A proxy file's name carries the attempt that wrote it (``<type>.<item id>-<attempt>.<ext>``,
  ``AttemptTag``), so no two attempts ever write the same name: a stale attempt's late
  rename can only add a file no row names (an orphan, for the sweep), never replace one
  that a newer attempt wrote. Only the row says which file an asset's proxy is; readers
  follow it and never compute a name. Names of the legacy form ``<type>.<ext>`` (written
  before ADR 0016) are still valid, and are never written again.
- Only names of this layout are ever deleted under the proxy root (``parse_proxy_name``,
  ``is_staging_name``, ``is_layout_folder``); files are published by ``publishing``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from uuid import UUID

from safelight.library.files.hashing import CONTENT_HASH_HEX_LENGTH

_CONTENT_HASH = re.compile(rf"[0-9a-f]{{{CONTENT_HASH_HEX_LENGTH}}}")
_PROXY_TYPE = re.compile(r"[a-z0-9][a-z0-9_-]{0,31}")
_EXTENSION = re.compile(r"[a-z0-9]{1,8}")
_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
_HASH_PREFIX = re.compile(r"[0-9a-f]{2}")
# ``<item id>-<attempt>`` in canonical decimal (no sign, no leading zero): the one
# spelling ``AttemptTag.text`` writes, so every name has one parse.
_ATTEMPT_TAG = re.compile(r"(0|[1-9][0-9]{0,18})-(0|[1-9][0-9]{0,9})")
# tempfile's names: a prefix, eight of [a-z0-9_], a suffix (write_atomically, and the
# video's temporary folder in handlers.crawl).
_STAGED_FILE = re.compile(r"\.[a-z0-9_][a-z0-9_.-]{0,63}\.[a-z0-9_]{8}\.tmp")
_VIDEO_TEMP_FOLDER = re.compile(r"\.video-[a-z0-9_]{8}\.tmp")


def proxy_dir(proxy_root: Path, config_id: UUID, content_hash: str) -> Path:
    """``<proxy root>/<config id>/<hash[0:2]>/<hash>/``: the folder of one asset's proxies.

    The two-character level keeps folders small (at most 256 per config). Both parts are
    validated, so the result cannot leave ``proxy_root`` whatever the caller passes.
    """
    if not isinstance(config_id, UUID):
        raise TypeError(f"config_id must be a UUID, not {type(config_id).__name__}")
    if not _CONTENT_HASH.fullmatch(content_hash):
        raise ValueError(
            f"content hash must be {CONTENT_HASH_HEX_LENGTH} lowercase hex digits, "
            f"got {content_hash!r}"
        )
    return proxy_root / proxy_folder(config_id, content_hash)


def proxy_folder(config_id: UUID, content_hash: str) -> str:
    """``<config id>/<hash[0:2]>/<hash>``: an asset's folder, relative to the proxy root."""
    return f"{config_id}/{content_hash[:2]}/{content_hash}"


@dataclass(frozen=True, slots=True)
class AttemptTag:
    """The attempt that writes a proxy (its work item's id and attempt number), as it
    appears in the file's name. Unique per attempt: an item's attempts are numbered, and
    item ids are never reused."""

    item_id: int
    attempt: int

    def __post_init__(self) -> None:
        if not _ATTEMPT_TAG.fullmatch(self.text):
            raise ValueError(f"not an attempt of a work item: {self.item_id!r}, {self.attempt!r}")

    @property
    def text(self) -> str:
        return f"{self.item_id}-{self.attempt}"


@dataclass(frozen=True, slots=True)
class ProxyName:
    """A path relative to the proxy root that is one of safelight's own proxy files:
    ``<config id>/<hash[0:2]>/<hash>/<type>.<item id>-<attempt>.<ext>``, or the legacy
    ``.../<type>.<ext>``, each part in its canonical form."""

    config_id: UUID
    content_hash: str
    file_name: str
    written_by: AttemptTag | None = None
    """None for a legacy name (written before names carried their attempt)."""

    @property
    def folder(self) -> str:
        return proxy_folder(self.config_id, self.content_hash)

    @property
    def relative(self) -> str:
        return f"{self.folder}/{self.file_name}"


def parse_proxy_name(relative: str) -> ProxyName | None:
    """The proxy file ``relative`` names, or None if it is not a name of the layout.

    Only names ``proxy_path`` builds pass, and the legacy ``<type>.<ext>`` names it built
    before they carried their attempt: no ``..``, no extra or missing level, the config
    id as ``str(UUID)`` writes it, the hash prefix matching the hash. Deletes
    under the proxy root go only to names that pass (or to ``is_staging_name``), so a
    file of someone else's that ended up there, an original included, is never one.
    """
    parts = relative.split("/")
    if len(parts) != 4:
        return None
    config, prefix, content_hash, file_name = parts
    if not _UUID.fullmatch(config) or not _CONTENT_HASH.fullmatch(content_hash):
        return None
    if prefix != content_hash[:2]:
        return None
    parsed = _parse_file_name(file_name)
    if parsed is None:
        return None
    written_by = parsed if isinstance(parsed, AttemptTag) else None
    return ProxyName(UUID(config), content_hash, file_name, written_by)


_LEGACY = "legacy"


def _parse_file_name(name: str) -> AttemptTag | str | None:
    """The attempt a proxy file's name carries, ``_LEGACY`` for ``<type>.<ext>``, or
    None if ``name`` is neither form."""
    parts = name.split(".")
    if len(parts) not in (2, 3):
        return None
    if not _PROXY_TYPE.fullmatch(parts[0]) or not _EXTENSION.fullmatch(parts[-1]):
        return None
    if len(parts) == 2:
        return _LEGACY
    tag = _ATTEMPT_TAG.fullmatch(parts[1])
    if tag is None:
        return None
    return AttemptTag(int(tag[1]), int(tag[2]))


def _proxy_file_name(name: str) -> bool:
    return _parse_file_name(name) is not None


def is_staging_name(relative: str) -> bool:
    """Whether ``relative`` is a temporary file of the staging folder: a staged proxy
    (``.staging/.<name>.<random>.tmp``) or a file ffmpeg wrote in a video's temporary
    folder (``.staging/.video-<random>.tmp/<name>``)."""
    parts = relative.split("/")
    if not parts or parts[0] != STAGING_FOLDER:
        return False
    if len(parts) == 2:
        return bool(_STAGED_FILE.fullmatch(parts[1]))
    if len(parts) == 3:
        return bool(_VIDEO_TEMP_FOLDER.fullmatch(parts[1])) and _proxy_file_name(parts[2])
    return False


def is_layout_folder(relative: str) -> bool:
    """Whether ``relative`` is a folder of the layout: a config's folder, a hash prefix
    folder, an asset's folder, the staging folder or a video's temporary folder."""
    parts = relative.split("/")
    if parts[0] == STAGING_FOLDER:
        return len(parts) == 1 or (len(parts) == 2 and bool(_VIDEO_TEMP_FOLDER.fullmatch(parts[1])))
    if not _UUID.fullmatch(parts[0]) or len(parts) > 3:
        return False
    if len(parts) >= 2 and not _HASH_PREFIX.fullmatch(parts[1]):
        return False
    return len(parts) < 3 or (bool(_CONTENT_HASH.fullmatch(parts[2])) and parts[2][:2] == parts[1])


def proxy_path(
    proxy_root: Path,
    config_id: UUID,
    content_hash: str,
    proxy_type: str,
    ext: str,
    written_by: AttemptTag,
) -> Path:
    """``<proxy dir>/<type>.<item id>-<attempt>.<ext>``, e.g. ``.../thumbnail.812-2.jpg``:
    where the attempt ``written_by`` publishes this proxy. Names are validated.

    For writers only: which file an asset's proxy is, its row says (a file written by
    another attempt, or a legacy name); a reader never computes it.
    """
    if not isinstance(written_by, AttemptTag):
        raise TypeError(f"written_by must be an AttemptTag, not {type(written_by).__name__}")
    if not _PROXY_TYPE.fullmatch(proxy_type):
        raise ValueError(f"proxy type must match {_PROXY_TYPE.pattern}, got {proxy_type!r}")
    if not _EXTENSION.fullmatch(ext):
        raise ValueError(f"extension must match {_EXTENSION.pattern}, got {ext!r}")
    return proxy_dir(proxy_root, config_id, content_hash) / (
        f"{proxy_type}.{written_by.text}.{ext}"
    )


PROXY_ROOT_MARKER = ".safelight-proxy-root.json"
"""At the top of the proxy root: which database the root belongs to (``proxyroot``)."""

STAGING_FOLDER = ".staging"
"""Under the proxy root, where proxies are written before they are published. It is no
storage config's folder, so writing there touches none of a config's files: only the
rename into place does, right after ``ensure_alive()``. Left-overs (a crash, a stopped
attempt) are orphans, which the proxy sweep deletes once they are an hour old."""
