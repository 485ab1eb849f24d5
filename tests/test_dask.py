"""The Dask adapter for real: a LocalCluster of two worker processes, many partitions."""

from __future__ import annotations

import numpy as np
import pytest

dd = pytest.importorskip("dask.dataframe")
distributed = pytest.importorskip("distributed")
pd = pytest.importorskip("pandas")

import streammetrics as sm  # noqa: E402
from streammetrics.dask import aggregate  # noqa: E402


@pytest.fixture(scope="module")
def client():
    with (
        distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
        ) as cluster,
        distributed.Client(cluster) as c,
    ):
        yield c


@pytest.fixture(scope="module")
def frame():
    rng = np.random.default_rng(0)
    n = 200_000
    return pd.DataFrame(
        {
            "y": rng.integers(0, 3, n),
            "p": rng.integers(0, 3, n),
            "w": rng.integers(0, 5, n).astype(float),
            "user": np.char.add("u", rng.integers(0, 50, n).astype(str)),
        }
    )


def test_whole_table_equals_single_process(client, frame) -> None:
    ddf = dd.from_pandas(frame, npartitions=37)
    got = aggregate(ddf, sm.ConfusionMatrix(), ["y", "p"])
    want = sm.ConfusionMatrix().update(frame["y"], frame["p"])
    assert got.to_bytes() == want.to_bytes()
    weighted = aggregate(
        ddf, sm.F1(average="macro"), {"y_true": "y", "y_pred": "p", "sample_weight": "w"}
    )
    assert weighted == sm.F1(average="macro").update(
        frame["y"], frame["p"], sample_weight=frame["w"]
    )


def test_by_key_equals_per_key_metrics(client, frame) -> None:
    ddf = dd.from_pandas(frame, npartitions=23)
    got = aggregate(ddf, sm.Accuracy(), ["y", "p"], by="user")
    assert sorted(got) == sorted(frame["user"].unique())
    for user, rows in frame.groupby("user"):
        assert got[user] == sm.Accuracy().update(rows["y"], rows["p"])


def test_keyed_metrics_reduce_by_key_and_join(client, frame) -> None:
    # GAUC's groups and NDCG's queries, split into shares of the keys, merged per share and
    # joined: the result is the single process's, byte for byte.
    rng = np.random.default_rng(1)
    df = frame.assign(y=(frame["y"] > 0).astype(int), s=rng.random(len(frame)))
    ddf = dd.from_pandas(df, npartitions=19)
    want = sm.GAUC().update(df["y"], df["s"], df["user"]).to_bytes()
    assert aggregate(ddf, sm.GAUC(), ["y", "s", "user"]).to_bytes() == want
    assert aggregate(ddf, sm.GAUC(), ["y", "s", "user"], key_parts=0).to_bytes() == want
    assert aggregate(ddf, sm.GAUC(), ["y", "s", "user"], key_parts=3).to_bytes() == want
    cols = {"query_ids": "user", "relevance": "p", "scores": "s"}
    ndcg = aggregate(ddf, sm.ranking.NDCG(k=10), cols, key_parts=4)
    assert ndcg == sm.ranking.NDCG(k=10).update(df["user"], df["p"].astype(float), df["s"])


def test_keyed_rows_move_to_their_share(client, frame) -> None:
    """``key_parts``: rows move to the share of their key and each share's state is built from
    its rows. More shares than keys (empty shares), weights, a key refused by the metric."""
    rng = np.random.default_rng(2)
    df = frame.head(5_000).assign(y=(frame["y"].head(5_000) > 0).astype(int))
    df = df.assign(s=rng.random(len(df)), g=rng.integers(0, 3, len(df)))
    ddf = dd.from_pandas(df, npartitions=7)
    want = sm.GAUC(exact=True).update(df["y"], df["s"], df["g"])
    got = aggregate(ddf, sm.GAUC(exact=True), ["y", "s", "g"], key_parts=16)
    assert got.to_bytes() == want.to_bytes()
    cols = {"y_true": "y", "y_score": "s", "groups": "user", "sample_weight": "w"}
    weighted = aggregate(ddf, sm.GAUC(), cols, key_parts=2)
    one = sm.GAUC().update(df["y"], df["s"], df["user"], sample_weight=df["w"])
    assert weighted.compute() == pytest.approx(one.compute(), rel=1e-12)
    bad = dd.from_pandas(df.assign(g=df["g"] + 0.5), npartitions=3)
    with pytest.raises(sm.InputError, match="groups: labels must be whole numbers"):
        aggregate(bad, sm.GAUC(), ["y", "s", "g"], key_parts=2)


