"""The walk and the matching as objects, for tests: a crawl takes keys and rows
(``Walker.take_batch``, ``KnownInPathOrder.match_keys``) and makes objects only for
the files that differ; these make them for every file, to assert on them."""

from __future__ import annotations

from collections.abc import Sequence

from safelight.library.catalogue.assets import KnownAsset, KnownRow, known_asset
from safelight.library.walk.matching import KnownInPathOrder
from safelight.library.walk.walker import WalkedFile, Walker, walked_file


def given_out(walker: Walker) -> list[WalkedFile]:
    """What :func:`take_files` would take now, without taking it."""
    batch = walker.peek_batch()
    return [walked_file(key) for key in batch.listed] + batch.followed


def take_files(walker: Walker) -> list[WalkedFile]:
    """``take_batch`` as objects: the listed files in path order, then (once the walk is
    done) the followed links'."""
    batch = walker.take_batch()
    return [walked_file(key) for key in batch.listed] + batch.followed


def known_row(asset: KnownAsset) -> KnownRow:
    """The row ``asset`` is read from (``known_asset``'s inverse)."""
    sidecar = asset.sidecar
    return (
        asset.file_path,
        asset.size_bytes,
        asset.modified_ns,
        sidecar.path if sidecar else None,
        sidecar.size if sidecar else None,
        sidecar.mtime_ns if sidecar else None,
        asset.id,
        asset.content_hash,
        asset.media_type,
    )


def feed(known: KnownInPathOrder, page: Sequence[KnownAsset]) -> None:
    """``feed_rows`` for assets held as objects."""
    known.feed_rows([known_row(asset) for asset in page])


def match(
    known: KnownInPathOrder, batch: Sequence[WalkedFile]
) -> tuple[list[tuple[WalkedFile, KnownAsset | None]], list[KnownAsset]]:
    """``match_keys`` for files held as objects: each with the asset at its path."""
    matched = known.match_keys([walked.key for walked in batch])
    pairs = [
        (walked, None if row is None else known_asset(row))
        for walked, row in zip(batch, matched.at_path, strict=True)
    ]
    return pairs, [known_asset(row) for row in matched.unseen]
