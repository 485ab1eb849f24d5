"""Many worker processes, one answer: each process publishes its state to a shared folder.

A model server usually runs several worker processes (gunicorn, uvicorn, Celery), each with its
own metric. Prometheus can add counters across workers but not AUCs; mergeable states can. A
:class:`StateDirectory` is a folder where every process writes its latest state
(:meth:`~StateDirectory.publish`, or a background thread with
:meth:`~StateDirectory.publish_every`), and where any process reads and merges all of them
(:meth:`~StateDirectory.collect`). Nothing but :meth:`Metric.to_bytes`,
:func:`streammetrics.loads` and :meth:`Metric.merge` is involved, so the merged value is exactly
the value of one metric fed every worker's rows (byte for byte for counting states).

Files
-----
Each process writes one file per ``name`` (default ``"metrics"``)::

    <name>.<host>.<pid>.<token>.state

``host`` is the host name, ``pid`` the process id and ``token`` a random 48-bit value drawn once
per process (again after a ``fork``), so a pid recycled after a reboot, or the same pid on another
host sharing a network folder, never overwrites another process's file. A process that publishes
again replaces its own file. Several metrics may share a folder under different names (a
collector reads only its own name); within one name every file must hold the same class and
configuration, and each process publishes one metric per name (a
:class:`~streammetrics.MetricCollection` carries several as one).

Writes are atomic: the state goes to a hidden temporary file in the same folder
(``.<name>....tmp``), is flushed and ``fsync``-ed, and is renamed over the process's file with
``os.replace``; the folder is then ``fsync``-ed where the platform allows it. A reader therefore
sees either the previous complete state or the new one, never part of a file, without any lock
between processes. Temporary files are never read.

Retention
---------
A file stays after its process exits: that is the point, since the rows it counted were counted.
A worker killed between two publishes loses only the rows of that last interval (stop the
publisher, or let it publish at exit, to lose none). Files are removed only by
:meth:`StateDirectory.prune`: use it when the counters are meant to start afresh (a new model
version, a deployment that should not inherit the last one's rows), or to forget processes that
have not published for longer than their publishing interval, i.e. workers that are gone.
"""

from __future__ import annotations

import atexit
import datetime as _dt
import multiprocessing.util
import os
import re
import stat
import threading
import time
import warnings
from collections.abc import Iterable, Iterator
from typing import Any

import numpy as np

from . import _codec
from ._state_files import file_lock, host, process_token, read_regular, write_atomic
from ._warn import warn
from .base import Metric, loads, metric_spec
from .errors import IncompatibleStateError, InputError, StateDecodeError

__all__ = ["Publisher", "StateDirectory", "StateFileWarning"]

_NAME = re.compile(r"[A-Za-z0-9_-]+")
_SUFFIX = ".state"


class StateFileWarning(UserWarning):
    """A file in a :class:`StateDirectory` was skipped by :meth:`StateDirectory.collect`."""


def _seconds(value: Any, name: str) -> float:
    if isinstance(value, _dt.timedelta):
        value = value.total_seconds()
    if isinstance(value, (bool, np.bool_)) or not isinstance(
        value, (int, float, np.integer, np.floating)
    ):
        raise InputError(f"{name} must be a number of seconds or a timedelta, got {value!r}")
    seconds = float(value)
    if not seconds >= 0 or seconds == float("inf"):
        raise InputError(f"{name} must be finite and >= 0, got {value!r}")
    return seconds