def test_keyed_rows_of_large_unsigned_keys(client) -> None:
    # 0.8.7's first cut narrowed one partition's small uint64 ids to int8 and joined them with
    # another's large ones: numpy promoted both to float64, and 2**60 + 1 and + 2 became one.
    g = np.array([1, 1, 2, 2, 2**60 + 1, 2**60 + 1, 2**60 + 2, 2**60 + 2], dtype=np.uint64)
    df = pd.DataFrame({"y": [0, 1] * 4, "s": [0.1, 0.9, 0.2, 0.8, 0.9, 0.1, 0.3, 0.7], "g": g})
    want = sm.GAUC(exact=True).update(df["y"], df["s"], df["g"]).to_bytes()
    ddf = dd.from_pandas(df, npartitions=2)
    for parts in (None, 1, 3):
        got = aggregate(ddf, sm.GAUC(exact=True), ["y", "s", "g"], key_parts=parts)
        assert got.to_bytes() == want


def test_a_failed_share_leaves_no_state_held(client, frame) -> None:
    # 0.8.7's first cut kept the other shares' futures (and their states in the workers) for
    # the client's lifetime after one share's update failed.
    import gc

    bad = frame.head(4_000).assign(s=0.5, y=(frame["y"].head(4_000) > 0).astype(int))
    bad.loc[3_900, "y"] = 3
    ddf = dd.from_pandas(bad, npartitions=6)
    with pytest.raises(sm.InputError, match="y_true"):
        aggregate(ddf, sm.GAUC(), ["y", "s", "user"], key_parts=8)
    gc.collect()
    assert not [k for k in client.futures if "share_state" in str(k)]


def test_keyed_path_follows_the_configured_scheduler(client, frame) -> None:
    # With a client alive, dask.config.set(scheduler="synchronous") ran the keyed path on the
    # cluster all the same (0.8.7's first cut looked for the default client only).
    import dask

    df = frame.head(2_000).assign(y=(frame["y"].head(2_000) > 0).astype(int))
    df = df.assign(s=np.linspace(0, 1, len(df)))
    want = sm.GAUC().update(df["y"], df["s"], df["user"]).to_bytes()
    with dask.config.set(scheduler="synchronous"):
        from streammetrics import dask as smd

        assert smd._client() is None
        got = aggregate(dd.from_pandas(df, npartitions=3), sm.GAUC(), ["y", "s", "user"])
    assert got.to_bytes() == want
    assert smd._client() is client
    # Two shares of the keys per worker thread (0.8.16): 2 workers of 1 thread here.
    assert smd._shares() == 4
    with dask.config.set(scheduler="synchronous"):
        from dask.system import CPU_COUNT

        assert smd._shares() == min(2 * CPU_COUNT, 64)


def test_integer_column_names(client) -> None:
    # pandas and Dask frames may name their columns 0, 1, ...: 0.8.7 turned every name into a
    # string and then reported the columns missing, and ``by=0`` (falsy) was not grouped by.
    rng = np.random.default_rng(4)
    df = pd.DataFrame({0: rng.integers(0, 2, 300), 1: rng.random(300), 2: rng.integers(0, 5, 300)})
    ddf = dd.from_pandas(df, npartitions=3)
    got = aggregate(ddf, sm.ROCAUC(exact=True), [0, 1])
    assert got.to_bytes() == sm.ROCAUC(exact=True).update(df[0], df[1]).to_bytes()
    per_key = aggregate(ddf, sm.ROCAUC(exact=True), {"y_true": 0, "y_score": 1}, by=2)
    assert sorted(per_key) == sorted(df[2].unique())
    for key, rows in df.groupby(2):
        assert per_key[key] == sm.ROCAUC(exact=True).update(rows[0], rows[1])
    want = sm.GAUC(exact=True).update(df[0], df[1], df[2]).to_bytes()
    for parts in (None, 0):
        keyed = aggregate(ddf, sm.GAUC(exact=True), [0, 1, np.int64(2)], key_parts=parts)
        assert keyed.to_bytes() == want
    # Columns named "0", "1" (a CSV header), asked for as 0, 1: read as those strings.
    named = dd.from_pandas(df.rename(columns=str), npartitions=3)
    assert aggregate(named, sm.ROCAUC(exact=True), [0, 1]).to_bytes() == got.to_bytes()
    with pytest.raises(sm.InputError, match="columns: expected column names"):
        aggregate(ddf, sm.ROCAUC(), [0, 1.5])
    with pytest.raises(sm.InputError, match="by: expected one column name"):
        aggregate(ddf, sm.ROCAUC(), [0, 1], by=True)


