"""The steps of a crawl that need no database: the walk, its matching with a config's
live assets in path order, and turning one original into a new asset with its proxies.

The walk (``Walker``):

- lists the root iteratively with ``os.scandir``, a bounded number of folders and
  files per step, so the caller can run each step in a thread and check for
  cancellation and report progress in between;
- gives out its files in path order (Python's ``str`` order, that of the UTF-8 bytes
  and of PostgreSQL's ``COLLATE "C"``), a step's batch at a time (``take_batch``, each
  file as its ``decisions.StatKey``: no object per file), and holds only what the folders
  it listed hold beyond that: the crawl matches each batch with the known assets read
  in the same order (``KnownInPathOrder``, ADR 0033);
- lists every folder through a descriptor opened beneath the root with no symbolic link
  on the way (``originals.StorageRoot``), so a folder swapped for a link mid-walk is
  not listed through the link;
- follows no symlink: a link with a photo's or video's name, and a link to a folder,
  is listed in ``skipped`` ("symbolic link: not followed"), never dropped silently. A
  link's target inside the root is listed at its real path anyway, and a target
  outside the root must never be read. With ``follow_links_inside_root``, a link to a
  regular file inside the root is taken as a file at the link's path whose bytes are
  opened at the target's resolved path (by the same safe walk) -- unless the walk
  lists the target itself: then the link is the same file twice and is counted as a
  duplicate of its target (``links``). Links to folders are never followed (a folder
  listed twice, or a loop);
- never enters safelight's own folders (``own``: the proxy root, the home, the
  embedded data folder), recognised by device and inode wherever they appear, and
  reports each one it meets in ``skipped``; a root inside the proxy root or the data
  folder is not walked (a root inside the home, as the demo library, is);
- keeps each ``.xmp`` file's stat and pairs every photo with its XMP sidecar in the
  same folder (``sidecars.sidecar_for``): a sidecar is never an asset, an error or an
  unsupported file; a sidecar that is a symbolic link is reported in ``skipped`` like
  any other link and not read;
- skips hidden and housekeeping names (``mediatypes.is_ignored_name``) with everything
  below them, and anything that is not a regular file or folder; counts the regular
  files that are no photo, video or sidecar (``other_files``), and leaves them alone;
- reports, without stopping, a folder it cannot list and a name that is not valid
  UTF-8 (it cannot be stored in a text column). Assets under a folder that could not
  be listed are not soft-deleted: their files may well be there.
"""

from __future__ import annotations

import bisect
import operator
import os
import stat
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path, PurePosixPath

from safelight.library.files.confinement import describe_os_error
from safelight.library.files.errors import MediaError
from safelight.library.files.mediatypes import (
    MediaType,
    is_ignored_name,
    media_type_by_extension,
    media_type_of_name,
)
from safelight.library.files.originals import StorageRoot, SymbolicLinkRefused
from safelight.library.files.roots import FolderId, OwnFolder, by_folder_id, own_folder_holding
from safelight.library.media.sidecars import SidecarFile, is_sidecar_name, sidecar_for
from safelight.library.walk.decisions import StatKey, stat_key

WALK_FOLDERS_PER_STEP = 200
"""Folders listed per walk step: each step is one short trip to a thread."""
WALK_FILES_PER_STEP = 5000
"""About the most files a step gives out: the batch a crawl then matches and writes."""


def _as_folder(path: str) -> str:
    return path + "/"


_path_of = operator.itemgetter(0)


class RootUnavailable(MediaError):
    """The storage root itself is missing, not a folder, or cannot be listed."""


@dataclass(frozen=True, slots=True)
class WalkedFile:
    path: str
    """Relative to the root, ``/``-separated, valid UTF-8."""
    size: int
    mtime_ns: int
    media_type: MediaType
    source: str | None = None
    """Where its bytes are opened, if not at ``path``: the resolved target of a link
    inside the root (``Walker.follow_links_inside_root``)."""
    sidecar: SidecarFile | None = None
    """A photo's XMP sidecar in its folder (``sidecars.sidecar_for``), with its stat."""

    @property
    def opened_at(self) -> str:
        return self.source if self.source is not None else self.path

    @property
    def key(self) -> StatKey:
        return stat_key(self.path, self.size, self.mtime_ns, self.sidecar)