class StateDirectory:
    """A folder where worker processes publish their metric states, and where they are merged.

    Parameters
    ----------
    path : str or os.PathLike
        The folder, shared by the workers of one host (or of several hosts, on a network file
        system that makes ``rename`` atomic, as NFS and SMB do). Created by the first
        :meth:`publish`.
    name : str, default "metrics"
        Which states of the folder this object writes and reads (letters, digits, ``_`` and
        ``-``): several metrics of different classes can share one folder under different names.

    Notes
    -----
    :meth:`publish` costs one :meth:`~streammetrics.Metric.to_bytes`, one file write and two
    ``fsync`` calls. :meth:`collect` reads and decodes every file of ``name`` and merges them:
    O(files x state size), and nothing is kept between calls. No lock is taken across processes:
    the atomic rename is what keeps readers and writers apart. Files of dead processes are kept
    and counted until :meth:`prune` removes them (see the module docstring).

    Examples
    --------
    >>> import tempfile
    >>> import streammetrics as sm
    >>> from streammetrics.serving import StateDirectory
    >>> d = StateDirectory(tempfile.mkdtemp())
    >>> d.collect() is None
    True
    >>> path = d.publish(sm.Accuracy().update([0, 1, 1], [0, 1, 0]))
    >>> merged = d.collect()
    >>> merged.count, round(merged.compute(), 4)
    (3, 0.6667)
    """

    def __init__(self, path: str | os.PathLike[str], *, name: str = "metrics") -> None:
        if not isinstance(name, str) or not _NAME.fullmatch(name):
            raise InputError(f"name must be letters, digits, '_' or '-' (no dots), got {name!r}")
        if not isinstance(path, (str, os.PathLike)):
            raise InputError(f"path: expected a folder name (str or os.PathLike), got {path!r}")
        self.path = os.fspath(path)
        self.name = name

    def __repr__(self) -> str:
        return f"StateDirectory({self.path!r}, name={self.name!r})"

    @property
    def own_file(self) -> str:
        """The file this process publishes to (it need not exist yet)."""
        stem = f"{self.name}.{host()}.{os.getpid()}.{process_token()}"
        return os.path.join(self.path, stem + _SUFFIX)

    # -- writing -----------------------------------------------------------------------------

    def publish(self, metric: Metric) -> str:
        """Write ``metric``'s current state as this process's file, atomically; return its path.

        Replaces what this process published before under this name. Errors of the file system
        (``OSError``) are raised to the caller; nothing partial is ever visible to a reader.
        """
        if not isinstance(metric, Metric):
            raise InputError(f"metric must be a streammetrics Metric, got {type(metric).__name__}")
        target = self.own_file
        with file_lock(target):
            write_atomic(self.path, target, metric.to_bytes())
        return target

    def publish_every(self, metric: Metric, seconds: float) -> Publisher:
        """Publish ``metric`` now, then every ``seconds`` from a daemon thread, and at exit.

        Returns a :class:`Publisher`; its ``stop()`` ends the thread and publishes once more.
        Interpreter exit (``atexit``) does the same if ``stop()`` was not called, and so does
        the normal end of a ``multiprocessing`` worker process (whose exit skips ``atexit``);
        a terminated worker does neither (a ``Pool``'s ``with`` block terminates its workers:
        ``close()`` and ``join()`` it first). Other pools whose workers end with ``os._exit``
        (Celery's billiard) need ``stop()`` in their worker-shutdown hook. In a forking
        server, call this in each worker after the fork (gunicorn's ``post_fork`` hook): threads
        do not survive ``fork``.
        """
        interval = _seconds(seconds, "seconds")
        if interval <= 0:
            raise InputError(f"seconds must be > 0, got {seconds!r}")
        self.publish(metric)  # the first write raises here, at the call, if the folder is unusable
        return Publisher(self, metric, interval)

    # -- reading -----------------------------------------------------------------------------

    def files(self) -> list[str]:
        """The state files of this ``name`` in the folder, sorted (temporary files excluded)."""
        try:
            entries = os.listdir(self.path)
        except FileNotFoundError:
            return []
        prefix = self.name + "."
        return [
            os.path.join(self.path, e)
            for e in sorted(entries)
            if e.startswith(prefix) and e.endswith(_SUFFIX)
        ]

    def states(self) -> Iterator[tuple[str, Metric]]:
        """Each valid state file as ``(path, metric)``; invalid files are warned about and skipped.

        A file that is not a valid state (truncated, corrupt, written by something else) is
        reported with a :class:`StateFileWarning` naming it. A file that disappears while being
        listed (pruned) is skipped silently.
        """
        for path, _, metric in self._states():
            yield path, metric

    def _states(self, warn: bool = True) -> Iterator[tuple[str, bytes, Metric]]:
        """:meth:`states`, each with the bytes it was read from (``warn``: about the files
        skipped)."""
        for path in self.files():
            try:
                blob = read_regular(path)
            except FileNotFoundError:
                if warn and os.path.islink(path):  # (gone while listed: silently)
                    _skip(path, "is a symbolic link to nothing")
                continue
            except OSError as exc:
                if warn:
                    _skip(path, f"cannot be read ({exc})")
                continue
            if blob is None:
                if warn:  # (a FIFO of that name blocked collect() for good in 0.8.10)
                    _skip(path, "is not a regular file")
                continue
            try:
                metric = loads(blob)
            except StateDecodeError as exc:
                if warn:
                    _skip(path, f"is not a valid streammetrics state ({exc})")
                continue
            yield path, blob, metric

    def collect(self, like: Metric | None = None) -> Metric | None:
        """Every published state of this ``name``, merged into a new metric; ``None`` if none.

        Parameters
        ----------
        like : Metric, optional
            The class and configuration the states must have (its own state is not merged).
            Without it, any class and configuration.

        The files whose states merge together (same class and configuration, and states that
        accept each other: labels of one kind, say) form sets, grown greedily with the states
        taken most rows first (then by their bytes); a set with rows wins over sets without,
        then the set of the most files (files without rows count for every set of their
        configuration; then the most rows; then a fixed order), so one stray file cannot
        displace the workers' states,
        whatever its name. (Greedy: where label sets conflict in a chain, a larger set may
        exist than the one found.) A file that is not a valid state, or that is left
        out of the winning set, is skipped with a :class:`StateFileWarning` naming the file; it
        never makes the call fail. The result does not depend on the order of the files
        (exactly for counting states, to rounding for float sums).
        """
        if like is not None and not isinstance(like, Metric):
            raise InputError(f"like must be a streammetrics Metric, got {type(like).__name__}")
        sets, empty = _grouped((path, m) for path, _, m in self._adapted(like, warn=True))
        if len({k for k, _, _ in sets}) < len(sets):
            # States that do not all merge: sets grow greedily, each state joining the first
            # set that takes it, so the order matters. Read again, in an order of the states
            # alone (most rows first, then their bytes), not of the files' random names: the
            # listed order decided the sets when label sets conflict in a chain (binary labels
            # {1, 2}, then {0}, then {0, 1}). Only this rare case holds every state at once.
            found = sorted(self._adapted(like, warn=False), key=lambda f: (-f[2].count, f[1]))
            sets, empty = _grouped((path, m) for path, _, m in found)
        if not sets and not empty:
            return None
        # Files without rows (workers that have not counted yet) join any set of their
        # configuration, so they count for it; a configuration that only such files hold
        # competes as one set of them, behind every set with rows. (0.8.8 counted only files
        # with rows: one stray file of an older deployment outvoted the workers, one of which
        # had rows, while the others had just started.)
        idle: dict[bytes, set[str]] = {}
        for k, _, p in empty:
            idle.setdefault(k, set()).add(p)
        rowless = len(sets)  # sets from here on hold files without rows only
        for k in idle:
            if not any(s[0] == k for s in sets):
                sets.append(next((k, m, [p]) for kk, m, p in empty if kk == k))

        def files(s: tuple[bytes, Metric, list[str]]) -> int:
            return len(idle.get(s[0], set()).union(s[2]))

        # A set with rows first: two stale files without rows must not outvote a live worker.
        best = max(
            sets,
            key=lambda s: (s[1].count > 0, files(s), s[1].count, -len(s[0]), s[0], min(s[2])),
        )
        key, kept, kept_paths = best
        for other_key, metric, paths in sets[:rowless]:  # (files without rows: below)
            if paths is kept_paths:
                continue
            why = (
                "holds a state that does not merge with theirs"
                if other_key == key
                else f"holds {_described(metric)}, while they hold {_described(kept)}"
            )
            for path in paths:
                _skip(path, f"{why}; {len(kept_paths)} file(s) were collected")
        for other_key, metric, path in empty:
            if path not in kept_paths and not (other_key == key and _joined(metric, path, best)):
                _skip(
                    path,
                    f"holds {_described(metric)} (no rows), while the {len(kept_paths)} "
                    f"file(s) collected hold {_described(kept)}",
                )
        return kept

    def _adapted(self, like: Metric | None, warn: bool) -> Iterator[tuple[str, bytes, Metric]]:
        """:meth:`_states`, each as ``like``'s class and configuration when given (a state that
        does not match it is skipped, with a warning when ``warn``)."""
        for path, blob, metric in self._states(warn):
            if like is not None:
                base = like.copy().reset()
                try:
                    base.merge(metric)  # checks class and configuration, changes nothing if not
                except IncompatibleStateError as exc:
                    if warn:
                        _skip(path, f"does not match like={like!r} ({exc})")
                    continue
                metric = base
            yield path, blob, metric

    def prune(self, older_than: float | _dt.timedelta) -> list[str]:
        """Delete the state files not written for ``older_than`` (seconds or a timedelta).

        Also deletes temporary files of that age and at least a minute old (left by a process
        killed while writing; a younger one is being written, and deleting it would fail that
        publish).
        Returns the deleted paths. ``prune(0)`` empties the folder of this ``name``: run it
        before the workers start when their counts should begin afresh. With
        ``older_than`` well above the publishing interval (say ten times), only files of
        processes that stopped publishing are removed, and their rows stop being counted.
        Ages are file modification times, so hosts sharing a network folder should keep their
        clocks in step. Entries of a state file's name that are not files (a folder, a FIFO)
        are left, with a :class:`StateFileWarning` naming each; a symbolic link is removed as
        a file is (by its target's age; its target stays).
        """
        age = _seconds(older_than, "older_than")
        now = time.time()
        cutoff = now - age
        try:
            entries = sorted(os.listdir(self.path))
        except FileNotFoundError:
            return []
        removed = []
        prefix, hidden = self.name + ".", "." + self.name + "."
        for entry in entries:
            state = entry.startswith(prefix) and entry.endswith(_SUFFIX)
            temporary = entry.startswith(hidden) and entry.endswith(".tmp")
            if not (state or temporary):
                continue
            path = os.path.join(self.path, entry)
            try:
                info = os.lstat(path)
                written = info.st_mtime
                if stat.S_ISLNK(info.st_mode):
                    # A link is removed as a file is (its target stays), by its target's age;
                    # a link to nothing, to itself or out of reach, by its own.
                    try:
                        written = os.stat(path).st_mtime
                    except OSError:
                        pass
                elif not stat.S_ISREG(info.st_mode):
                    # (a folder of that name made 0.8.24's prune raise IsADirectoryError, which
                    # collect() skips with a warning)
                    _skip(path, "is not a regular file: prune leaves it")
                    continue
                if state and age == 0:
                    doomed = True
                else:
                    limit = cutoff if state else min(cutoff, now - _TEMPORARY_GRACE)
                    doomed = written < limit
                if doomed:
                    os.unlink(path)
                    removed.append(path)
            except FileNotFoundError:
                continue
        return removed