def test_key_column_of_keyed_metrics() -> None:
    from streammetrics import _engine_columns

    assert _engine_columns.key_column(sm.GAUC(), ["y", "s", "user"], {}) == "user"
    assert _engine_columns.key_column(sm.GAUC(), [], {"groups": "u", "y_true": "y"}) == "u"
    assert _engine_columns.key_column(sm.ranking.MRR(), ["q", "r", "s"], {}) == "q"
    assert _engine_columns.key_column(sm.ROCAUC(), ["y", "s"], {}) is None


def test_bad_arguments(frame) -> None:
    ddf = dd.from_pandas(frame.head(10), npartitions=2)
    with pytest.raises(sm.InputError, match="nope"):
        aggregate(ddf, sm.Accuracy(), ["y", "nope"])
    with pytest.raises(sm.InputError, match="columns"):
        aggregate(ddf, sm.Accuracy(), "y")
    with pytest.raises(sm.InputError, match="key_parts"):
        aggregate(ddf, sm.GAUC(), ["y", "p", "user"], key_parts=-1)


def test_by_keys_missing_dates_and_nullable_integers(client) -> None:
    """A missing ``by`` key (nan, None) names no key: refused with an ``InputError`` naming
    ``by`` (nan keyed one metric per partition, None raised a pandas TypeError). Dates come
    back as pandas Timestamps, nullable integers as ints: pandas' groupby keys."""
    df = pd.DataFrame(
        {
            "y": [0, 1] * 8,
            "p": [0, 1, 1, 1] * 4,
            "f": [1.0, np.nan] * 8,
            "s": pd.Series(["a", None] * 8, dtype=object),
            "t": pd.to_datetime(["2024-01-01", "2024-01-02"] * 8).astype("datetime64[ns]"),
            "i": pd.Series([1, 2] * 8, dtype="Int64"),
        }
    )
    ddf = dd.from_pandas(df, npartitions=4)
    for column in ("f", "s"):
        with pytest.raises(sm.InputError, match=f"by: the column '{column}' has a missing"):
            aggregate(ddf, sm.Accuracy(), ["y", "p"], by=column)
    for column in ("t", "i"):
        got = aggregate(ddf, sm.Accuracy(), ["y", "p"], by=column)
        want = {k: sm.Accuracy().update(g.y, g.p) for k, g in df.groupby(column)}
        assert list(got) == list(want)
        assert all(type(k) is (pd.Timestamp if column == "t" else int) for k in got)
        assert all(got[k] == want[k] for k in want)


def test_bootstrap_with_ids_and_small_partitions(client) -> None:
    # Columns by keyword carry the ids: the split-invariant bootstrap, byte for byte; and a
    # resampled-by-rows bootstrap over partitions of two sentences (whose replicates often draw
    # no row) travels as bytes.
    from streammetrics.text import BLEU

    rng = np.random.default_rng(3)
    df = pd.DataFrame({"y": rng.integers(0, 2, 500), "s": rng.random(500), "i": np.arange(500)})
    ddf = dd.from_pandas(df, npartitions=9)
    cols = {"y_true": "y", "y_score": "s", "ids": "i"}
    got = aggregate(ddf, sm.Bootstrap(sm.ROCAUC(), replicates=50), cols)
    want = sm.Bootstrap(sm.ROCAUC(), replicates=50).update(df["y"], df["s"], ids=df["i"])
    assert got.to_bytes() == want.to_bytes()
    text = pd.DataFrame({"h": [f"the cat sat {i}" for i in range(20)], "r": ["the cat sat"] * 20})
    bleu = aggregate(
        dd.from_pandas(text, npartitions=10), sm.Bootstrap(BLEU(), replicates=50), ["h", "r"]
    )
    assert bleu.compute() == BLEU().update(text["h"].tolist(), text["r"].tolist()).compute()


def test_by_keys_of_several_kinds_do_not_depend_on_the_partitions() -> None:
    # np.unique sorted each partition's keys: 1 beside "a" in one partition was a TypeError,
    # while partitions of one kind each gave both kinds of key.
    import dask

    df = pd.DataFrame({"y": [0, 1, 1, 0], "k": pd.Series([1, 2, "1", "a"], dtype=object)})
    want = {k: sm.Accuracy().update([y], [y]) for k, y in zip(df["k"], df["y"], strict=True)}
    with dask.config.set({"dataframe.convert-string": False}):
        for parts in (1, 2, 4):
            ddf = dd.from_pandas(df, npartitions=parts, sort=False)
            got = aggregate(ddf, sm.Accuracy(), ["y", "y"], by="k")
            assert got == want and [type(k) for k in got] == [int, int, str, str]
        lists = pd.DataFrame({"y": [0, 1], "k": pd.Series([[1], [2]], dtype=object)})
        with pytest.raises(sm.InputError, match="by: the column 'k' holds list values"):
            aggregate(dd.from_pandas(lists, npartitions=1), sm.Accuracy(), ["y", "y"], by="k")