def walked_file(key: StatKey) -> WalkedFile:
    """The file the walk gave out as ``key`` (``WalkBatch.listed``), as an object: a crawl
    makes one only for a file that is not unchanged."""
    path, size, mtime_ns, sidecar_path, sidecar_size, sidecar_mtime_ns = key
    kind = media_type_by_extension(path.rpartition("/")[2])
    assert kind is not None, "the walk gives out photos and videos only"
    if sidecar_path is None:
        return WalkedFile(path, size, mtime_ns, kind)
    assert sidecar_size is not None and sidecar_mtime_ns is not None
    sidecar = SidecarFile(sidecar_path, sidecar_size, sidecar_mtime_ns)
    return WalkedFile(path, size, mtime_ns, kind, sidecar=sidecar)


@dataclass(frozen=True, slots=True)
class WalkBatch:
    """What one step of the walk gave out (``Walker.take_batch``)."""

    listed: list[StatKey]
    """The files listed, in path order, each as its ``decisions.StatKey`` (no object)."""
    followed: list[WalkedFile]
    """Once the walk is done: the files of followed links (``source`` set), at paths the
    listed files have passed."""


@dataclass(frozen=True, slots=True)
class FileError:
    path: str
    """Relative to the root; a name that is not UTF-8 is shown with ``\\x..`` escapes."""
    reason: str


def printable(relative: str) -> str:
    """A relative path as text that can be stored and shown, whatever its bytes."""
    return os.fsencode(relative).decode("utf-8", "backslashreplace")


def _is_utf8(name: str) -> bool:
    if name.isascii():  # most names, and far cheaper to tell than by encoding
        return True
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:  # a surrogate-escaped byte: the name is not UTF-8
        return False
    return True


SYMLINK_REASON = "symbolic link: not followed"