#: ``prune`` leaves temporary files younger than this (seconds): a publish writes its file in
#: milliseconds, so only one whose writer was killed gets this old.
_TEMPORARY_GRACE = 60.0


def _described(metric: Metric) -> str:
    """A metric's class and configuration, for messages."""
    return f"{type(metric).__name__} {metric_spec(metric)['config']!r}"


def _joined(metric: Metric, path: str, found: tuple[bytes, Metric, list[str]]) -> bool:
    """Merge ``metric`` into the set ``found`` if their states merge (and note its file)."""
    try:
        found[1].merge(metric)
    except IncompatibleStateError:
        return False
    found[2].append(path)
    return True


def _grouped(
    states: Iterable[tuple[str, Metric]],
) -> tuple[list[tuple[bytes, Metric, list[str]]], list[tuple[bytes, Metric, str]]]:
    """The states with rows in sets that merge, as ``(configuration, merged, files)``, grown
    greedily in the order given; and the states without rows, as ``(configuration, metric,
    file)`` (they merge with any set of their configuration)."""
    sets: list[tuple[bytes, Metric, list[str]]] = []
    empty: list[tuple[bytes, Metric, str]] = []
    for path, metric in states:
        key = _codec.encode(metric_spec(metric))
        if not metric.count:
            empty.append((key, metric, path))
        elif not any(_joined(metric, path, s) for s in sets if s[0] == key):
            sets.append((key, metric, [path]))
    return sets, empty


