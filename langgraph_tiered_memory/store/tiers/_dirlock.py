"""An inter-process lock on an embedded Chroma directory, held while stores use it.

An embedded Chroma (`PersistentClient`) keeps its HNSW segments in memory and writes
them back to its directory; two processes writing one directory overwrite each other's
segments and lose vectors. So a store that opens an embedded Chroma takes an exclusive
lock on `tiered-memory.lock` in the directory (`flock` on POSIX, `msvcrt.locking` on
Windows, without waiting) and keeps it until it is closed. The operating system drops
the lock when the process dies, so a crash never leaves the directory locked.

Within one process the lock is shared: every store opened on the directory takes a
reference, and the lock is released when the last one is closed. A forked child does
not inherit the references (it closes its copy of the lock file's descriptor), so it
must take the lock itself and fails while its parent holds it.
"""

from __future__ import annotations

import os
import shlex
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from langgraph_tiered_memory.errors import ChromaDirectoryInUseError, ConfigurationError

LOCK_FILE = "tiered-memory.lock"
"""Name of the lock file, inside the Chroma directory."""

if sys.platform == "win32":  # pragma: no cover - exercised on Windows only
    import msvcrt

    def _try_lock(fd: int) -> bool:
        try:
            msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)
        except OSError:  # the byte is locked by another process
            return False
        return True

else:
    import fcntl

    def _try_lock(fd: int) -> bool:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except (BlockingIOError, PermissionError):  # EWOULDBLOCK / EAGAIN, or EACCES
            return False
        return True


@dataclass
class _Hold:
    """This process's lock on one directory."""

    fd: int
    count: int


_holds: dict[tuple[int, int], _Hold] = {}
"""Locks held by this process, by (device, inode) of the directory."""
_guard = threading.Lock()


def _forget_inherited_locks() -> None:
    """In a forked child: close the inherited lock files, leaving the parent's locks alone.

    Closing a descriptor the parent also holds does not unlock it (the lock belongs to
    the open file, shared by both); it only stops the child from keeping it alive.
    """
    global _guard
    for hold in _holds.values():
        os.close(hold.fd)
    _holds.clear()
    _guard = threading.Lock()  # a thread of the parent may have held it at the fork


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_inherited_locks)


class DirectoryLock:
    """One store's reference to this process's lock on a directory."""

    def __init__(self, path: str, key: tuple[int, int]) -> None:
        self.path = path
        """The locked directory."""
        self._key = key
        self._pid = os.getpid()
        self._held = True

    @property
    def held(self) -> bool:
        """Whether this reference has not been released yet."""
        return self._held

    def release(self) -> None:
        """Drop this reference; the last one in the process unlocks the directory.

        Calling it again, or in a forked child, does nothing.
        """
        with _guard:
            if not self._held or self._pid != os.getpid():
                return
            self._held = False
            hold = _holds.get(self._key)
            if hold is None:
                return
            hold.count -= 1
            if hold.count == 0:
                del _holds[self._key]
                os.close(hold.fd)  # closing the only descriptor releases the lock

    def __repr__(self) -> str:
        return f"DirectoryLock({self.path!r}, held={self._held})"


def lock_directory(path: str) -> DirectoryLock:
    """Lock the directory `path` against other processes, without waiting.

    Args:
        path: An existing directory (an embedded Chroma's persist directory).

    Returns:
        A reference to the lock; call `release()` when the directory is no longer used.

    Raises:
        ChromaDirectoryInUseError: Another process holds the lock.
        ConfigurationError: The lock file cannot be created or locked.
    """
    path = os.path.abspath(path)
    lock_path = os.path.join(path, LOCK_FILE)
    with _guard:
        st = os.stat(path)
        key = (st.st_dev, st.st_ino)
        hold = _holds.get(key)
        if hold is not None:
            hold.count += 1
            return DirectoryLock(path, key)
        try:
            fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as e:
            raise ConfigurationError(
                f"Cannot create the lock file {lock_path!r}: {e}. Pass chroma_path= a writable"
                " directory, or pass chroma_client=."
            ) from e
        try:
            locked = _try_lock(fd)
        except OSError as e:
            os.close(fd)
            raise ConfigurationError(
                f"Cannot lock {lock_path!r}: {e}. The file system of the Chroma directory does"
                " not support file locks: use a local directory, or serve Chroma with"
                f" `chroma run --path {shlex.quote(path)}` and pass"
                " chroma_client=chromadb.HttpClient(...)."
            ) from e
        if not locked:
            holder = _holder(fd)
            os.close(fd)
            raise ChromaDirectoryInUseError(
                f"The Chroma directory {path!r} is in use by another process{holder}. An"
                " embedded Chroma directory serves one process at a time (several processes"
                " writing it lose vectors). To share it, serve it with"
                f" `chroma run --path {shlex.quote(path)}` and pass"
                " chroma_client=chromadb.HttpClient(host=..., port=...) and redis_url=... to"
                " every store; or close the store in the other"
                " process first, or use the store from one process."
            )
        try:
            _write_pid(fd)
        except BaseException:
            os.close(fd)  # unlocks
            raise
        _holds[key] = _Hold(fd, 1)
        return DirectoryLock(path, key)


@contextmanager
def unused_directory(path: str) -> Iterator[None]:
    """Hold `path`'s lock for a block, writing nothing: for reading a copy of the store.

    A directory without a lock file was never opened by a store (nothing to wait for).

    Raises:
        ChromaDirectoryInUseError: A store in another process has the directory open.
    """
    lock_path = os.path.join(os.path.abspath(path), LOCK_FILE)
    try:
        fd = os.open(lock_path, os.O_RDONLY)
    except FileNotFoundError:
        yield
        return
    try:
        if not _try_lock(fd):
            raise ChromaDirectoryInUseError(
                f"The Chroma directory {path!r} is in use by another process{_holder(fd)}:"
                " its files may be half-written while it runs. Close the store in that"
                " process first, or read it through the server that serves it."
            )
        yield
    finally:
        os.close(fd)  # unlocks


def _write_pid(fd: int) -> None:
    """Record the holder's process id in the lock file, for the error other processes see."""
    if sys.platform == "win32":  # pragma: no cover - the locked byte cannot be read there
        return
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)


def _holder(fd: int) -> str:
    """' (pid N)' from the lock file, or '' when it names no process."""
    if sys.platform == "win32":  # pragma: no cover
        return ""
    text = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
    return f" (pid {text})" if text.isdigit() else ""