@dataclass
class Walker:
    """An iterative walk of ``storage``'s root, in steps; see the module."""

    storage: StorageRoot
    own: Sequence[OwnFolder] = ()
    """Skipped, with a ``skipped`` entry, wherever they appear (the root included):
    ``roots.own_folders`` of the settings."""
    follow_links_inside_root: bool = False
    """File links whose target resolves inside the root become files (see ``links``)."""
    errors: list[FileError] = field(default_factory=list)
    skipped: list[FileError] = field(default_factory=list)
    """What was deliberately not crawled, with why: links, safelight's own folders."""
    links: list[tuple[str, str]] = field(default_factory=list)
    """(link, target) of file links to a target this walk lists itself: the same file
    twice, so the link is a duplicate of its target, never a second asset."""
    unreadable_folders: list[str] = field(default_factory=list)
    other_files: int = 0
    """Regular files that are no photo, video or XMP sidecar: left alone, only counted
    (hidden and housekeeping names, ``is_ignored_name``, are not even counted)."""
    _listed: list[StatKey] = field(default_factory=list)
    """Given out since the last ``take_batch``, in path order."""
    _followed: list[WalkedFile] = field(default_factory=list)
    """Once the walk is done: the files of followed links (``source`` set)."""
    _stack: list[str | list[StatKey]] = field(default_factory=lambda: [""])
    """Folders to list (their relative path) and runs of a folder's files to give out (in
    path order), the next on top: what the listed folders hold beyond what was given out,
    never the whole tree."""
    _pending_links: list[tuple[WalkedFile, str]] = field(default_factory=list)
    _checked_root: bool = False
    _own_by_id: dict[FolderId, OwnFolder] = field(default_factory=dict)

    @property
    def root(self) -> Path:
        return self.storage.path

    @property
    def done(self) -> bool:
        return not self._stack

    def peek_batch(self) -> WalkBatch:
        """What ``take_batch`` would take now, without taking it."""
        return WalkBatch(list(self._listed), list(self._followed))

    def take_batch(self) -> WalkBatch:
        """The files given out since the last call: a crawl takes them after each step,
        so the walk holds only what it has not given out."""
        batch = WalkBatch(self._listed, self._followed)
        self._listed, self._followed = [], []
        return batch

    def step(self, max_folders: int | None = None, max_files: int | None = None) -> None:
        """List up to ``max_folders`` folders and give out up to ``max_files`` files
        (``take_batch``), in path order (by default ``WALK_FOLDERS_PER_STEP`` and
        ``WALK_FILES_PER_STEP``). Blocking: run it in a thread.

        Raises ``RootUnavailable`` if the root itself cannot be listed.
        """
        max_folders = WALK_FOLDERS_PER_STEP if max_folders is None else max_folders
        max_files = WALK_FILES_PER_STEP if max_files is None else max_files
        if not self._checked_root:
            self._checked_root = True
            self._own_by_id = by_folder_id(self.own)
            inside = own_folder_holding(self.root, self.own)
            if inside is not None:
                self._stack.clear()
                self.skipped.append(
                    FileError("", f"the storage root is inside safelight's own folder "
                              f"({inside.what}, {inside.path}): not crawled")
                )  # fmt: skip
                return
        stack, listed = self._stack, self._listed
        folders = given = 0
        while stack and given < max_files:
            top = stack[-1]
            if not isinstance(top, str):  # a run of files: given out whole, or its start
                room = max_files - given
                if len(top) <= room:
                    listed += top
                    stack.pop()
                    given += len(top)
                else:
                    listed += top[:room]
                    stack[-1] = top[room:]
                    given = max_files
                continue
            if folders == max_folders:
                break
            stack.pop()
            folders += 1
            self._list(top)
        if not stack:
            self._settle_links()

    def _list(self, relative: str) -> None:
        try:
            fd = self.storage.open_folder(relative)
            try:
                with os.scandir(fd) as listing:
                    found = list(listing)
                # Stat'ed through ``fd`` (the entries keep it): it stays open until then.
                self._list_entries(relative, found)
            finally:
                os.close(fd)
        except (OSError, MediaError) as error:
            reason = error.reason if isinstance(error, MediaError) else describe_os_error(error)
            if not relative:
                raise RootUnavailable(
                    f"the storage root {self.root} cannot be listed: {reason}"
                ) from error
            if isinstance(error, SymbolicLinkRefused):
                # Swapped for a link since its parent was listed: not followed.
                self.skipped.append(FileError(relative + "/", error.reason))
                return
            self.unreadable_folders.append(relative)
            self.errors.append(FileError(relative + "/", f"folder cannot be listed: {reason}"))

    def _list_entries(self, relative: str, found: list[os.DirEntry[str]]) -> None:
        """What the walk does with each name of a folder's listing: a folder to list, a
        file to give out (its ``StatKey``), a sidecar to pair, or nothing (reported, or
        not for the walk); then the folder's files and folders go on the stack in path
        order. The work of every file of the library: each entry costs one check of its
        name, its type from the listing (no system call) and, for a photo or video, one
        ``stat``; no object but its key."""
        prefix = relative + "/" if relative else ""
        files: list[StatKey] = []
        folders: list[str] = []
        sidecars: dict[str, SidecarFile] = {}
        links = len(self._pending_links)
        for entry in found:
            name = entry.name
            if is_ignored_name(name):
                continue
            try:
                # A regular file first: most entries are, and it takes one call to tell
                # (none of the three follows a link, so they never overlap).
                if not entry.is_file(follow_symlinks=False):
                    if entry.is_dir(follow_symlinks=False):
                        if self._is_folder_to_list(prefix + name, name, entry):
                            folders.append(prefix + name)
                    elif entry.is_symlink():
                        self._visit_link(prefix + name, name)
                    continue  # a folder, a link, or neither a regular file nor a folder
            except OSError as error:
                self.errors.append(FileError(printable(prefix + name), describe_os_error(error)))
                continue
            if media_type_by_extension(name) is None:
                if _is_utf8(name) and is_sidecar_name(name):
                    self._keep_sidecar(prefix + name, name, entry, sidecars)
                else:
                    self.other_files += 1
                continue
            if not _is_utf8(name):
                self.errors.append(
                    FileError(
                        printable(prefix + name),
                        "file name is not valid UTF-8; skipped (rename it to include it)",
                    )
                )
                continue
            try:
                st = entry.stat(follow_symlinks=False)
            except FileNotFoundError:
                continue  # gone since the listing: as if never there
            except OSError as error:
                self.errors.append(FileError(prefix + name, describe_os_error(error)))
                continue
            files.append((prefix + name, st.st_size, st.st_mtime_ns, None, None, None))
        if sidecars:
            self._pair_sidecars(files, links, sidecars)
        files.sort()  # by path: the first item of a key, unique
        self._push(files, folders)

    def _push(self, files: list[StatKey], folders: list[str]) -> None:
        """A listed folder's files and folders on the stack, the next on top: in path
        order, a folder sorting as ``name/`` ("a.jpg" < "a/..." < "a0.jpg", as the paths
        below them do); the files between two folders as one run."""
        ahead: list[str | list[StatKey]] = []
        start = 0
        for folder in sorted(folders, key=_as_folder):
            end = bisect.bisect_left(files, folder + "/", lo=start, key=_path_of)
            if end > start:
                ahead.append(files[start:end])
            ahead.append(folder)
            start = end
        if start < len(files):
            ahead.append(files[start:] if start else files)
        ahead.reverse()
        self._stack += ahead

    def _is_folder_to_list(self, child: str, name: str, entry: os.DirEntry[str]) -> bool:
        """Whether a folder of the listing is to be listed: not if its name is not UTF-8
        (an error) or it is one of safelight's own (skipped)."""
        if not _is_utf8(name):
            self.errors.append(
                FileError(
                    printable(child) + "/",
                    "folder name is not valid UTF-8; skipped with everything in it "
                    "(rename it to include it)",
                )
            )
            return False
        if self.own:
            try:
                own = self._own_folder(entry.stat(follow_symlinks=False))
            except OSError:
                own = None  # gone since the listing; listing it will say so
            if own is not None:
                self.skipped.append(
                    FileError(child + "/", f"safelight's own folder ({own.what}): not crawled")
                )
                return False
        return True

    def _pair_sidecars(
        self, files: list[StatKey], links: int, sidecars: Mapping[str, SidecarFile]
    ) -> None:
        """Give the photos of the folder just listed (``files``, and the links listed
        since ``links``) their sidecars (``sidecars.sidecar_for``)."""
        for index, key in enumerate(files):
            path = key[0]
            if media_type_by_extension(path.rpartition("/")[2]) == "image":
                found = sidecar_for(path.rpartition("/")[2], sidecars)
                if found is not None:
                    files[index] = stat_key(path, key[1], key[2], found)
        for index in range(links, len(self._pending_links)):
            walked, source = self._pending_links[index]
            if walked.media_type == "image":
                found = sidecar_for(PurePosixPath(walked.path).name, sidecars)
                if found is not None:
                    self._pending_links[index] = (replace(walked, sidecar=found), source)

    def _own_folder(self, st: os.stat_result) -> OwnFolder | None:
        return self._own_by_id.get((st.st_dev, st.st_ino))

    @staticmethod
    def _keep_sidecar(
        child: str, name: str, entry: os.DirEntry[str], sidecars: dict[str, SidecarFile]
    ) -> None:
        """Keep a ``.xmp`` file of the folder being listed by its lower-cased name."""
        try:
            st = entry.stat(follow_symlinks=False)
        except OSError:
            return  # gone, or unreadable: the photo is read as if it had none
        sidecars[name.lower()] = SidecarFile(child, st.st_size, st.st_mtime_ns)

    def _visit_link(self, child: str, name: str) -> None:
        """Report a link (a media file's name, or a link to a folder); a link to anything
        else is as silent as any other file that is no photo or video."""
        kind = media_type_of_name(name) if _is_utf8(name) else None
        link = self.root / child
        try:
            target_st = os.stat(link)  # the target's kind only; nothing of it is read
        except OSError:
            target_st = None
        if target_st is not None and stat.S_ISDIR(target_st.st_mode):
            self.skipped.append(FileError(printable(child) + "/", SYMLINK_REASON))
            return
        if kind is None:
            if _is_utf8(name) and is_sidecar_name(name):
                self.skipped.append(FileError(child, SYMLINK_REASON))  # never read
            return
        if not self.follow_links_inside_root or target_st is None:
            self.skipped.append(FileError(printable(child), SYMLINK_REASON))
            return
        target = Path(os.path.realpath(link))
        reason = self._refused_target(target, target_st)
        if reason is not None:
            self.skipped.append(FileError(child, reason))
            return
        source = target.relative_to(self.root).as_posix()
        walked = WalkedFile(child, target_st.st_size, target_st.st_mtime_ns, kind, source)
        self._pending_links.append((walked, source))

    def _refused_target(self, target: Path, target_st: os.stat_result) -> str | None:
        if not target.is_relative_to(self.root) or target == self.root:
            return "symbolic link to outside the storage root: not followed"
        if not stat.S_ISREG(target_st.st_mode):
            return "symbolic link to something that is not a regular file: not followed"
        folder = target.parent
        while folder != self.root:
            try:
                own = self._own_folder(os.stat(folder))
            except OSError:
                own = None
            if own is not None:
                return f"symbolic link into safelight's own folder ({own.what}): not followed"
            folder = folder.parent
        return None

    def _settle_links(self) -> None:
        for walked, source in self._pending_links:
            if self._lists(source):
                self.links.append((walked.path, source))
            else:
                self._followed.append(walked)
        self._pending_links.clear()

    def _lists(self, target: str) -> bool:
        """Whether this walk gave out ``target``, the resolved target of a file link
        inside the root that ``_refused_target`` let through (a regular file, no own
        folder on its way, no link in its path): by the rules of ``_list_entries``, without
        keeping every path the walk gave out. Asked once the walk is done."""
        names = target.split("/")
        if any(is_ignored_name(n) or not _is_utf8(n) for n in names):
            return False
        return media_type_of_name(names[-1]) is not None and not self.under_unreadable_folder(
            target
        )

    def under_unreadable_folder(self, path: str) -> bool:
        return any(path.startswith(folder + "/") for folder in self.unreadable_folders)
