"""What a crawl does with one walked file, decided from what it knows, with no I/O.

Two looks. Before hashing, :func:`by_stat`: a known path with the same size and mtime
(ns) is unchanged, and is not read; unless the XMP sidecar the walk paired it with is
not the one its asset was read with (added, changed, swapped or removed since):
``SidecarChanged``, its metadata is read again, in place. After hashing,
:func:`by_content`, from the asset at the path, the live asset with that content, and
the content being ingested right now:

- ``Touched``: the same content as the asset at that path (touched, or copied over with
  the same bytes): the same asset, with the new stat;
- ``Moved``: the content of a live asset elsewhere whose file is gone: that asset
  follows the file here (its proxies stay), and an asset of other content at this
  path goes;
- ``Duplicate``: the content of a live asset whose file is still there, or of a file
  being ingested by this crawl right now: not a second asset; an asset of other content
  at this path goes;
- ``New``: content the library does not have yet: ingest it.

Whether the other asset's file still holds its content is a fact only the file system
knows, asked only when it matters: ``by_content`` then answers ``AskOwner``, and
:func:`by_owner` decides with the answer. A ``Touched`` or ``Moved`` asset whose
sidecar is not the walked one (:func:`sidecar_changed`) is read again too, once it
follows its file. The crawl handler applies each decision in one place.
"""

from __future__ import annotations

from dataclasses import dataclass

from safelight.library.catalogue.assets import KnownAsset
from safelight.library.media.sidecars import SidecarFile


@dataclass(frozen=True, slots=True)
class Unchanged:
    asset: KnownAsset


@dataclass(frozen=True, slots=True)
class SidecarChanged:
    """The file is the asset's, unchanged, but its sidecar is not the one it was read
    with: read its metadata again and update ``asset`` in place (the same id; its
    proxies remade only if its orientation changed). Never hashed."""

    asset: KnownAsset


@dataclass(frozen=True, slots=True)
class Touched:
    asset: KnownAsset


@dataclass(frozen=True, slots=True)
class Moved:
    asset: KnownAsset
    """The asset that follows its content to the walked path."""
    replaces: KnownAsset | None
    """The asset of other content at that path, which goes."""


@dataclass(frozen=True, slots=True)
class Duplicate:
    same_as: str
    """The path of the file that holds the content already."""
    replaces: KnownAsset | None


@dataclass(frozen=True, slots=True)
class New:
    pass


@dataclass(frozen=True, slots=True)
class AskOwner:
    """Find out whether ``owner``'s file still holds its content, then ask
    :func:`by_owner` (unsure counts as there: a duplicate changes nothing, a wrong move
    would take the asset away from a file that still holds it)."""

    owner: KnownAsset
    replaces: KnownAsset | None


Decision = Touched | Moved | Duplicate | New

StatKey = tuple[str, int, int, str | None, int | None, int | None]
"""What :func:`by_stat` compares, as one tuple: the path, size and mtime (ns) of a file,
then those of its XMP sidecar (three Nones: none). The walk gives out its files as
these and the rows of the known assets begin with them (``assets.KnownRow``),
so a crawl compares whole runs of them at once (``library.walk.matching.KnownInPathOrder``):
two equal keys are always ``Unchanged``; a file whose key differs from its asset's
becomes an object and is decided by :func:`by_stat`, as every file once was."""


def stat_key(path: str, size: int, mtime_ns: int, sidecar: SidecarFile | None) -> StatKey:
    if sidecar is None:
        return (path, size, mtime_ns, None, None, None)
    return (path, size, mtime_ns, sidecar.path, sidecar.size, sidecar.mtime_ns)


def by_stat(
    at_path: KnownAsset | None, size: int, mtime_ns: int, sidecar: SidecarFile | None = None
) -> Unchanged | SidecarChanged | None:
    """``Unchanged`` when the path is known with this size and mtime and the walk paired
    it with the sidecar its asset was read with (``sidecar``: the walk's, or None);
    ``SidecarChanged`` when only the sidecar differs; None: hash it."""
    if at_path is None or (at_path.size_bytes, at_path.modified_ns) != (size, mtime_ns):
        return None
    if sidecar_changed(at_path, sidecar):
        return SidecarChanged(at_path)
    return Unchanged(at_path)


def sidecar_changed(asset: KnownAsset, sidecar: SidecarFile | None) -> bool:
    """Whether the walk's ``sidecar`` is not the one ``asset`` was read with: one added,
    removed, another one (another path: moved, or ``name.ext.xmp`` appearing beside
    ``name.xmp``), or the same one changed (size or mtime)."""
    return asset.sidecar != sidecar


def by_content(
    path: str,
    content_hash: str,
    *,
    at_path: KnownAsset | None,
    with_content: KnownAsset | None,
    ingesting: str | None,
) -> Decision | AskOwner:
    """Decide a hashed file. ``with_content``: the live asset with this content, if any;
    ``ingesting``: the path this crawl is ingesting this content from, if any."""
    if at_path is not None and at_path.content_hash == content_hash:
        return Touched(at_path)
    if with_content is not None and with_content.file_path != path:
        return AskOwner(with_content, at_path)
    if ingesting is not None:
        return Duplicate(ingesting, at_path)
    return New()


def by_owner(ask: AskOwner, *, still_there: bool) -> Duplicate | Moved:
    """The content's asset elsewhere: a copy of a file that is still there is a
    duplicate; a file that is gone has moved here."""
    if still_there:
        return Duplicate(ask.owner.file_path, ask.replaces)
    return Moved(ask.owner, ask.replaces)