def test_a_bad_value_is_named_by_its_column(client) -> None:
    # The error named the update's argument (y_score) and a row number within one batch of
    # one partition ("at 50" for the frame's row 250), where the user wrote the column "p".
    local = pd.DataFrame(
        {"label": [0, 1] * 200, "p": np.linspace(0, 1, 400), "user": np.arange(400) % 7}
    )
    local.loc[250, "p"] = np.nan
    ddf = dd.from_pandas(local, npartitions=4)
    for metric, columns, kwargs in [
        (sm.ROCAUC(), ["label", "p"], {}),
        (sm.ROCAUC(), {"y_true": "label", "y_score": "p"}, {"by": "user"}),
        (sm.GAUC(), ["label", "p", "user"], {"key_parts": 2}),
        # A wrapper's update(*columns, ...): the wrapped metric's arguments (0.8.19 named none).
        (sm.Bootstrap(sm.ROCAUC(), replicates=20), ["label", "p"], {}),
    ]:
        with pytest.raises(sm.InputError, match="column 'p', y_score: values must be finite") as e:
            aggregate(ddf, metric, columns, **kwargs)
        rows_are = "one share of the keys" if "key_parts" in kwargs else "one batch of one"
        assert rows_are in str(e.value)


def test_a_wrappers_missing_keyword_column_names_no_positional_column(client) -> None:
    # 0.8.12 matched a wrapper's keyword (by, timestamps: second in update's signature, after
    # *columns) to the second positional column: "column 'p', by: required ...".
    from streammetrics.windows import SlidingWindow

    ddf = dd.from_pandas(pd.DataFrame({"y": [0, 1] * 10, "p": [0, 0] * 10}), npartitions=2)
    for metric, keyword in [
        (sm.Sliced(sm.Accuracy()), "by"),
        (SlidingWindow(sm.Accuracy(), width=10), "timestamps"),
    ]:
        with pytest.raises(sm.InputError, match=f"^{keyword}: "):
            aggregate(ddf, metric, ["y", "p"])


def test_matrix_arguments_from_columns_of_arrays(client, tmp_path) -> None:
    import dask

    # A column whose rows hold arrays (class probabilities, a feature vector, several outputs)
    # feeds a matrix argument; 0.8.11 handed it to update as an object column, refused.
    rng = np.random.default_rng(4)
    n = 3_000
    prob = rng.dirichlet(np.ones(4), size=n)
    X = rng.normal(size=(n, 3))
    t, p = rng.normal(size=(n, 2)), rng.normal(size=(n, 2))
    y = rng.integers(0, 4, n)
    local = pd.DataFrame(
        {"y": y, "prob": list(prob), "X": [list(r) for r in X], "t": list(t), "p": list(p)}
    )
    local["user"] = np.arange(n) % 5
    # dd.from_pandas turns object columns into text unless told not to: the error says so
    with pytest.raises(sm.InputError, match=r"dataframe\.convert-string"):
        aggregate(dd.from_pandas(local, npartitions=2), sm.MulticlassROCAUC(), ["y", "prob"])
    with dask.config.set({"dataframe.convert-string": False}):
        ddf = dd.from_pandas(local, npartitions=7)
    cases = [
        (sm.MulticlassROCAUC(), ["y", "prob"], (y, prob)),
        (sm.TopKAccuracy(k=2), ["y", "prob"], (y, prob)),
        (sm.ClusterGeometry(), ["X", "y"], (X, y)),
        (sm.MeanSquaredError(multioutput="raw_values"), ["t", "p"], (t, p)),
    ]
    for metric, columns, arrays in cases:
        got = aggregate(ddf, metric.copy(), columns)
        want = metric.copy().update(*arrays)
        values, wanted = got.compute(), want.compute()
        if not isinstance(wanted, dict):
            values, wanted = {"value": values}, {"value": wanted}
        for key in set(wanted) - {"exact"}:
            assert np.allclose(values[key], wanted[key], rtol=1e-12), (metric, key)
        assert got.count == n
    per_user = aggregate(ddf, sm.MulticlassROCAUC(), ["y", "prob"], by="user")
    for user in range(5):
        rows = np.arange(n) % 5 == user
        assert (
            per_user[user].to_bytes()
            == sm.MulticlassROCAUC().update(y[rows], prob[rows]).to_bytes()
        )
    # a Parquet file's list column arrives as arrays, whatever the option
    path = tmp_path / "rows.parquet"
    local.to_parquet(path)
    got = aggregate(dd.read_parquet(path), sm.MulticlassROCAUC(), ["y", "prob"])
    assert got.to_bytes() == sm.MulticlassROCAUC().update(y, prob).to_bytes()
    ragged = pd.DataFrame({"y": [0, 1, 2], "prob": [[0.5, 0.5], [0.2, 0.8], [1.0]]})
    with dask.config.set({"dataframe.convert-string": False}):
        ragged_frame = dd.from_pandas(ragged, npartitions=1)
    with pytest.raises(sm.InputError, match="column 'prob': its rows hold arrays of different"):
        aggregate(ragged_frame, sm.MulticlassROCAUC(), ["y", "prob"])


