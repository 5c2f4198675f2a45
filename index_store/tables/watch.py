"""Whether anything changed in a set of folders since they were listed, without a ``stat`` per file.

Linux's inotify reports every change made through a folder to the files in it: a write or
truncation of a file (also in place, keeping its inode and its folder's modification time), a
change of its times (``touch -r``, ``os.utime``), a file created, deleted or renamed in or out.
A ``Watch`` is a set of watched folders; ``changed()`` is True once any such event arrived for one
of them after it was added. When nothing happened, asking costs one ``ioctl`` (``FIONREAD``: no
event queued), cheaper than a ``read`` of the empty queue, which raises: 40-50 us against 85-200
right after DuckDB ran a query, and a query asks twice (the index's folder and the table's).

A ``Watch`` vouches only for changes it can see; anything it cannot see makes it *unusable*, and
the table then checks every file by ``stat`` as before:

- only local file systems whose writes all go through this kernel (ext2/3/4, xfs, btrfs, tmpfs,
  f2fs, zfs): on NFS, SMB, FUSE, 9p, virtiofs, overlay and others, a writer on another machine,
  or on the other side of a virtual machine, sends no event here;
- not where inotify is missing (other systems) or out of watches or queues (a watch that cannot
  be added);
- not after a ``fork`` (parent and child would share one queue, each reading events the other
  needs): in the child every ``Watch`` reports a change.

Events lost are reported as changes: a queue overflow marks every ``Watch`` changed, a folder
deleted, moved or unmounted marks its ``Watch`` changed. Names ``ignore`` says are not the
table's (hidden files, a writer's temporary files) do not count. A folder whose *parent* is
renamed sends nothing, so a table swapped in by renaming a folder above it would go unseen:
``pin`` names the top folder, and ``changed()`` then also looks (one ``stat``) that its path
still leads to the folder watched.

What no folder watch sees (README, "When the table changes under the index"): a file written in
place through another name of it, a hard link in a folder that is not watched (so a file with
more than one link is still checked by ``stat``, see ``tables.plain``), and writes through a
shared memory map after the file was closed.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import os
import struct
import sys
import threading
from collections.abc import Callable

try:
    import fcntl
    import termios

    _FIONREAD: int | None = termios.FIONREAD
except ImportError:  # pragma: no cover - not a POSIX system (no inotify either)
    _FIONREAD = None

__all__ = ["LOCAL_FILE_SYSTEMS", "Watch", "file_system_of", "new_watch"]

# File system types whose every write goes through this kernel's VFS (so inotify sees it).
LOCAL_FILE_SYSTEMS = frozenset(("ext2", "ext3", "ext4", "xfs", "btrfs", "tmpfs", "f2fs", "zfs"))

# <sys/inotify.h>; the same values on every Linux architecture.
IN_MODIFY = 0x00000002
IN_ATTRIB = 0x00000004
IN_CLOSE_WRITE = 0x00000008
IN_MOVED_FROM = 0x00000040
IN_MOVED_TO = 0x00000080
IN_CREATE = 0x00000100
IN_DELETE = 0x00000200
IN_DELETE_SELF = 0x00000400
IN_MOVE_SELF = 0x00000800
IN_UNMOUNT = 0x00002000
IN_Q_OVERFLOW = 0x00004000
IN_IGNORED = 0x00008000
IN_ONLYDIR = 0x01000000
_MASK = (
    IN_MODIFY
    | IN_ATTRIB
    | IN_CLOSE_WRITE
    | IN_MOVED_FROM
    | IN_MOVED_TO
    | IN_CREATE
    | IN_DELETE
    | IN_DELETE_SELF
    | IN_MOVE_SELF
    | IN_ONLYDIR
)
_LOST = IN_DELETE_SELF | IN_MOVE_SELF | IN_UNMOUNT | IN_IGNORED  # the folder itself: watch gone
_EVENT = struct.Struct("iIII")  # wd, mask, cookie, len; then len bytes of NUL-padded name


class Watch:
    """Folders watched since they were added; ``changed()`` once anything happened in one of them."""

    def __init__(self, watcher: _Watcher | None, ignore: Callable[[str], bool]) -> None:
        self._watcher = watcher
        self.ignore = ignore
        self.usable = watcher is not None
        self.dirty = False
        self._pinned: list[tuple[str, int, int]] = []  # (path, st_dev, st_ino)

    def pin(self, path: str) -> None:
        """Say that ``path`` must go on naming the folder it names now (checked by ``changed()``);
        call before adding it."""
        try:
            st = os.stat(path)
        except OSError:
            self.usable = False
            return
        self._pinned.append((path, st.st_dev, st.st_ino))

    def add(self, folder: str, device: int) -> bool:
        """Watch ``folder`` (on device ``device``: its ``st_dev``), before reading it; False (and the
        watch unusable) when it cannot be watched."""
        if self.usable and self._watcher is not None:
            self.usable = self._watcher.add(self, folder, device)
        return self.usable

    def changed(self) -> bool:
        """Whether something happened (or may have) in a watched folder since it was added."""
        watcher = self._watcher
        if not self.usable or watcher is None or watcher.pid != os.getpid():
            return True
        watcher.drain()
        if self.dirty:
            return True
        for path, device, inode in self._pinned:
            try:
                st = os.stat(path)
            except OSError:
                return True
            if (st.st_dev, st.st_ino) != (device, inode):
                self.dirty = True
        return self.dirty

    def close(self) -> None:
        """Stop watching (a folder's watch is removed when no ``Watch`` holds it)."""
        watcher, self._watcher, self.usable = self._watcher, None, False
        if watcher is not None and watcher.pid == os.getpid():
            watcher.release(self)


def new_watch(ignore: Callable[[str], bool] = lambda name: False) -> Watch:
    """An empty ``Watch`` on the process's inotify queue (unusable where there is none)."""
    return Watch(_process_watcher(), ignore)


class _Watcher:
    """The process's one inotify queue (the kernel allows few per user), shared by every ``Watch``."""

    def __init__(self, libc: ctypes.CDLL, fd: int) -> None:
        self.libc = libc
        self.fd = fd
        self.pid = os.getpid()
        # Re-entrant: a ``Watch`` closed by a finalizer (``weakref.finalize``) may run on this
        # thread at any allocation, also while it holds the lock in the middle of a drain. Such a
        # release waits in ``_pending`` until the holder is done with the tables below.
        self.lock = threading.RLock()
        self._busy = False
        self._pending: list[Watch] = []
        self.watches: dict[int, list[Watch]] = {}  # wd -> the Watches holding it
        self.held: dict[int, list[int]] = {}  # id(Watch) -> its wds

    def add(self, watch: Watch, folder: str, device: int) -> bool:
        if file_system_of(device) not in LOCAL_FILE_SYSTEMS:
            return False
        with self.lock:
            if self._busy:  # pragma: no cover - only a finalizer re-enters, and it only releases
                return False
            self._busy = True
            try:
                self._drain()  # an old watch's last events reach its holders before its wd is reused
                wd = self.libc.inotify_add_watch(self.fd, os.fsencode(folder), _MASK)
                if wd < 0:
                    return False  # ENOSPC: out of watches; ENOENT: gone; EACCES ...
                self.watches.setdefault(wd, []).append(watch)
                self.held.setdefault(id(watch), []).append(wd)
                return True
            finally:
                self._done()

    def release(self, watch: Watch) -> None:
        with self.lock:
            if self._busy:  # a finalizer on this thread, inside add/drain/release: after them
                self._pending.append(watch)
                return
            self._busy = True
            try:
                self._release(watch)
            finally:
                self._done()

    def drain(self) -> None:
        with self.lock:
            if self._busy:  # pragma: no cover - a finalizer never drains
                return
            self._busy = True
            try:
                self._drain()
            finally:
                self._done()

    def _done(self) -> None:
        """Leave the tables (lock held): run the releases that came in meanwhile."""
        try:
            while self._pending:
                self._release(self._pending.pop())
        finally:
            self._busy = False

    def _release(self, watch: Watch) -> None:
        for wd in self.held.pop(id(watch), []):
            holders = self.watches.get(wd)
            if holders is None:
                continue  # the folder went away: the kernel removed its watch already
            holders[:] = [w for w in holders if w is not watch]
            if not holders:
                del self.watches[wd]
                self.libc.inotify_rm_watch(self.fd, wd)
        self._drain()  # read the IN_IGNORED of removed watches now, not after a new add

    def _drain(self) -> None:
        while True:
            if not self._queued():
                return
            try:
                buf = os.read(self.fd, 65536)
            except BlockingIOError:
                return
            except OSError as exc:  # pragma: no cover - an unreadable queue: nothing is vouched for
                if exc.errno == errno.EINTR:
                    continue
                self._all_dirty()
                return
            offset = 0
            while offset < len(buf):
                wd, mask, _, size = _EVENT.unpack_from(buf, offset)
                name = buf[offset + _EVENT.size : offset + _EVENT.size + size].rstrip(b"\0")
                offset += _EVENT.size + size
                if mask & IN_Q_OVERFLOW:
                    self._all_dirty()
                    continue
                holders = self.watches.get(wd, ())
                if mask & _LOST:  # the folder itself went away: its holders can vouch for nothing
                    for watch in holders:
                        watch.dirty = True
                    if mask & IN_IGNORED:
                        self.watches.pop(wd, None)
                    continue
                text = os.fsdecode(name)
                for watch in holders:
                    if not text or not watch.ignore(text):
                        watch.dirty = True

    def _queued(self) -> bool:
        """Whether events wait in the queue (True when the kernel cannot say: read and see)."""
        if _FIONREAD is None:
            return True
        try:
            waiting = fcntl.ioctl(self.fd, _FIONREAD, b"\0\0\0\0")
        except OSError:
            return True
        return int.from_bytes(waiting, sys.byteorder, signed=True) != 0

    def _all_dirty(self) -> None:
        for holders in self.watches.values():
            for watch in holders:
                watch.dirty = True


_state: dict[str, _Watcher | None] = {}
_state_lock = threading.Lock()


def _process_watcher() -> _Watcher | None:
    """The process's ``_Watcher``, started on first use; None where inotify is unavailable."""
    with _state_lock:
        if "watcher" in _state:
            watcher = _state["watcher"]
            if watcher is None or watcher.pid == os.getpid():
                return watcher
        _state["watcher"] = _start()
        return _state["watcher"]


def _start() -> _Watcher | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        init = libc.inotify_init1
    except (OSError, AttributeError):
        return None
    libc.inotify_add_watch.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_uint32]
    libc.inotify_rm_watch.argtypes = [ctypes.c_int, ctypes.c_int]
    fd = init(os.O_NONBLOCK | os.O_CLOEXEC)
    if fd < 0:
        return None  # EMFILE: the user's inotify instances are used up
    return _Watcher(libc, fd)


