"""A change feed for long-lived query processes: Linux inotify, drained at each request.

Freshness and folder listings are facts about the filesystem at the moment they were observed.
A long-lived engine keeps them and asks this feed, at the start of every request, what may have
changed since: the fd is drained with non-blocking reads until ``EAGAIN``. The kernel queues an
event before the ``write``/``rename``/``unlink`` syscall that caused it returns, so a request that
starts after a change returned always sees the change's event — the feed is exactly as honest
as a ``stat``, without the ``stat``.

::

    watch(folder)   add watches on the folder and every ancestor up to ``/`` ─► trusted?
    drain()         ─► Batch(paths, folders, listings, overflow)

The callers' rule: add the watch *before* the observation it protects (a change after the watch
exists is always queued), trust the observation until a batch names it, and fall back to
observing every time where ``watch`` says no.

What a batch names:

* ``paths``: an entry of a watched folder was written, touched, created, removed or renamed
  (the observation of exactly that path is void);
* ``folders``: a watched folder no longer is what its path names — it was removed, renamed, or
  an entry on its path (the folder itself or an ancestor) was replaced — so its watches are
  dropped, and every observation of it or under it is void;
* ``listings``: folders whose entries changed (a listing of them is void);
* ``overflow``: the kernel dropped events (``IN_Q_OVERFLOW``), a read failed, or the mount table
  changed (a mount hides a folder without an event): nothing observed before is trusted, and
  every watch is dropped and made again on demand.

Only folders on local filesystems are trusted: a network or FUSE filesystem can change without
the kernel seeing it. A file with more than one hard link is never trusted either (a write
through another link is reported to that link's folder); ``Freshness`` checks ``st_nlink``.
Where inotify is unavailable (not Linux, no fd, the watch limit reached), ``open`` returns
None or ``watch`` returns False and callers stat as before.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import select
import struct
import sys
from dataclasses import dataclass
from typing import Final

__all__ = ["Batch", "Changes"]

IN_MODIFY: Final = 0x00000002
IN_ATTRIB: Final = 0x00000004
IN_CLOSE_WRITE: Final = 0x00000008
IN_MOVED_FROM: Final = 0x00000040
IN_MOVED_TO: Final = 0x00000080
IN_CREATE: Final = 0x00000100
IN_DELETE: Final = 0x00000200
IN_DELETE_SELF: Final = 0x00000400
IN_MOVE_SELF: Final = 0x00000800
IN_UNMOUNT: Final = 0x00002000
IN_Q_OVERFLOW: Final = 0x00004000
IN_IGNORED: Final = 0x00008000
IN_ONLYDIR: Final = 0x01000000
IN_NONBLOCK: Final = 0o4000
IN_CLOEXEC: Final = 0o2000000

_ENTRIES: Final = IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO
_SELF: Final = IN_DELETE_SELF | IN_MOVE_SELF | IN_IGNORED | IN_UNMOUNT
# a folder whose files are observed; ancestors and listed folders only need their entries
_FILES_MASK: Final = (
    IN_MODIFY | IN_ATTRIB | IN_CLOSE_WRITE | _ENTRIES | IN_DELETE_SELF | IN_MOVE_SELF
)
# IN_ATTRIB too: a chmod of a folder on the path can make the files under it unreadable
_TREE_MASK: Final = _ENTRIES | IN_ATTRIB | IN_DELETE_SELF | IN_MOVE_SELF
_EVENT: Final = struct.Struct("iIII")
_READ: Final = 1 << 16

# statfs f_type of filesystems whose every change passes through this kernel's VFS; any other
# (NFS, SMB, FUSE, 9p, …) can change under us without an event, so it is never trusted
_LOCAL_FS: Final = frozenset(
    {
        0xEF53,  # ext2/3/4
        0x9123683E,  # btrfs
        0x58465342,  # xfs
        0x01021994,  # tmpfs
        0x794C7630,  # overlayfs
        0x2FC12FC1,  # zfs
        0xF2F52010,  # f2fs
        0x3153464A,  # jfs
        0x4D44,  # vfat
        0x2011BAB0,  # exfat
        0x7366746E,  # ntfs3
        0x858458F6,  # ramfs
    }
)


@dataclass(frozen=True, slots=True)
class Batch:
    """What may have changed since the previous drain (see the module docstring)."""

    paths: frozenset[str] = frozenset()
    folders: frozenset[str] = frozenset()
    listings: frozenset[str] = frozenset()
    overflow: bool = False

    @property
    def empty(self) -> bool:
        return not (self.paths or self.folders or self.listings or self.overflow)


class _Libc:
    def __init__(self) -> None:
        name = ctypes.util.find_library("c") or "libc.so.6"
        lib = ctypes.CDLL(name, use_errno=True)
        self.init1 = lib.inotify_init1
        self.init1.argtypes = [ctypes.c_int]
        self.init1.restype = ctypes.c_int
        self.add_watch = lib.inotify_add_watch
        self.add_watch.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_uint32]
        self.add_watch.restype = ctypes.c_int
        self.rm_watch = lib.inotify_rm_watch
        self.rm_watch.argtypes = [ctypes.c_int, ctypes.c_int]
        self.rm_watch.restype = ctypes.c_int
        self.statfs = lib.statfs
        self.statfs.argtypes = [ctypes.c_char_p, ctypes.c_void_p]
        self.statfs.restype = ctypes.c_int


_LIBC: _Libc | None = None


def _libc() -> _Libc | None:
    global _LIBC
    if _LIBC is None and sys.platform.startswith("linux"):
        try:
            _LIBC = _Libc()
        except (OSError, AttributeError):
            return None
    return _LIBC


def _parent(path: str) -> str:
    return os.path.dirname(path) or "/"


class Changes:
    """One inotify fd and its watches; not thread-safe (one engine thread uses it)."""

    def __init__(self, libc: _Libc, fd: int) -> None:
        self._libc = libc
        self._fd = fd
        self._wd: dict[str, int] = {}  # folder path -> watch descriptor
        self._mask: dict[str, int] = {}  # folder path -> mask it is watched with
        self._paths: dict[int, set[str]] = {}  # wd -> folder paths (one inode, several names)
        self._local: dict[int, bool] = {}  # st_dev -> on a local filesystem
        self._mounts: int | None = None
        self._injected = b""
        # read but not yet drained (see _pull)
        self._paths_out: set[str] = set()
        self._gone_out: set[str] = set()
        self._listings_out: set[str] = set()
        self._overflow = False
        # folders a watch failed for since the last drain: not tried again until the next one
        self._refused: set[str] = set()
        self._poll: select.poll | None = None
        self._open_mounts()

    @classmethod
    def open(cls) -> Changes | None:
        """A feed, or None where inotify cannot be had (callers then stat every time)."""
        libc = _libc()
        if libc is None:
            return None
        fd = libc.init1(IN_NONBLOCK | IN_CLOEXEC)
        if fd < 0:
            return None
        return cls(libc, fd)

    @property
    def alive(self) -> bool:
        return self._fd >= 0

    # -- watching ---------------------------------------------------------------------------

    def watch(self, folder: str, *, files: bool = True) -> bool:
        """Watch *folder* (its files' changes too when *files*) and its ancestors.

        True when every change under that path from now on will be in a later batch; False
        (the caller observes every time) when a watch could not be added.
        """
        if self._fd < 0:
            return False
        want = _FILES_MASK if files else _TREE_MASK
        have = self._mask.get(folder)
        if have is not None and have & want == want:
            return True
        if folder in self._refused:
            return False
        self._pull()  # may forget watches: look again after it
        if self._fd < 0:
            return False
        have = self._mask.get(folder)
        # ancestors first, from the top: a rename above the folder is then always an event
        chain: list[str] = []
        parent = _parent(folder)
        while parent not in self._mask:
            chain.append(parent)
            if parent == "/":
                break
            parent = _parent(parent)
        for up in reversed(chain):
            if not self._add(up, _TREE_MASK):
                self._refused.add(folder)
                return False
        if self._add(folder, want | (have or 0)):
            return True
        self._refused.add(folder)
        return False

    def _add(self, folder: str, mask: int) -> bool:
        try:
            st = os.stat(folder)
        except OSError:
            return False
        if not self._is_local(st.st_dev, folder):
            return False
        wd = self._libc.add_watch(self._fd, os.fsencode(folder), mask | IN_ONLYDIR)
        if wd < 0:
            return False
        self._wd[folder] = wd
        self._mask[folder] = mask
        self._paths.setdefault(wd, set()).add(folder)
        return True

    def _is_local(self, dev: int, folder: str) -> bool:
        local = self._local.get(dev)
        if local is None:
            buf = ctypes.create_string_buffer(256)
            if self._libc.statfs(os.fsencode(folder), buf) != 0:
                return False
            # f_type is the first field, a C long (__fsword_t) on every Linux ABI
            f_type = ctypes.c_long.from_buffer(buf).value & 0xFFFFFFFF
            local = self._local[dev] = f_type in _LOCAL_FS
        return local

    # -- draining ---------------------------------------------------------------------------

    def drain(self) -> Batch:
        """Every event queued since the previous drain, as a Batch; never blocks."""
        if self._fd < 0 and not self._overflow:
            return Batch()
        self._pull()
        self._refused.clear()
        if self._overflow:
            self._overflow = False
            self._paths_out.clear()
            self._gone_out.clear()
            self._listings_out.clear()
            return Batch(overflow=True)
        batch = Batch(
            frozenset(self._paths_out), frozenset(self._gone_out), frozenset(self._listings_out)
        )
        self._paths_out.clear()
        self._gone_out.clear()
        self._listings_out.clear()
        return batch

    def _pull(self) -> None:
        """Read every queued event now, against the watches as they are now.

        Called before any watch is added too, so an event that happened before a watch existed
        is never read as one about the watch (it would drop a watch that is good).
        """
        if self._fd < 0:
            return
        paths, listings = self._paths_out, self._listings_out
        gone: set[str] = set()
        overflow = self._mounts_moved()
        if self._injected:
            overflow |= self._parse(self._injected, paths, gone, listings)
            self._injected = b""
        while not overflow:
            try:
                data = os.read(self._fd, _READ)
            except BlockingIOError:
                break
            except OSError:
                overflow = True
                break
            if not data:
                break
            overflow |= self._parse(data, paths, gone, listings)
        if overflow:
            self._overflow = True
            self._reset()
        else:
            self._gone_out |= self._forget(gone)

    def _parse(self, data: bytes, paths: set[str], gone: set[str], listings: set[str]) -> bool:
        at = 0
        size = _EVENT.size
        while at + size <= len(data):
            wd, mask, _cookie, n = _EVENT.unpack_from(data, at)
            name = data[at + size : at + size + n].rstrip(b"\0")
            at += size + n
            if mask & IN_Q_OVERFLOW:
                return True
            for folder in self._paths.get(wd, ()):
                if mask & _SELF or not name:  # the folder itself (moved, removed, chmod-ed)
                    gone.add(folder)
                    continue
                path = os.path.join(folder, os.fsdecode(name))
                paths.add(path)
                if mask & _ENTRIES:
                    listings.add(folder)
                if path in self._wd:
                    gone.add(path)  # a watched folder's name now names something else
        return False

    def _forget(self, gone: set[str]) -> set[str]:
        """Drop the watches of *gone* folders and of every watched folder under them."""
        if not gone:
            return set()
        out: set[str] = set()
        prefixes = tuple(g.rstrip("/") + "/" for g in gone)
        for folder in list(self._wd):
            if folder in gone or folder.startswith(prefixes):
                out.add(folder)
                wd = self._wd.pop(folder)
                self._mask.pop(folder, None)
                names = self._paths.get(wd)
                if names is not None:
                    names.discard(folder)
                    if not names:
                        del self._paths[wd]
                        # IN_IGNORED for it will follow and name no folder: ignored
                        self._libc.rm_watch(self._fd, wd)
        return out

    def _reset(self) -> None:
        """Drop every watch by making a new fd: nothing survives an overflow."""
        libc = self._libc
        os.close(self._fd)
        self._wd.clear()
        self._mask.clear()
        self._paths.clear()
        self._fd = libc.init1(IN_NONBLOCK | IN_CLOEXEC)

    # -- mounts -----------------------------------------------------------------------------

    def _open_mounts(self) -> None:
        """/proc/self/mounts polls POLLPRI when a mount appears or goes (proc(5))."""
        try:
            self._mounts = os.open("/proc/self/mounts", os.O_RDONLY | os.O_CLOEXEC)
        except OSError:
            self._mounts = None
            return
        self._poll = select.poll()
        self._poll.register(self._mounts, select.POLLPRI)
        self._read_mounts()

    def _read_mounts(self) -> None:
        assert self._mounts is not None
        os.lseek(self._mounts, 0, os.SEEK_SET)
        while os.read(self._mounts, _READ):
            pass

    def _mounts_moved(self) -> bool:
        if self._poll is None:
            return False
        if not self._poll.poll(0):
            return False
        self._read_mounts()
        return True

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1
        if self._mounts is not None:
            os.close(self._mounts)
            self._mounts = None
            self._poll = None

    def inject(self, data: bytes) -> None:
        """Queue raw inotify event bytes for the next drain, read before the fd (tests)."""
        self._injected += data


def encode_event(wd: int, mask: int, name: str = "") -> bytes:
    """One raw inotify event, as the kernel lays it out (tests)."""
    raw = os.fsencode(name)
    if raw:
        raw += b"\0" * (4 - len(raw) % 4 if len(raw) % 4 else 4)
    return _EVENT.pack(wd, mask, 0, len(raw)) + raw