def test_a_pandas_frame_is_named_as_the_wrong_argument() -> None:
    # 0.8.16: AttributeError: 'DataFrame' object has no attribute 'to_delayed' (review).
    with pytest.raises(sm.InputError, match=r"ddf: .*pandas\.DataFrame.*from_pandas"):
        aggregate(pd.DataFrame({"y": [0, 1], "p": [0, 1]}), sm.Accuracy(), ["y", "p"])


def test_columns_that_do_not_fit_update_are_named_on_the_driver(client) -> None:
    # 0.8.16: a TypeError from the workers (too many columns), or a bare "groups: ..." with no
    # column named from the keyed path (an engines review).
    df = dd.from_pandas(
        pd.DataFrame({"y": [0, 1] * 10, "p": [0.1, 0.9] * 10, "g": [1.0, float("nan")] * 10}),
        npartitions=2,
    )
    with pytest.raises(sm.InputError, match="takes at most 3 by position"):
        aggregate(df, sm.ROCAUC(), ["y", "p", "g", "y"])
    with pytest.raises(sm.InputError, match="needs 'groups'"):
        aggregate(df, sm.GAUC(), ["y", "p"])
    with pytest.raises(sm.InputError, match="takes no argument 'bogus'"):
        aggregate(df, sm.ROCAUC(), {"y_true": "y", "bogus": "p"})
    with pytest.raises(sm.InputError, match="column 'g'"):
        aggregate(df, sm.GAUC(), ["y", "p", "g"])
    with pytest.raises(sm.InputError, match="key_parts"):
        aggregate(df, sm.GAUC(), ["y", "p", "g"], key_parts=2**21)


def test_rows_valid_per_partition_but_not_together_are_an_input_error() -> None:
    # Each partition's rows are valid alone; one process refuses them together. 0.8.18 let
    # the merge's IncompatibleStateError out (a review: arrays of 2 and of 3 columns, a third
    # label for binary F1, integer and string labels).
    import dask

    two = pd.DataFrame({"y": [0, 1, 0, 1], "p": [[0.2, 0.8], [0.1, 0.9], [0.7, 0.3], [0.4, 0.6]]})
    three = pd.DataFrame({"y": [0, 1, 2, 1], "p": [[0.2, 0.3, 0.5], [0.1, 0.8, 0.1]] * 2})
    binary = [
        pd.DataFrame({"y": [0, 1, 0, 1], "p": [0, 1, 1, 1]}),
        pd.DataFrame({"y": [1, 2, 2, 1], "p": [1, 2, 1, 1]}),
    ]
    kinds = [
        pd.DataFrame({"y": pd.Series([0, 1], dtype=object), "p": pd.Series([0, 1], dtype=object)}),
        pd.DataFrame(
            {"y": pd.Series(["a", "b"], dtype=object), "p": pd.Series(["a", "a"], dtype=object)}
        ),
    ]
    cases = [
        (sm.MulticlassROCAUC(), [two, three]),
        (sm.F1(), binary),
        (sm.Accuracy(), kinds),
    ]
    with dask.config.set({"scheduler": "threads", "dataframe.convert-string": False}):
        for metric, parts in cases:
            ddf = dd.from_delayed([dask.delayed(p) for p in parts], meta=parts[0].iloc[:0])
            with pytest.raises(sm.InputError, match="columns: the partitions' rows"):
                aggregate(ddf, metric, ["y", "p"])


def test_a_missing_by_column_is_named_as_by(frame) -> None:
    with pytest.raises(sm.InputError, match=r"^by: 'nope' not in the DataFrame"):
        aggregate(dd.from_pandas(frame, npartitions=2), sm.Accuracy(), ["y", "p"], by="nope")
