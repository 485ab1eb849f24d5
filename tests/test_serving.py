"""StateDirectory: atomic publishing, real worker processes, bad files, publishers, pruning."""

from __future__ import annotations

import datetime
import io
import json
import multiprocessing as mp
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
import warnings
from pathlib import Path
from typing import Any
from wsgiref.util import setup_testing_defaults

import numpy as np
import pytest

import streammetrics as sm
from streammetrics.errors import InputError
from streammetrics.serving import StateDirectory, StateFileWarning

ROOT = Path(__file__).resolve().parents[1]
N_ROWS = 3000
# Rows per worker: worker 0 exits early, 1 updates one sample at a time, 2 in batches of 32.
SPLITS = [(0, 300), (300, 1700), (1700, N_ROWS)]


def stream() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(7)
    y = rng.integers(0, 2, N_ROWS)
    score = np.clip(0.35 * y + 0.65 * rng.random(N_ROWS), 0.0, 1.0)
    return y, score


def counting_metric() -> sm.MetricCollection:
    # Every member's state is counts, so the merge of the workers is equal byte for byte.
    return sm.MetricCollection(
        auc=sm.ROCAUC(),
        ap=sm.AveragePrecision(),
        exact_auc=sm.ROCAUC(exact=True),
    )


def run_python(code: str, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-c", code, *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def start_python(code: str, *args: str) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen(
        [sys.executable, "-c", code, *args],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


# The worker imports this test module's stream() and counting_metric() so that all three
# processes and the reference agree on the rows and the configuration. Worker 0 feeds its rows
# and exits early (stop() publishes its last state). Workers 1 and 2 publish what they have, then
# hold their last LATE rows until the test releases them. Worker 1's publisher never wakes
# again, so its late rows reach the folder only through the atexit hook; worker 2's thread
# publishes every 10 ms while the rows arrive, and it publishes its late rows itself.
LATE = 100
WORKER = textwrap.dedent(
    """
    import os, sys, time
    sys.path.insert(0, os.path.join(os.environ["PYTHONPATH"], "tests"))
    from test_serving import LATE, SPLITS, counting_metric, stream
    from streammetrics.serving import StateDirectory

    folder, worker, flags = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    y, score = stream()
    lo, hi = SPLITS[worker]
    mid = hi if worker == 0 else hi - LATE
    d = StateDirectory(folder)
    m = counting_metric()
    publisher = d.publish_every(m, seconds=3600.0 if worker == 1 else 0.01)

    def feed(lo, hi):
        if worker == 2:
            for start in range(lo, hi, 32):
                stop = min(start + 32, hi)
                m.update(y[start:stop], score[start:stop])
        else:
            for i in range(lo, hi):
                m.update(int(y[i]), float(score[i]))  # one request, one sample, as scalars

    feed(lo, mid)
    if worker == 0:
        publisher.stop()  # exits early, its final state published
        sys.exit(0)
    d.publish(m)
    open(os.path.join(flags, f"ready{worker}"), "w").close()
    deadline = time.monotonic() + 60
    while not os.path.exists(os.path.join(flags, "release")) and time.monotonic() < deadline:
        time.sleep(0.005)
    feed(mid, hi)
    if worker == 2:
        d.publish(m)
    """
)


def wait_for(paths: list[Path], procs: list[subprocess.Popen[str]], seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while not all(p.exists() for p in paths):
        for proc in procs:
            if proc.poll() is not None:
                raise AssertionError(f"worker exited early: {proc.communicate()[1]}")
        if time.monotonic() > deadline:
            raise AssertionError("workers did not get ready in time")
        time.sleep(0.01)


def test_three_worker_processes_merge_to_the_whole_stream(tmp_path: Path) -> None:
    folder, flags = tmp_path / "states", tmp_path
    procs = [start_python(WORKER, str(folder), str(w), str(flags)) for w in range(3)]
    y, score = stream()
    d = StateDirectory(folder)
    try:
        _, err = procs[0].communicate(timeout=120)
        assert procs[0].returncode == 0, err
        wait_for([flags / "ready1", flags / "ready2"], procs[1:], 120)
        # Worker 0 is gone and its rows stay; the others' late rows are not published yet.
        early = d.collect()
        rows = np.r_[0 : SPLITS[1][1] - LATE, SPLITS[2][0] : N_ROWS - LATE]
        assert early == counting_metric().update(y[rows], score[rows])
        (flags / "release").write_text("go")
        for p in procs[1:]:
            _, err = p.communicate(timeout=120)
            assert p.returncode == 0, err
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.communicate()
    assert len(d.files()) == 3
    assert not [e for e in os.listdir(folder) if e.endswith(".tmp")]
    merged = d.collect()
    whole = counting_metric().update(y, score)
    assert merged is not None and merged.count == N_ROWS
    assert merged.to_bytes() == whole.to_bytes()
    assert merged.compute() == whole.compute()


def test_file_names_are_per_process_and_publish_replaces(tmp_path: Path) -> None:
    d = StateDirectory(tmp_path, name="clicks")
    m = sm.Accuracy()
    first = d.publish(m.update([1, 0], [1, 1]))
    second = d.publish(m.update([1], [1]))
    assert first == second == d.own_file
    parts = os.path.basename(first).split(".")
    name, host, pid, token, suffix = parts[0], ".".join(parts[1:-3]), *parts[-3:]
    assert (name, pid, suffix) == ("clicks", str(os.getpid()), "state")
    assert len(token) == 12 and int(token, 16) >= 0 and host
    assert d.files() == [first]
    assert d.collect() == sm.Accuracy().update([1, 0, 1], [1, 1, 1])
    other = run_python(
        "import sys; from streammetrics.serving import StateDirectory;"
        "print(StateDirectory(sys.argv[1], name='clicks').own_file)",
        str(tmp_path),
        timeout=60,
    )
    assert other.returncode == 0, other.stderr
    assert other.stdout.strip() != first  # another process, another file


def test_publish_is_atomic_for_a_concurrent_reader(tmp_path: Path) -> None:
    d = StateDirectory(tmp_path)
    m = sm.MetricCollection(gauc=sm.GAUC(exact=True), clicks=sm.GAUC(weighting="clicks"))
    rng = np.random.default_rng(3)
    published: set[int] = {0}
    seen: list[int] = []
    errors: list[BaseException] = []
    done = threading.Event()
    d.publish(m)

    def writer() -> None:
        try:
            for _ in range(200):  # the state grows, so every file has another size
                n = int(rng.integers(1, 40))
                m.update(
                    rng.integers(0, 2, n),
                    rng.random(n),
                    rng.integers(0, 50, n).astype(str),
                )
                published.add(m.count)
                d.publish(m)
        except BaseException as exc:
            errors.append(exc)
        finally:
            done.set()

    thread = threading.Thread(target=writer)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # any skipped (partial) file fails the test
        thread.start()
        deadline = time.monotonic() + 120
        while not done.is_set() and time.monotonic() < deadline:
            got = d.collect()
            assert got is not None
            seen.append(got.count)
        thread.join(30)
    assert not thread.is_alive() and not errors
    assert len(seen) > 1 and set(seen) <= published
    assert seen == sorted(seen)  # a reader never goes back to an older state
    assert d.collect() == m
    assert os.listdir(tmp_path) == [os.path.basename(d.own_file)]


def test_several_threads_publishing_never_go_back(tmp_path: Path) -> None:
    # Each publish takes its snapshot under the process's lock for the file, so the file never
    # goes back to an older state, whichever thread writes last.
    d = StateDirectory(tmp_path)
    m = sm.MetricCollection(auc=sm.ROCAUC(), mse=sm.MeanSquaredError())
    rng = np.random.default_rng(5)
    pairs = zip(rng.integers(0, 2, 1200), rng.random(1200), strict=True)
    rows = [(int(a), float(b)) for a, b in pairs]
    seen: list[int] = []
    errors: list[BaseException] = []

    def writer(part: list[tuple[int, float]]) -> None:
        try:
            for i, row in enumerate(part):
                m.update(*row)
                if i % 10 == 0:
                    d.publish(m)
        except BaseException as exc:
            errors.append(exc)

    writers = [threading.Thread(target=writer, args=(rows[k::3],)) for k in range(3)]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for t in writers:
            t.start()
        deadline = time.monotonic() + 120
        while any(t.is_alive() for t in writers) and time.monotonic() < deadline:
            got = d.collect()
            if got is not None:
                seen.append(got.count)
        for t in writers:
            t.join(30)
    assert not errors and not any(t.is_alive() for t in writers)
    assert seen == sorted(seen)
    d.publish(m)
    assert d.collect() == m and m.count == len(rows)


# Publishes a state of a few megabytes over and over, so that a kill lands mid-write.
BIG_WRITER = textwrap.dedent(
    """
    import sys
    import numpy as np
    import streammetrics as sm
    from streammetrics.serving import StateDirectory

    d = StateDirectory(sys.argv[1])
    rng = np.random.default_rng(0)
    m = sm.ROCAUC(exact=True)
    for i in range(100_000):
        m.update(rng.integers(0, 2, 5_000), rng.random(5_000))
        d.publish(m)
        print(m.count, flush=True)
    """
)


@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs SIGKILL")
def test_a_writer_killed_mid_publish_leaves_the_last_complete_state(tmp_path: Path) -> None:
    proc = start_python(BIG_WRITER, str(tmp_path))
    try:
        assert proc.stdout is not None
        counts = [int(proc.stdout.readline()) for _ in range(5)]  # five complete publishes
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:  # kill it while a temporary file is being written
            if any(e.endswith(".tmp") for e in os.listdir(tmp_path)):
                break
        proc.send_signal(signal.SIGKILL)
        proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    d = StateDirectory(tmp_path)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = d.collect()
    assert got is not None and got.count % 5_000 == 0 and got.count >= counts[-1]
    assert len(d.files()) == 1
    leftovers = [e for e in os.listdir(tmp_path) if e.endswith(".tmp")]
    for name in leftovers:
        old = time.time() - 3600
        os.utime(tmp_path / name, (old, old))
    assert sorted(d.prune(older_than=600)) == sorted(str(tmp_path / e) for e in leftovers)
    assert d.collect() == got


def write_as(folder: Path, name: str, blob: bytes) -> Path:
    path = folder / name
    path.write_bytes(blob)
    return path


def test_bad_files_are_skipped_with_a_warning_naming_them(tmp_path: Path) -> None:
    d = StateDirectory(tmp_path)
    good = sm.ConfusionMatrix(labels=[0, 1]).update([0, 1, 1], [0, 1, 0])
    peer = sm.ConfusionMatrix(labels=[0, 1]).update([1, 1], [1, 1])
    write_as(tmp_path, "metrics.a.1.000000000001.state", good.to_bytes())
    write_as(tmp_path, "metrics.z.9.000000000009.state", peer.to_bytes())
    bad = {
        "corrupt": write_as(tmp_path, "metrics.b.2.000000000002.state", b"\x93not msgpack"),
        "truncated": write_as(tmp_path, "metrics.c.3.000000000003.state", good.to_bytes()[:-5]),
        "empty": write_as(tmp_path, "metrics.d.4.000000000004.state", b""),
        "class": write_as(tmp_path, "metrics.e.5.000000000005.state", sm.F1().to_bytes()),
        "config": write_as(
            tmp_path,
            "metrics.f.6.000000000006.state",
            sm.ConfusionMatrix(labels=[0, 1, 2]).update([2], [2]).to_bytes(),
        ),
    }
    # Ignored without a word: temporary files, other names, other files.
    write_as(tmp_path, ".metrics.x.7.000000000007.state.0badf00d.tmp", b"partial")
    write_as(tmp_path, "latency.a.1.000000000001.state", sm.MeanSquaredError().to_bytes())
    write_as(tmp_path, "README.txt", b"states of the model servers")
    with pytest.warns(StateFileWarning) as record:
        merged = d.collect()
    messages = [str(w.message) for w in record]
    assert len(messages) == len(bad)
    for path in bad.values():
        assert sum(str(path) in msg for msg in messages) == 1
    assert any("F1" in msg and str(bad["class"]) in msg for msg in messages)
    assert any("labels" in msg and str(bad["config"]) in msg for msg in messages)
    assert merged == good + peer
    # Each warning names the user's call (0.8.15: a line of serving.py, whatever the caller).
    assert {w.filename for w in record} == {__file__}
    with pytest.warns(StateFileWarning) as record:
        list(d.states())
        d.collect(like=sm.ConfusionMatrix(labels=[0, 1]))
    assert {w.filename for w in record} == {__file__}


def test_like_fixes_the_reference_when_the_first_file_is_foreign(tmp_path: Path) -> None:
    d = StateDirectory(tmp_path)
    write_as(tmp_path, "metrics.a.1.000000000001.state", sm.ROCAUC(exact=True).to_bytes())
    m1 = sm.ROCAUC().update([0, 1, 1], [0.2, 0.9, 0.4])
    m2 = sm.ROCAUC().update([0, 1], [0.5, 0.7])
    write_as(tmp_path, "metrics.b.2.000000000002.state", m1.to_bytes())
    write_as(tmp_path, "metrics.c.3.000000000003.state", m2.to_bytes())
    with pytest.warns(StateFileWarning, match="metrics.a.1.000000000001.state") as record:
        # The configuration of most files wins, not the first file's name.
        assert d.collect() == m1 + m2
    assert len(record) == 1
    like = sm.ROCAUC(exact=True)  # now the exact file is the one to keep
    with pytest.warns(StateFileWarning) as record:
        assert d.collect(like=like) == sm.ROCAUC(exact=True)
    skipped = sorted(str(w.message).split()[2] for w in record)
    assert skipped == [
        str(tmp_path / f"metrics.{x}.state:") for x in ("b.2.000000000002", "c.3.000000000003")
    ]
    like = sm.ROCAUC().update([1], [1.0])  # its own rows are not counted
    with pytest.warns(StateFileWarning, match="metrics.a.1.000000000001.state"):
        merged = d.collect(like=like)
    assert merged == m1 + m2
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert d.collect(like=sm.F1()) is None
    assert like.count == 1


def test_a_stray_file_of_another_metric_does_not_displace_the_workers(tmp_path: Path) -> None:
    """Without ``like=``, a single stray state sorting first by name decided the class, and
    the workers' states were the ones skipped; the class of most files (then most rows) wins,
    whatever the names."""
    d = StateDirectory(tmp_path)
    worker = sm.ROCAUC().update([0, 1] * 50, [0.2, 0.8] * 50)
    write_as(tmp_path, "metrics.w.1.000000000001.state", worker.to_bytes())
    stray = write_as(tmp_path, "metrics.aaa.1.x.state", sm.Accuracy().update([1], [1]).to_bytes())
    with pytest.warns(StateFileWarning, match="holds Accuracy") as record:
        assert d.collect() == worker  # one file each: the most rows win
    assert len(record) == 1 and str(stray) in str(record[0].message)
    peer = sm.Accuracy().update([0] * 500, [0] * 500)
    write_as(tmp_path, "metrics.zzz.2.y.state", peer.to_bytes())
    with pytest.warns(StateFileWarning, match="metrics.w.1.000000000001.state"):
        assert d.collect().count == 501  # two Accuracy files against one ROCAUC


def test_a_stray_state_of_the_same_configuration_does_not_displace_the_workers(
    tmp_path: Path,
) -> None:
    """A stray file of the workers' class and configuration whose state does not merge with
    theirs (string labels beside integer ones) became the base when its name sorted first, and
    the workers' files were skipped, with ``like=`` too (0.8.3). The states that merge together
    form sets; the set of the most files wins, whatever the names."""
    d = StateDirectory(tmp_path)
    worker = sm.Accuracy().update([1, 0, 1], [1, 0, 0])
    for pid in (101, 102, 103):
        write_as(tmp_path, f"metrics.web.{pid}.aaaa.state", worker.to_bytes())
    stray_blob = sm.Accuracy().update(["1"], ["1"]).to_bytes()
    empty_blob = sm.Accuracy().to_bytes()
    want = worker + worker + worker
    for name in ("metrics.api.1.b.state", "metrics.zz.1.b.state"):
        stray = write_as(tmp_path, name, stray_blob)
        write_as(tmp_path, "metrics.a.0.e.state", empty_blob)  # no rows: merges with any set
        for like in (None, sm.Accuracy()):
            with pytest.warns(StateFileWarning, match="does not merge") as record:
                assert d.collect(like) == want
            assert [str(stray) in str(r.message) for r in record] == [True]
        stray.unlink()
    assert d.collect() == want


def test_empty_or_missing_folder_collects_none(tmp_path: Path) -> None:
    assert StateDirectory(tmp_path / "not-yet").collect() is None
    assert StateDirectory(tmp_path / "not-yet").files() == []
    assert StateDirectory(tmp_path).collect() is None
    with pytest.raises(InputError, match="name"):
        StateDirectory(tmp_path, name="a.b")
    with pytest.raises(InputError, match="metric"):
        StateDirectory(tmp_path).publish([1, 2])  # type: ignore[arg-type]


def test_publish_every_stop_publishes_once_more(tmp_path: Path) -> None:
    d = StateDirectory(tmp_path)
    m = sm.MeanSquaredError()
    publisher = d.publish_every(m, seconds=0.02)
    assert d.collect() == m  # published at once
    m.update([1.0, 2.0], [1.5, 2.5])
    deadline = time.monotonic() + 30
    while publisher.publishes < 3 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert publisher.running and publisher.publishes >= 3
    m.update([3.0], [0.0])
    publisher.stop()
    assert not publisher.running
    assert d.collect() == m  # the final state, however the intervals fell
    count = publisher.publishes
    publisher.stop()  # idempotent: nothing more
    assert publisher.publishes == count
    with pytest.raises(InputError, match="seconds"):
        d.publish_every(m, seconds=0)


def test_a_failing_periodic_write_warns_and_keeps_trying(tmp_path: Path) -> None:
    folder = tmp_path / "states"
    d = StateDirectory(folder)
    m = sm.Accuracy().update([1], [1])
    publisher = d.publish_every(m, seconds=0.02)
    try:
        os.unlink(d.own_file)
        folder.rmdir()
        folder.write_text("a file where the folder was")
        with warnings.catch_warnings(record=True) as record:
            warnings.simplefilter("always")
            deadline = time.monotonic() + 30
            while publisher.last_error is None and time.monotonic() < deadline:
                time.sleep(0.01)
        assert isinstance(publisher.last_error, OSError)
        assert any(issubclass(w.category, StateFileWarning) for w in record)
        assert publisher.running
        folder.unlink()
        published = publisher.publishes
        deadline = time.monotonic() + 30
        while publisher.publishes == published and time.monotonic() < deadline:
            time.sleep(0.01)
        assert d.collect() == m  # back on its feet once the folder can be written again
    finally:
        publisher.stop()


PUBLISH_AT_EXIT = textwrap.dedent(
    """
    import sys, time
    import streammetrics as sm
    from streammetrics.serving import StateDirectory

    d = StateDirectory(sys.argv[1])
    m = sm.LogLoss()
    publisher = d.publish_every(m, seconds=0.02)
    m.update([0, 1, 1], [0.1, 0.8, 0.6])
    deadline = time.monotonic() + 30
    while publisher.publishes < 2 and time.monotonic() < deadline:
        time.sleep(0.005)
    m.update([1, 0], [0.3, 0.4])  # never published by the thread: only the atexit hook sees it
    publisher.seconds = 3600.0
    print(publisher.publishes)
    """
)


# After stop(), the exit hook is gone: rows added later are not published at exit.
STOPPED_BEFORE_EXIT = textwrap.dedent(
    """
    import sys
    import streammetrics as sm
    from streammetrics.serving import StateDirectory

    m = sm.Accuracy()
    publisher = StateDirectory(sys.argv[1]).publish_every(m, seconds=3600)
    m.update([1, 0], [1, 1])
    publisher.stop()
    m.update([1, 1, 1], [1, 1, 1])
    """
)


def test_publish_every_publishes_at_interpreter_exit(tmp_path: Path) -> None:
    done = run_python(PUBLISH_AT_EXIT, str(tmp_path / "a"))
    assert done.returncode == 0, done.stderr
    assert int(done.stdout) >= 2
    got = StateDirectory(tmp_path / "a").collect()
    assert got == sm.LogLoss().update([0, 1, 1, 1, 0], [0.1, 0.8, 0.6, 0.3, 0.4])
    done = run_python(STOPPED_BEFORE_EXIT, str(tmp_path / "b"))
    assert done.returncode == 0, done.stderr
    assert StateDirectory(tmp_path / "b").collect() == sm.Accuracy().update([1, 0], [1, 1])


WORKERS_THAT_RETURN = textwrap.dedent(
    """
    import multiprocessing as mp, sys
    import streammetrics as sm
    from streammetrics.serving import StateDirectory

    def worker(folder, leave):
        m = sm.Accuracy()
        StateDirectory(folder).publish_every(m, seconds=3600)
        m.update([1, 0, 1, 1], [1, 1, 1, 0])
        if leave:
            sys.exit(0)

    if __name__ == "__main__":
        ctx = mp.get_context(sys.argv[2])
        procs = [ctx.Process(target=worker, args=(sys.argv[1], i % 2)) for i in range(4)]
        for p in procs:
            p.start()
        for p in procs:
            p.join(60)
        print(sum(p.exitcode == 0 for p in procs))
    """
)


@pytest.mark.parametrize("method", ["fork", "forkserver", "spawn"])
def test_multiprocessing_workers_publish_their_last_rows_when_they_end(
    tmp_path: Path, method: str
) -> None:
    # Workers of fork and forkserver end with os._exit, which skips atexit: every row since
    # the first publish was lost (collect() counted 0 of 16 rows).
    if method not in mp.get_all_start_methods():
        pytest.skip(f"no {method} start method here")
    script = tmp_path / "workers.py"
    script.write_text(WORKERS_THAT_RETURN)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, str(script), str(tmp_path / "states"), method],
        env=env, capture_output=True, text=True, timeout=180, check=False,
    )  # fmt: skip
    assert done.returncode == 0 and done.stdout.split() == ["4"], done.stderr
    got = StateDirectory(tmp_path / "states").collect()
    assert got == sm.Accuracy().update([1, 0, 1, 1] * 4, [1, 1, 1, 0] * 4)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_a_forked_child_does_not_publish_its_parents_rows(tmp_path: Path) -> None:
    d = StateDirectory(tmp_path)
    m = sm.Accuracy().update([1, 1], [1, 0])
    publisher = d.publish_every(m, seconds=3600)
    parent_file = d.own_file
    try:
        pid = os.fork()
        if pid == 0:  # the child: stop (also what its atexit would do) must not publish
            try:
                publisher.stop()
                same_file = d.own_file == parent_file  # the child draws its own token
                os._exit(len(os.listdir(tmp_path)) + 10 * same_file)
            finally:
                os._exit(99)
        deadline = time.monotonic() + 60
        done, status = os.waitpid(pid, os.WNOHANG)
        while done == 0 and time.monotonic() < deadline:
            time.sleep(0.01)
            done, status = os.waitpid(pid, os.WNOHANG)
        if done == 0:
            os.kill(pid, 9)
            os.waitpid(pid, 0)
            raise AssertionError("the forked child did not exit")
        assert os.waitstatus_to_exitcode(status) == 1
    finally:
        publisher.stop()
    assert d.files() == [d.own_file]


