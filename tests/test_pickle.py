"""Every metric pickles with the standard library's pickle (multiprocessing queues and pools
use it; Dask and Spark use cloudpickle, which also took lambdas). 0.8.2 held its merge rules as
lambdas in every state field: ``pickle.dumps(Accuracy())`` failed."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

from tests.harness import Case, all_cases, row_calls

CASES = all_cases()


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_pickle_round_trip(case: Case) -> None:
    rng = np.random.default_rng(3)
    m = case.make()
    args, kwargs = case.batch(rng, 20)
    m.update(*args, **kwargs)
    if case.rows:  # a few one-row calls, perhaps still buffered when pickled
        for a, k in row_calls(case.batch(rng, 3))[:3]:
            m.update(*a, **k)
    back = pickle.loads(pickle.dumps(m))
    assert back.to_bytes() == m.to_bytes()
    assert back == m