def _after_fork_in_child() -> None:
    # The queue is shared with the parent: leave it to the parent. Watches made before the fork
    # see another pid and report a change; new ones get a queue of their own.
    watcher = _state.pop("watcher", None)
    if watcher is not None:
        with contextlib.suppress(OSError):
            os.close(watcher.fd)


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


# ------------------------------------------------------------------------------- file systems

_mounts: dict[int, str] = {}


def file_system_of(device: int) -> str:
    """The type of the file system mounted from ``device`` (an ``st_dev``), by
    ``/proc/self/mountinfo``; "" when unknown (a btrfs subvolume not mounted itself, say)."""
    found = _mounts.get(device)
    if found is None:
        _mounts.clear()
        _mounts.update(_read_mountinfo())
        found = _mounts.setdefault(device, "")
    return found


def _read_mountinfo() -> dict[int, str]:
    """st_dev -> file system type of every mount ("major:minor" and the type after " - ")."""
    out: dict[int, str] = {}
    try:
        with open("/proc/self/mountinfo", encoding="utf-8", errors="replace") as fh:
            lines = fh.read().splitlines()
    except OSError:
        return out
    for line in lines:
        fields = line.split()
        try:
            major, minor = fields[2].split(":")
            fs_type = fields[fields.index("-") + 1]
        except (IndexError, ValueError):
            continue
        device = os.makedev(int(major), int(minor))
        # Two mounts of one device (bind mounts) have one type; a device seen as two types is unknown.
        out[device] = fs_type if out.get(device, fs_type) == fs_type else ""
    return out