def test_prune_removes_old_files_only(tmp_path: Path) -> None:
    d = StateDirectory(tmp_path)
    own = d.publish(sm.Accuracy().update([1], [1]))
    old = write_as(tmp_path, "metrics.a.1.000000000001.state", sm.Accuracy().to_bytes())
    stale_tmp = write_as(tmp_path, ".metrics.a.1.000000000001.state.00000000.tmp", b"x")
    other = write_as(tmp_path, "latency.a.1.000000000001.state", b"x")
    hour_ago = time.time() - 3600
    for path in (old, stale_tmp, other):
        os.utime(path, (hour_ago, hour_ago))
    assert sorted(d.prune(older_than=600)) == sorted([str(old), str(stale_tmp)])
    assert sorted(os.listdir(tmp_path)) == sorted([os.path.basename(own), other.name])
    assert d.prune(datetime.timedelta(minutes=10)) == []
    assert d.prune(np.float32(600.0)) == []  # any real numpy scalar (0.8.18 refused float32)
    # A temporary file younger than a minute is being written: prune(0) left it (0.8.6 deleted
    # it, and the publish writing it failed with FileNotFoundError).
    fresh_tmp = write_as(tmp_path, ".metrics.a.1.000000000001.state.00000001.tmp", b"x")
    assert d.prune(0) == [own]
    assert d.collect() is None and other.exists() and fresh_tmp.exists()
    minute_ago = time.time() - 61
    os.utime(fresh_tmp, (minute_ago, minute_ago))
    assert d.prune(0) == [str(fresh_tmp)]
    with pytest.raises(InputError, match="older_than"):
        d.prune(-1)
    assert StateDirectory(tmp_path / "missing").prune(0) == []