def _skip(path: str, why: str) -> None:
    # (at the user's call to collect() or states(), through their generators: 0.8.15's fixed
    # stacklevel pointed into serving.py, so a filter on the user's module never matched)
    warn(f"streammetrics: skipped {path}: {why}", StateFileWarning)


class Publisher:
    """Handle of :meth:`StateDirectory.publish_every`: a daemon thread that publishes a metric.

    ``stop()`` ends the thread and publishes once more (it may be called any number of times;
    only the first does anything). If it is never called, the same happens at interpreter exit
    or at the end of a ``multiprocessing`` worker process.
    A failed periodic write (a full disk, say) does not end the thread: it is reported with a
    :class:`StateFileWarning`, kept in :attr:`last_error`, and the next interval tries again.
    """

    def __init__(self, directory: StateDirectory, metric: Metric, seconds: float) -> None:
        self.directory = directory
        self.metric = metric
        self.seconds = seconds
        self.publishes = 1  # publish_every wrote once before starting the thread
        self.last_error: BaseException | None = None
        self._stopping = threading.Event()
        self._stopped = False
        self._pid = os.getpid()
        self._lock = threading.Lock()
        self._thread = threading.Thread(
            target=self._run, name=f"streammetrics-publish-{directory.name}", daemon=True
        )
        atexit.register(self.stop)
        # A multiprocessing worker ends with os._exit, which skips atexit; multiprocessing runs
        # its own finalizers first (for every start method: fork, forkserver, spawn).
        self._finalizer = multiprocessing.util.Finalize(None, self.stop, exitpriority=10)
        self._thread.start()

    @property
    def running(self) -> bool:
        """Whether the publishing thread is alive."""
        return self._thread.is_alive()

    def _run(self) -> None:
        while not self._stopping.wait(self.seconds):
            self._publish()

    def _publish(self) -> None:
        try:
            self.directory.publish(self.metric)
        except Exception as exc:
            self.last_error = exc
            warnings.warn(
                f"streammetrics: publishing to {self.directory.own_file} failed: {exc!r}",
                StateFileWarning,
                stacklevel=2,
            )
        else:
            self.publishes += 1

    def stop(self, timeout: float = 10.0) -> None:
        """Stop the thread, then publish the final state (once; later calls do nothing)."""
        with self._lock:
            if self._stopped:
                return
            self._stopped = True
        atexit.unregister(self.stop)
        self._finalizer.cancel()
        if os.getpid() != self._pid:
            # A forked child inherits this handle (and the parent's rows): publishing them
            # under the child's name would count them twice.
            return
        self._stopping.set()
        if self._thread is not threading.current_thread():
            self._thread.join(timeout)
        self._publish()

    def __enter__(self) -> Publisher:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
