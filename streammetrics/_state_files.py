"""The files of a :class:`~streammetrics.serving.StateDirectory`: who writes them, and how.

A process is named by its host, pid and a random token drawn once per process (again after a
``fork``); one lock per file serialises a process's own writes; :func:`write_atomic` writes a file
so that a reader never sees part of it; :func:`read_regular` reads one without blocking on a FIFO.
"""

from __future__ import annotations

import os
import re
import secrets
import socket
import stat
import threading
import time

__all__ = ["file_lock", "host", "process_token", "read_regular", "write_atomic"]

# One token per process, drawn again in a forked child: a forked worker must not write the
# file of its parent (gunicorn forks its workers from a master that may have imported the app).
_token: tuple[int, str] | None = None
_token_lock = threading.Lock()
# Serialises the writes of one process to one file, so that an older snapshot written by one
# thread never replaces a newer one written by another.
_file_locks: dict[str, threading.Lock] = {}


def _after_fork_in_child() -> None:
    # A lock held by another thread at the fork would stay held forever in the child, and the
    # child is another process: new locks, and a new token drawn at its first publish.
    global _token, _token_lock, _file_locks
    _token, _token_lock, _file_locks = None, threading.Lock(), {}


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


def process_token() -> str:
    global _token
    pid = os.getpid()
    with _token_lock:
        if _token is None or _token[0] != pid:
            _token = (pid, secrets.token_hex(6))
        return _token[1]


def host() -> str:
    name = re.sub(r"[^A-Za-z0-9.-]", "-", socket.gethostname()).strip(".") or "host"
    return name[:64]


def file_lock(path: str) -> threading.Lock:
    with _token_lock:
        lock = _file_locks.get(path)
        if lock is None:
            lock = _file_locks[path] = threading.Lock()
        return lock


def _fsync_dir(path: str) -> None:
    # Makes the rename itself durable. Not possible on Windows (no directory handles through
    # os.open) and refused by some network file systems: the rename is atomic either way.
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def write_atomic(folder: str, target: str, blob: bytes) -> None:
    """Write ``blob`` as the file ``target`` in ``folder``, atomically: to a hidden temporary
    file there, flushed and ``fsync``-ed, renamed over ``target``, then the folder ``fsync``-ed.
    A reader sees the previous file or the new one, never part of one."""
    os.makedirs(folder, exist_ok=True)
    tmp = os.path.join(folder, f".{os.path.basename(target)}.{secrets.token_hex(4)}.tmp")
    # Readable by a collector running as another user, as open() would make it.
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0)
    fd = os.open(tmp, flags, 0o666)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(blob)
            f.flush()
            os.fsync(f.fileno())
        _replace(tmp, target)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    _fsync_dir(folder)


def _replace(src: str, dst: str) -> None:
    # On Windows a reader holding dst open makes the rename fail for a moment: retry briefly.
    for attempt in range(50):
        try:
            os.replace(src, dst)
            return
        except PermissionError:
            if os.name != "nt" or attempt == 49:
                raise
            time.sleep(0.01)


def read_regular(path: str) -> bytes | None:
    """The bytes of the file at ``path``; None if it is not a regular file (a FIFO, a device),
    which is opened without waiting for a writer and not read."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0))
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        with os.fdopen(fd, "rb", closefd=False) as f:
            return f.read()
    finally:
        os.close(fd)
