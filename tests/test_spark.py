"""The Spark adapter for real: a local[2] session, data over many partitions."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import numpy as np
import pytest

pyspark = pytest.importorskip("pyspark")
pd = pytest.importorskip("pandas")
pytest.importorskip("pyarrow")

import streammetrics as sm  # noqa: E402
from streammetrics.spark import aggregate  # noqa: E402


@pytest.fixture(scope="module")
def spark():
    from pyspark.sql import SparkSession

    # Workers run this interpreter and import this checkout of streammetrics.
    root = str(Path(sm.__file__).resolve().parents[1])
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYTHONPATH"] = os.pathsep.join([root, os.environ.get("PYTHONPATH", "")])
    jvm = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
    session = (
        SparkSession.builder.master("local[2]")
        .appName("streammetrics-tests")
        .config("spark.driver.extraJavaOptions", jvm)
        .config("spark.executor.extraJavaOptions", jvm)
        .config("spark.sql.shuffle.partitions", "4")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.execution.arrow.pyspark.enabled", "true")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


@pytest.fixture(scope="module")
def frame():
    rng = np.random.default_rng(0)
    n = 60_000
    return pd.DataFrame(
        {
            "y": rng.integers(0, 3, n),
            "p": rng.integers(0, 3, n),
            "w": rng.integers(0, 5, n).astype(float),
            "user": np.char.add("u", rng.integers(0, 40, n).astype(str)),
        }
    )


# pandas 3 makes PySpark warn about its pandas version; the results must not care.
@pytest.mark.filterwarnings("ignore:PySpark does not yet fully support pandas")
def test_spark_equals_single_process(spark, frame) -> None:
    if True:
        df = spark.createDataFrame(frame).repartition(12)
        got = aggregate(df, sm.ConfusionMatrix(), ["y", "p"])
        weighted = aggregate(
            df, sm.F1(average="weighted"), {"y_true": "y", "y_pred": "p", "sample_weight": "w"}
        )
        per_user = aggregate(df, sm.Accuracy(), ["y", "p"], by="user")
    assert got.to_bytes() == sm.ConfusionMatrix().update(frame["y"], frame["p"]).to_bytes()
    assert weighted == sm.F1(average="weighted").update(
        frame["y"], frame["p"], sample_weight=frame["w"]
    )
    assert sorted(per_user) == sorted(frame["user"].unique())
    for user, rows in frame.groupby("user"):
        assert per_user[user] == sm.Accuracy().update(rows["y"], rows["p"])
    with pytest.raises(sm.InputError, match="nope"):
        aggregate(df, sm.Accuracy(), ["y", "nope"])


@pytest.mark.filterwarnings("ignore:PySpark does not yet fully support pandas")
def test_keyed_metrics_reduce_by_key_and_join(spark, frame) -> None:
    rng = np.random.default_rng(2)
    local = frame.assign(y=(frame["y"] > 0).astype(int), s=rng.random(len(frame)))
    df = spark.createDataFrame(local).repartition(6)
    got = aggregate(df, sm.GAUC(max_exact=8), ["y", "s", "user"])
    want = sm.GAUC(max_exact=8).update(local["y"], local["s"], local["user"])
    assert got.to_bytes() == want.to_bytes()
    one_reducer = aggregate(df, sm.GAUC(max_exact=8), ["y", "s", "user"], key_parts=0)
    assert one_reducer.to_bytes() == want.to_bytes()
    cols = {"query_ids": "user", "relevance": "p", "scores": "s"}
    ndcg = aggregate(df, sm.ranking.NDCG(), cols)
    assert ndcg == sm.ranking.NDCG().update(local["user"], local["p"].astype(float), local["s"])


@pytest.mark.filterwarnings("ignore:PySpark does not yet fully support pandas")
def test_an_empty_dataframe_gives_an_empty_metric(spark) -> None:
    empty = spark.createDataFrame(pd.DataFrame({"y": [1], "s": [0.5], "user": ["u"]})).limit(0)
    assert aggregate(empty, sm.ROCAUC(), ["y", "s"]).count == 0
    assert aggregate(empty, sm.GAUC(), ["y", "s", "user"]).count == 0
    assert aggregate(empty, sm.GAUC(), ["y", "s", "user"], key_parts=0).count == 0


def test_states_lost_on_the_way_to_the_driver_raise() -> None:
    """PySpark can hand the driver fewer rows than were sent, without raising (a JVM out of
    memory while serving them: seen at 16M rows and 1M users with key_parts=0). Missing
    states must raise, never give a value from part of the data."""
    from streammetrics.spark import _check_lost

    class Frame:
        def __init__(self, empty: bool) -> None:
            self.empty = empty

        def isEmpty(self) -> bool:  # PySpark's name
            return self.empty

    _check_lost(Frame(empty=True), "no state")  # nothing was there to lose
    with pytest.raises(RuntimeError, match="received 3 of the 8 shares"):
        _check_lost(Frame(empty=False), "3 of the 8 shares of the keys")


@pytest.mark.filterwarnings("ignore:PySpark does not yet fully support pandas")
def test_timestamp_keys_and_a_missing_key(spark) -> None:
    """Timestamp ``by`` keys come back as datetimes (they failed in Arrow as nanosecond
    integers); a null key is refused with the workers' ``InputError`` naming ``by``, raised
    as that error on the driver (not PySpark's ``PythonException``)."""
    import datetime

    pdf = pd.DataFrame(
        {
            "y": [0, 1, 1, 0],
            "p": [0, 1, 0, 0],
            "s": ["a", None, "a", "b"],
            "t": pd.to_datetime(["2024-01-01", "2024-01-01", "2024-01-02", "2024-01-02"]),
        }
    )
    df = spark.createDataFrame(pdf)
    got = aggregate(df, sm.Accuracy(), ["y", "p"], by="t")
    assert {k: m.compute() for k, m in got.items()} == {
        datetime.datetime(2024, 1, 1): 1.0,
        datetime.datetime(2024, 1, 2): 0.5,
    }
    with pytest.raises(sm.InputError, match="by: the column 's' has a missing value"):
        aggregate(df, sm.Accuracy(), ["y", "p"], by="s")


@pytest.mark.filterwarnings("ignore:PySpark does not yet fully support pandas")
def test_time_windows_do_not_depend_on_the_session_time_zone(spark) -> None:
    # mapInPandas hands instants over as wall-clock times of the session's zone: every window
    # started 5 hours early in New York, and two hours of the autumn change became one window.
    from streammetrics.windows import TumblingWindows

    stamps = ["2024-01-01T00:00", "2024-11-03T05:30", "2024-11-03T06:10"]
    t = np.array(stamps, dtype="datetime64[ns]")
    window = TumblingWindows(sm.Accuracy(), width=3600)
    want = window.copy().update([1, 0, 1], [1, 0, 1], timestamps=t).to_bytes()
    old = spark.conf.get("spark.sql.session.timeZone")
    try:
        for zone in ("America/New_York", "Asia/Kolkata", "UTC"):
            spark.conf.set("spark.sql.session.timeZone", zone)
            df = spark.sql(
                "select 1 y, timestamp'2024-01-01 00:00:00Z' t union all "
                "select 0, timestamp'2024-11-03 05:30:00Z' union all "
                "select 1, timestamp'2024-11-03 06:10:00Z'"
            )
            got = aggregate(df, window, {"y_true": "y", "y_pred": "y", "timestamps": "t"})
            assert got.to_bytes() == want, zone
    finally:
        spark.conf.set("spark.sql.session.timeZone", old)


@pytest.mark.filterwarnings("ignore:PySpark does not yet fully support pandas")
def test_column_names_with_dots_and_backticks(spark) -> None:
    # df.select("label.y") reads a struct's field: AnalysisException.
    pdf = pd.DataFrame({"label.y": [0, 1, 1, 0], "p`s": [0.2, 0.9, 0.4, 0.3], "g.k": [1, 1, 2, 2]})
    df = spark.createDataFrame(pdf)
    got = aggregate(df, sm.ROCAUC(), ["label.y", "p`s"], by="g.k")
    want = {
        k: sm.ROCAUC().update(pdf["label.y"][pdf["g.k"] == k], pdf["p`s"][pdf["g.k"] == k])
        for k in (1, 2)
    }
    assert got == want


@pytest.mark.filterwarnings("ignore:PySpark does not yet fully support pandas")
def test_integer_names_of_string_columns(spark) -> None:
    # createDataFrame of a pandas frame with columns 0, 1, 2 names them "0", "1", "2": 0.8.7 read
    # the names [0, 1] as those strings, and an early 0.8.8 refused them.
    pdf = pd.DataFrame({0: [0, 1, 1, 0], 1: [0.2, 0.9, 0.4, 0.3], 2: [1, 1, 2, 2]})
    df = spark.createDataFrame(pdf)
    assert df.columns == ["0", "1", "2"]
    got = aggregate(df, sm.ROCAUC(exact=True), [0, 1], by=2)
    assert got == {k: sm.ROCAUC(exact=True).update(r[0], r[1]) for k, r in pdf.groupby(2)}


@pytest.mark.filterwarnings("ignore:PySpark does not yet fully support pandas")
def test_instant_keys_do_not_depend_on_the_session_time_zone(spark) -> None:
    # The key column reached the workers as wall-clock times too: in New York, 05:00 and 06:00
    # UTC on the night of the autumn change were one key.
    import datetime

    hours = [datetime.datetime(2026, 11, 1, h) for h in (4, 5, 5, 6, 7, 8)]
    want = {h: 1.0 for h in sorted(set(hours))}
    old = spark.conf.get("spark.sql.session.timeZone")
    try:
        for zone in ("America/New_York", "UTC"):
            spark.conf.set("spark.sql.session.timeZone", zone)
            df = spark.sql(
                "select 1 y, timestamp_seconds(col * 3600) t from values "
                + ", ".join(
                    f"({int(h.replace(tzinfo=datetime.timezone.utc).timestamp()) // 3600})"
                    for h in hours
                )
                + " as v(col)"
            )
            got = aggregate(df, sm.Accuracy(), ["y", "y"], by="t")
            assert {k: m.compute() for k, m in got.items()} == want, zone
            assert [m.count for m in got.values()] == [1, 2, 1, 1, 1]
    finally:
        spark.conf.set("spark.sql.session.timeZone", old)


@pytest.mark.filterwarnings("ignore:PySpark does not yet fully support pandas")
def test_by_a_string_column_with_empty_partitions(spark) -> None:
    """A partition without rows sent an empty, untyped key column, which Arrow refused as a
    string: any filter or more partitions than rows failed the job (found by a review, 0.8.9)."""
    local = pd.DataFrame(
        {
            "y": [1, 0, 1, 1, 0, 1, 0, 0],
            "p": [1, 0, 0, 1, 0, 1, 1, 0],
            "country": ["fr", "fr", "de", "de", "us", "us", "fr", "de"],
        }
    )
    df = spark.createDataFrame(local).repartition(16)  # most partitions are empty
    got = aggregate(df, sm.Accuracy(), ["y", "p"], by="country")
    want = {k: sm.Accuracy().update(r["y"], r["p"]) for k, r in local.groupby("country")}
    assert got == want
    assert aggregate(df.filter("country = 'none'"), sm.Accuracy(), ["y", "p"], by="country") == {}


@pytest.mark.filterwarnings("ignore:PySpark does not yet fully support pandas")
def test_a_key_of_instants_that_is_also_a_metric_column(spark) -> None:
    # The metric read the key's microseconds as seconds: windows 10**6 times too late (a
    # review of 0.8.10); Dask and one process were right.
    from streammetrics.windows import TumblingWindows

    t = pd.to_datetime(["2024-01-01 00:10", "2024-01-01 00:20", "2024-01-01 01:10"])
    local = pd.DataFrame({"y": [1, 0, 1], "p": [1, 1, 1], "t": t})
    window = TumblingWindows(sm.Accuracy(), width=3600)
    columns = {"y_true": "y", "y_pred": "p", "timestamps": "t"}
    got = aggregate(spark.createDataFrame(local), window, columns, by="t")
    assert len(got) == 3
    for key, metric in got.items():
        rows = local[local["t"] == key]
        want = window.copy().update(rows["y"], rows["p"], timestamps=rows["t"].to_numpy())
        assert metric.to_bytes() == want.to_bytes()


@pytest.mark.filterwarnings("ignore:PySpark does not yet fully support pandas")
def test_a_count_overflow_in_a_reducer_is_an_input_error(spark) -> None:
    # CountOverflowError lives in streammetrics._codec: it reached the driver as PySpark's
    # PythonException, which `except InputError` missed.
    local = pd.DataFrame({"y": [1] * 4, "p": [1] * 4, "w": [2.0**99] * 4})
    df = spark.createDataFrame(local).repartition(4)
    columns = {"y_true": "y", "y_pred": "p", "sample_weight": "w"}
    with pytest.raises(sm.InputError, match="2\\*\\*100"):
        aggregate(df, sm.ConfusionMatrix(), columns)


@pytest.mark.filterwarnings("ignore:PySpark does not yet fully support pandas")
def test_matrix_arguments_from_array_columns(spark) -> None:
    # An array<double> column feeds a matrix argument (class probabilities, several outputs);
    # 0.8.11 handed it to update as an object column, refused.
    rng = np.random.default_rng(6)
    n = 2_000
    prob = rng.dirichlet(np.ones(3), size=n)
    t, p = rng.normal(size=(n, 2)), rng.normal(size=(n, 2))
    y = rng.integers(0, 3, n)
    local = pd.DataFrame({"y": y, "prob": list(prob), "t": list(t), "p": list(p)})
    df = spark.createDataFrame(local).repartition(5)
    got = aggregate(df, sm.MulticlassROCAUC(), ["y", "prob"])
    assert got.to_bytes() == sm.MulticlassROCAUC().update(y, prob).to_bytes()
    mse = aggregate(df, sm.MeanSquaredError(multioutput="raw_values"), ["t", "p"])
    want = sm.MeanSquaredError(multioutput="raw_values").update(t, p).compute()
    assert np.allclose(mse.compute(), want, rtol=1e-12)


def test_a_pandas_frame_is_named_as_the_wrong_argument() -> None:
    # 0.8.16: AttributeError: 'DataFrame' object has no attribute 'schema' (review).
    with pytest.raises(sm.InputError, match=r"df: .*pandas\.DataFrame.*createDataFrame"):
        aggregate(pd.DataFrame({"y": [0, 1], "p": [0, 1]}), sm.Accuracy(), ["y", "p"])


def test_rows_valid_per_partition_but_not_together_are_an_input_error(spark) -> None:
    # Arrays of 2 columns in one partition and of 3 in the other: each partition's state is
    # valid, their merge in the reducer is not. 0.8.18 raised IncompatibleStateError, naming
    # no argument; one process refuses the rows with an InputError.
    from pyspark.sql import functions as F

    rows = [(0, [0.2, 0.3, 0.5]), (1, [0.1, 0.8, 0.1]), (2, [0.3, 0.3, 0.4])]
    rows += [(0, [0.2, 0.8]), (1, [0.1, 0.9]), (1, [0.4, 0.6])]
    df = spark.createDataFrame(rows, "y long, p array<double>").repartitionByRange(2, F.size("p"))
    with pytest.raises(sm.InputError, match="columns: the partitions' rows"):
        aggregate(df, sm.MulticlassROCAUC(), ["y", "p"])
    with pytest.raises(sm.InputError, match=r"^by: 'nope' not in the DataFrame"):
        aggregate(df, sm.Accuracy(), ["y", "y"], by="nope")