def docs_block(marker: str) -> str:
    text = (ROOT / "docs" / "serving.md").read_text()
    blocks = [b.split("```", 1)[0] for b in text.split("```python\n")[1:]]
    (block,) = [b for b in blocks if marker in b]
    return block


def call(app: Any, method: str, path: str, body: bytes = b"") -> tuple[str, dict[str, Any]]:
    environ: dict[str, Any] = {
        "REQUEST_METHOD": method,
        "PATH_INFO": path,
        "CONTENT_LENGTH": str(len(body)),
        "wsgi.input": io.BytesIO(body),
    }
    setup_testing_defaults(environ)
    status: list[str] = []
    chunks = app(environ, lambda s, headers: status.append(s))
    return status[0], json.loads(b"".join(chunks))


def test_the_wsgi_example_of_the_docs_from_many_threads() -> None:
    namespace: dict[str, Any] = {"__name__": "docs_serving_app"}
    exec(compile(docs_block("make_server"), "docs/serving.md", "exec"), namespace)
    app = namespace["app"]
    y, score = stream()
    n_threads, per_thread = 4, 150

    failures: list[str] = []

    def client(k: int) -> None:
        for i in range(k, n_threads * per_thread, n_threads):
            row = {"label": int(y[i]), "score": float(score[i])}
            status, answer = call(app, "POST", "/feedback", json.dumps(row).encode())
            if status != "200 OK":
                failures.append(f"{status}: {answer}")

    status, empty = call(app, "GET", "/quality")
    assert status == "200 OK" and empty["rows"] == 0 and empty["last_hour_auc"] is None
    threads = [threading.Thread(target=client, args=(k,)) for k in range(n_threads)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not any(t.is_alive() for t in threads) and not failures
    n = n_threads * per_thread
    # Two rows in one request: the collection took them and the window refused them (its one
    # timestamp), so the all-time count and the last hour disagreed.
    two_rows = b'{"label": [1, 0], "score": [0.3, 0.2]}'
    for bad in (
        b'{"label": 1, "score": 1.5}',
        b'{"label": 3, "score": 0.5}',
        b"{}",
        b"[1]",
        two_rows,
    ):
        status, answer = call(app, "POST", "/feedback", bad)
        assert status == "400 Bad Request" and answer["error"]
    status, got = call(app, "GET", "/quality")
    assert status == "200 OK" and got["rows"] == n and got["last_hour_dropped"] == 0
    whole = sm.MetricCollection(auc=sm.ROCAUC(), logloss=sm.LogLoss(), brier=sm.BrierScore())
    expected = whole.update(y[:n], score[:n]).compute()
    assert got["all_time"]["auc"] == expected["auc"] == got["last_hour_auc"]
    for name in ("logloss", "brier"):
        assert got["all_time"][name] == pytest.approx(expected[name], rel=1e-12)
    assert call(app, "GET", "/nowhere")[0] == "404 Not Found"


def test_collect_depends_on_the_states_not_on_the_order_of_their_files(tmp_path: Path) -> None:
    # Binary F1 states of labels 1, 2, 0, 0, 1: files joined sets in listed order, so the
    # names decided whether 3 files (30 rows) or 4 (40 rows) were collected.
    labels = [1, 2, 0, 0, 1]
    states = [sm.F1().update([v] * 10, [v] * 10) for v in labels]
    got = []
    for order in (labels, sorted(labels), sorted(labels, reverse=True)):
        folder = tmp_path / "".join(map(str, order))
        folder.mkdir()
        taken = [0] * len(states)
        for rank, v in enumerate(order):  # file names sort in this order
            i = next(j for j, lab in enumerate(labels) if lab == v and not taken[j])
            taken[i] = 1
            (folder / f"metrics.host.1.{rank:04d}.state").write_bytes(states[i].to_bytes())
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", StateFileWarning)
            got.append(StateDirectory(folder).collect())
    assert got[0] == got[1] == got[2]
    assert got[0].count == 40


def test_workers_without_rows_yet_outvote_one_stray_file(tmp_path: Path) -> None:
    """Files without rows count for their configuration's set: 0.8.8 chose among the files
    with rows only, so a stray state of an older deployment (many rows) outvoted the workers
    while only one of them had rows (found by a review, 0.8.9)."""
    d = StateDirectory(tmp_path)

    def new() -> sm.Metric:
        return sm.MetricCollection(auc=sm.ROCAUC(), ll=sm.LogLoss())

    def write(name: str, metric: sm.Metric) -> None:
        (tmp_path / f"metrics.{name}.state").write_bytes(metric.to_bytes())

    stray = sm.MetricCollection(auc=sm.ROCAUC()).update([0, 1] * 500, [0.3, 0.6] * 500)
    write("host.1.aaaa", stray)
    worker = new().update([0, 1, 1], [0.2, 0.7, 0.9])
    write("host.2.bbbb", worker)
    for i in range(3):
        write(f"host.{3 + i}.cccc", new())
    with pytest.warns(StateFileWarning, match="host.1.aaaa"):
        got = d.collect()
    assert got is not None and got.to_bytes() == worker.to_bytes()
    # Two leftover files without rows (an old configuration) do not outvote a live worker.
    for i in range(2):
        write(f"host.{7 + i}.eeee", sm.MetricCollection(auc=sm.ROCAUC()))
    (tmp_path / "metrics.host.1.aaaa.state").unlink()
    for i in range(3):
        (tmp_path / f"metrics.host.{3 + i}.cccc.state").unlink()
    with pytest.warns(StateFileWarning, match="eeee"):
        got = d.collect()
    assert got is not None and got.to_bytes() == worker.to_bytes()


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="FIFOs are a POSIX thing")
def test_collect_skips_a_fifo_named_like_a_state(tmp_path: Path) -> None:
    # 0.8.10 opened it and waited for a writer for good (and every scrape with it).
    os.mkfifo(tmp_path / "metrics.stray.state")
    folder = StateDirectory(tmp_path)
    folder.publish(sm.Accuracy().update([1, 0], [1, 1]))
    result: list = []
    worker = threading.Thread(target=lambda: result.append(folder.collect()), daemon=True)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        worker.start()
        worker.join(timeout=30)
    assert not worker.is_alive(), "collect() blocked on the FIFO"
    assert result[0].count == 2
    assert any(
        issubclass(w.category, StateFileWarning) and "not a regular file" in str(w.message)
        for w in caught
    )


