"""``streammetrics._heap``: engine tasks lift glibc's malloc thresholds only where the
environment set them (as Dask's nanny does), put the environment's values back afterwards,
and fault in far fewer pages while they run."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import threading

import pytest

from streammetrics import _heap


class _Recorder:
    def __init__(self) -> None:
        self.calls: list[tuple] = []

    def mallopt(self, param: int, value: int) -> int:
        self.calls.append(("mallopt", param, value))
        return 1

    def malloc_trim(self, pad: int) -> int:
        self.calls.append(("malloc_trim", pad))
        return 1


@pytest.fixture
def libc(monkeypatch):
    recorder = _Recorder()
    monkeypatch.setattr(_heap, "_libc", recorder)
    monkeypatch.delenv("MALLOC_TRIM_THRESHOLD_", raising=False)
    monkeypatch.delenv("MALLOC_MMAP_THRESHOLD_", raising=False)
    return recorder


def test_nothing_changes_where_the_environment_set_nothing(libc) -> None:
    with _heap.roomy_heap():
        pass
    assert libc.calls == []


def test_lifted_then_put_back_to_the_environments_values(libc, monkeypatch) -> None:
    monkeypatch.setenv("MALLOC_TRIM_THRESHOLD_", "65536")
    with _heap.roomy_heap():
        assert libc.calls == [
            ("mallopt", _heap._M_MMAP_THRESHOLD, _heap.ROOMY),
            ("mallopt", _heap._M_TRIM_THRESHOLD, _heap.ROOMY),
        ]
    assert libc.calls[2:] == [
        ("mallopt", _heap._M_MMAP_THRESHOLD, 128 * 1024),  # glibc's default: not in the env
        ("mallopt", _heap._M_TRIM_THRESHOLD, 65536),
        ("malloc_trim", 0),
    ]
    libc.calls.clear()
    monkeypatch.setenv("MALLOC_MMAP_THRESHOLD_", "262144")
    with _heap.roomy_heap():
        pass
    assert ("mallopt", _heap._M_MMAP_THRESHOLD, 262144) in libc.calls


def test_overlapping_tasks_share_one_roomy_period(libc, monkeypatch) -> None:
    monkeypatch.setenv("MALLOC_TRIM_THRESHOLD_", "65536")
    inside, release = threading.Barrier(2), threading.Event()

    @_heap.with_roomy_heap
    def task() -> str:
        inside.wait(10)
        release.wait(10)
        return "done"

    other = threading.Thread(target=task)
    other.start()
    with _heap.roomy_heap():
        inside.wait(10)  # both inside now
        release.set()
        other.join(10)
        lifts = [c for c in libc.calls if c[0] == "mallopt" and c[2] == _heap.ROOMY]
        assert len(lifts) == 2  # one period: two thresholds lifted once
        assert ("malloc_trim", 0) not in libc.calls  # the first to leave restores nothing
    assert libc.calls[-1] == ("malloc_trim", 0)
    assert task.__name__ == "task"


def test_an_error_in_the_task_still_restores(libc, monkeypatch) -> None:
    monkeypatch.setenv("MALLOC_TRIM_THRESHOLD_", "65536")

    @_heap.with_roomy_heap
    def failing() -> None:
        raise KeyError("boom")

    with pytest.raises(KeyError):
        failing()
    assert libc.calls[-1] == ("malloc_trim", 0)
    assert _heap._inside == 0


_FAULTS = textwrap.dedent(
    """
    import resource
    import numpy as np
    import streammetrics as sm
    from streammetrics import _heap

    rng = np.random.default_rng(0)
    n = 500_000
    y, s, g = rng.integers(0, 2, n), rng.random(n), rng.integers(0, 1_000_000, n)

    def build():
        return sm.GAUC().update(y, s, groups=g).to_bytes()

    def faults(fn):
        before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        out = fn()
        return resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before, out

    build()
    tight, a = faults(build)
    with _heap.roomy_heap():
        build()
        roomy, b = faults(build)
    assert a == b
    print(tight, roomy)
    """
)


@pytest.mark.skipif(_heap._glibc() is None, reason="glibc only")
def test_a_task_faults_in_far_fewer_pages_under_a_tight_environment() -> None:
    out = subprocess.run(
        [sys.executable, "-c", _FAULTS],
        env={**_env(), "MALLOC_TRIM_THRESHOLD_": "65536"},
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    tight, roomy = map(int, out.stdout.split())
    assert roomy * 3 < tight, (tight, roomy)


def _env() -> dict[str, str]:
    import os

    return {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_")}