def test_prune_and_collect_name_what_is_not_a_state_file(tmp_path: Path) -> None:
    """A folder, a FIFO and links (to nothing, to itself, to the folder) named like state
    files: ``collect()`` skips each with a warning naming it, and ``prune(0)`` leaves the
    folder and the FIFO (warned about) and removes the links (0.8.24's prune raised
    IsADirectoryError, and this change's first cut OSError on the loop; the link to nothing
    was skipped without a word: reviews found them)."""
    folder = StateDirectory(tmp_path)
    folder.publish(sm.Accuracy().update([1, 0], [1, 1]))
    (tmp_path / "metrics.old.1.x.state").mkdir()
    os.mkfifo(tmp_path / "metrics.pipe.state")
    os.symlink(tmp_path / "nowhere", tmp_path / "metrics.gone.2.y.state")
    os.symlink(tmp_path / "metrics.loop.3.z.state", tmp_path / "metrics.loop.3.z.state")
    os.symlink(tmp_path / "metrics.old.1.x.state", tmp_path / "metrics.tofolder.4.w.state")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert folder.collect().count == 2
    said = [str(w.message) for w in caught if issubclass(w.category, StateFileWarning)]
    assert any("metrics.old.1.x.state: is not a regular file" in m for m in said)
    assert any("metrics.pipe.state: is not a regular file" in m for m in said)
    assert any("metrics.gone.2.y.state: is a symbolic link to nothing" in m for m in said)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        removed = folder.prune(0)
    # the links (to nothing, to itself, to the folder: the folder stays) and the published file
    names = sorted(os.path.basename(p) for p in removed)
    links = ["metrics.gone.2.y.state", "metrics.loop.3.z.state", "metrics.tofolder.4.w.state"]
    assert names[:3] == links and len(names) == 4
    left = sorted(os.listdir(tmp_path))
    assert left == ["metrics.old.1.x.state", "metrics.pipe.state"]
    said = [str(w.message) for w in caught if issubclass(w.category, StateFileWarning)]
    assert sum("prune leaves it" in m for m in said) == 2


def test_numpy_integer_seconds_are_seconds(tmp_path) -> None:
    # np.float64 passed (a float) and np.int64 was refused (an engines review, 0.8.16).
    d = StateDirectory(str(tmp_path))
    assert d.prune(np.int64(3600)) == [] and d.prune(np.float64(3600.0)) == []
    with pytest.raises(sm.InputError, match="older_than"):
        d.prune(np.bool_(True))
