"""MLflow (SQLite and file stores), Trackio and SwanLab: runs written by the real clients
(scripts/make_fixtures_trackers.py) diagnose exactly like the same run's CSV; damaged stores
give one line or an honest partial read."""

from __future__ import annotations

import gzip
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from grpo_doctor import diagnose
from grpo_doctor.errors import FormatError, GrpoDoctorError, InputError
from grpo_doctor.importers import detect_format, load_run, load_runs, tracker_store
from grpo_doctor.store import Run
from tests.importers.common import FIXTURES

CSV = FIXTURES / "tensorboard" / "grpo_synthetic.csv"
SWANLOG = FIXTURES / "swanlab" / "swanlog"
MLRUNS = FIXTURES / "mlflow" / "mlruns"
NAME = "grpo-synthetic"


def unpack(name: str, dest: Path) -> Path:
    """A gzipped SQLite fixture, unpacked as the client wrote it."""
    out = dest / Path(name).name.removesuffix(".gz")
    with gzip.open(FIXTURES / name, "rb") as fh, out.open("wb") as target:
        shutil.copyfileobj(fh, target)
    return out


@pytest.fixture(scope="module")
def stores(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    tmp = tmp_path_factory.mktemp("stores")
    trackio_dir = tmp / "trackio"
    trackio_dir.mkdir()
    return {
        "mlflow.db": unpack("mlflow/mlflow.db.gz", tmp),
        "mlruns": MLRUNS,
        "trackio.db": unpack("trackio/grpo.db.gz", trackio_dir),
        "trackio folder": trackio_dir,
        "swanlog": SWANLOG,
        "swanlab run folder": next(SWANLOG.glob("run-*")),
    }


FORMATS = {"mlflow.db": "mlflow", "mlruns": "mlflow", "trackio.db": "trackio",
           "trackio folder": "trackio", "swanlog": "swanlab", "swanlab run folder": "swanlab"}


@pytest.fixture(scope="module")
def reference() -> Run:
    return load_run(CSV)


def synthetic(source: Path) -> Run:
    runs = [r for r in load_runs(source) if r.name == NAME]
    if not runs:  # a run folder holds one run, the synthetic one (the older folder)
        (run,) = load_runs(source)
        return run
    return runs[0]


@pytest.mark.parametrize("store", FORMATS)
def test_run_reads_back_to_the_csv_and_diagnoses_like_it(store, stores, reference):
    source = stores[store]
    assert detect_format(source).name == FORMATS[store]
    run = synthetic(source)
    assert run.format == FORMATS[store]
    assert run.name == NAME
    frame = run.frame[list(reference.frame.columns)]
    assert frame.equals(reference.frame)
    assert {k: list(v) for k, v in run.nan_steps.items()} == {"grad_norm": [150]}
    # Params/config became the run's config: remedies name today's values.
    assert float(run.config["learning_rate"]) == 1e-6
    ours = diagnose(run).to_dict()
    reference.config = run.config
    theirs = diagnose(reference).to_dict()
    assert ours["checks"] == theirs["checks"]
    assert ours["status"] == theirs["status"] == "critical"
    remedies = [r for c in ours["checks"] for r in c["remedies"]]
    assert "learning_rate 1e-6 -> 5e-7" in remedies


@pytest.mark.parametrize("store", ["mlflow.db", "mlruns", "trackio.db", "swanlog"])
def test_a_store_holds_every_run_and_run_picks_one(store, stores):
    source = stores[store]
    assert sorted(r.name for r in load_runs(source)) == [NAME, "short"]
    (short,) = load_runs(source, run="short")
    if store == "swanlog":  # SwanLab refuses a second value at a step it logged
        assert list(short.frame["reward_mean"]) == [0.1, 0.5, 0.7]
    else:  # the other clients keep both: the last one logged wins, as everywhere else
        assert list(short.frame["reward_mean"]) == [0.1, 0.9, 0.7]
        assert any("the last" in n and "kept" in n for n in short.notes), short.notes
    with pytest.raises(InputError, match="no run named 'nope'"):
        load_runs(source, run="nope")


def test_runs_are_picked_by_id_too(stores):
    conn = sqlite3.connect(stores["mlflow.db"])
    (run_id,) = conn.execute("SELECT run_uuid FROM runs WHERE name = 'short'").fetchone()
    conn.close()
    assert load_run(stores["mlflow.db"], run=run_id).n_steps == 3
    (folder,) = [p for p in SWANLOG.glob("run-*") if load_run(p).name == "short"]
    assert load_run(SWANLOG, run=folder.name.rsplit("-", 1)[1]).n_steps == 3


@pytest.mark.parametrize("store", ["mlflow.db", "mlruns"])
def test_deleted_mlflow_runs_are_left_out(store, stores):
    runs = load_runs(stores[store])
    assert "discarded" not in {r.name for r in runs}
    assert "1 deleted run left out" in runs[0].notes


def test_mlflow_stores_nan_and_inf_as_logged(tmp_path):
    """MLflow's SQL store writes NaN as 0 + is_nan and inf as the largest float."""
    db = unpack("mlflow/mlflow.db.gz", tmp_path)
    conn = sqlite3.connect(db)
    run_id = conn.execute("SELECT run_uuid FROM runs WHERE name = 'short'").fetchone()[0]
    conn.executemany(
        "INSERT INTO metrics (key, value, timestamp, run_uuid, step, is_nan) "
        "VALUES (?, ?, 0, ?, 1, ?)",
        [("up", 1.7976931348623157e308, run_id, 0), ("down", -1.7976931348623157e308, run_id, 0),
         ("missing", 0.0, run_id, 1)])
    conn.commit()
    conn.close()
    run = load_run(db, run="short")
    assert run.frame.loc[1, "up"] == np.inf and run.frame.loc[1, "down"] == -np.inf
    assert np.isnan(run.frame.loc[1, "missing"]) and list(run.nan_steps["missing"]) == [1]


def test_nothing_is_written_beside_a_store(stores, tmp_path):
    """Trackio writes its database in WAL mode: a plain read-only open would leave -wal and
    -shm files beside it."""
    folder = tmp_path / "t"
    shutil.copytree(stores["trackio folder"], folder)
    before = sorted(p.name for p in folder.iterdir())
    load_runs(folder)
    assert sorted(p.name for p in folder.iterdir()) == before


# --- damaged stores -----------------------------------------------------------------------


def test_locked_database_is_one_line(tmp_path, monkeypatch):
    db = unpack("mlflow/mlflow.db.gz", tmp_path)
    monkeypatch.setattr(tracker_store, "LOCK_TIMEOUT", 0.05)
    writer = sqlite3.connect(db, isolation_level=None)
    writer.execute("BEGIN EXCLUSIVE")
    try:
        with pytest.raises(InputError, match="the database is locked by another process"):
            load_runs(db)
    finally:
        writer.execute("ROLLBACK")
        writer.close()
    assert len(load_runs(db)) == 2  # released: read as usual


def test_locked_database_exits_2_with_one_line(tmp_path, capsys, monkeypatch):
    from tests.helpers import run_cli

    db = unpack("mlflow/mlflow.db.gz", tmp_path)
    monkeypatch.setattr(tracker_store, "LOCK_TIMEOUT", 0.05)
    writer = sqlite3.connect(db, isolation_level=None)
    writer.execute("BEGIN EXCLUSIVE")
    try:
        code, out, err = run_cli(capsys, "diagnose", str(db))
    finally:
        writer.execute("ROLLBACK")
        writer.close()
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and "locked by another process" in err
    assert "Traceback" not in err


@pytest.mark.parametrize("name", ["mlflow/mlflow.db.gz", "trackio/grpo.db.gz"])
def test_truncated_database_is_one_line(name, tmp_path):
    db = unpack(name, tmp_path)
    data = db.read_bytes()
    db.write_bytes(data[: len(data) // 2])
    with pytest.raises(FormatError, match=r"the SQLite database is damaged \(database disk "
                                          r"image is malformed\)"):
        load_runs(db)


def test_database_damaged_part_way_is_an_honest_partial_read(tmp_path):
    """A page of metric rows overwritten: the rows written before it are read, with a note."""
    db = unpack("mlflow/mlflow.db.gz", tmp_path)
    conn = sqlite3.connect(db)
    page_size = conn.execute("PRAGMA page_size").fetchone()[0]
    rows = conn.execute("SELECT count(*) FROM metrics").fetchone()[0]
    conn.close()
    data = bytearray(db.read_bytes())
    # The metrics table's last leaf pages are the file's last pages (its rows were written
    # last, and SQLite appends pages); damage the page holding roughly the last 10% of rows.
    pages = len(data) // page_size
    data[(pages - 3) * page_size : (pages - 2) * page_size] = b"\xff" * page_size
    db.write_bytes(bytes(data))
    run = load_run(db, run=NAME)
    (note,) = [n for n in run.notes if "damaged" in n]
    read = int(note.split("the first ")[1].split(" ")[0].replace(",", ""))
    assert 0 < read < rows and note.endswith("metric rows were read, the rest is lost")
    assert 0 < run.n_steps < 200 and run.first_step == 1


def test_mlruns_cut_last_line_and_missing_metrics_folder(tmp_path):
    store = tmp_path / "mlruns"
    shutil.copytree(MLRUNS, store)
    (run_dir,) = [p.parent for p in store.glob("*/*/meta.yaml")
                  if "run_name: grpo-synthetic" in p.read_text()]
    reward = run_dir / "metrics" / "train" / "reward"
    reward.write_text(reward.read_text() + "1700000000000 0.5")  # a line being written
    run = load_run(store, run=NAME)
    assert "metric 'train/reward': its last line is cut (run still being written?)" in run.notes
    assert run.n_steps == 200
    shutil.rmtree(run_dir / "metrics")
    with pytest.raises(FormatError, match=r"the MLflow run has no metric .*no metrics folder"):
        load_runs(run_dir)
    names = [r.name for r in load_runs(store)]
    assert names == ["short"]


def test_swanlab_folder_without_its_log_is_one_line(tmp_path):
    run = tmp_path / "swanlog" / "run-20250101_000000-abcdefgh"
    (run / "files").mkdir(parents=True)
    (run / "files" / "config.yaml").write_text("lr:\n  value: 1\n")
    with pytest.raises(FormatError, match=r"no training log found in .*swanlog \(1 entry, "):
        load_runs(tmp_path / "swanlog")


def _swanlab_log() -> Path:
    return max(SWANLOG.glob("run-*/run-*.swanlab"), key=lambda p: p.stat().st_size)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cut=st.floats(0.05, 0.999))
def test_swanlab_log_cut_anywhere_reads_a_prefix(cut):
    """A live (or cut) log reads the records before the cut, never more, never a crash."""
    data = _swanlab_log().read_bytes()
    full = load_run(_swanlab_log())
    with __import__("tempfile").TemporaryDirectory() as tmp:
        path = Path(tmp) / "run-x.swanlab"
        path.write_bytes(data[: int(len(data) * cut)])
        try:
            run = load_run(path)
        except GrpoDoctorError as exc:
            assert "no swanlab run with a logged value" in str(exc)
            return
    assert run.last_step <= full.last_step
    common = run.frame.columns
    np.testing.assert_array_equal(
        run.frame.loc[: run.last_step - 1, common].to_numpy(),
        full.frame.loc[: run.last_step - 1, common].to_numpy())


def test_swanlab_corrupt_block_is_skipped_with_a_note(tmp_path):
    data = bytearray(_swanlab_log().read_bytes())
    data[40_000:40_100] = b"\x00" * 100
    path = tmp_path / "run-x.swanlab"
    path.write_bytes(bytes(data))
    run = load_run(path)
    assert any(n.startswith("corrupt block at byte") for n in run.notes)
    assert 0 < run.n_steps < 200


def test_sqlite_files_of_other_programs_are_not_runs(tmp_path):
    db = tmp_path / "cache.db"
    conn = sqlite3.connect(db)
    conn.execute("CREATE TABLE metrics (key TEXT, value REAL)")
    conn.commit()
    conn.close()
    with pytest.raises(FormatError, match="format not recognised"):
        load_runs(db)
    random = tmp_path / "random.swanlab"
    random.write_bytes(b":SWL" + bytes(100))
    with pytest.raises(FormatError, match="not a SwanLab run log"):
        load_runs(random)


def test_audit_finds_every_store_and_every_run_in_it(stores, tmp_path):
    from grpo_doctor import audit as auditing

    root = tmp_path / "tracking"
    shutil.copytree(MLRUNS, root / "mlruns")
    shutil.copy(stores["mlflow.db"], root / "mlflow.db")
    shutil.copytree(stores["trackio folder"], root / "trackio")
    shutil.copytree(SWANLOG, root / "swanlog")
    result = auditing.audit([str(root)], jobs=1)
    assert not result.errors
    found = sorted((r.source.split("/")[0], r.name) for r in result.runs)
    # Every store is read; a run whose values another format already holds (the same
    # synthetic run logged to two trackers) is listed once, the copy said.
    copies = sorted(p.source.split("/")[0] for p in result.passed_over if p.copy)
    assert {store for store, _ in found} | set(copies) == {"mlruns", "mlflow.db", "trackio",
                                                          "swanlog"}
    assert len(found) + len(copies) == 8 and {name for _, name in found} == {NAME, "short"}


TRACKIO_VALUES = """
import os, sys
os.environ["TRACKIO_DIR"] = sys.argv[1]
import numpy as np, trackio
trackio.init(project="kinds", name="kinds", config={"beta": 0.04})
trackio.log({"train": {"reward": 0.5, "kl": 0.1}, "nanm": float("nan"), "infm": float("inf"),
             "hist": trackio.Histogram(np.arange(10)), "text": "hello", "flag": True}, step=1)
trackio.log({"train": {"reward": 0.6}, "nanm": 1.0}, step=2)
trackio.finish()
"""


def test_trackio_nested_dicts_nan_inf_and_media_as_written_by_its_client(tmp_path):
    pytest.importorskip("trackio")
    proc = subprocess.run([sys.executable, "-c", TRACKIO_VALUES, str(tmp_path)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    run = load_run(tmp_path / "kinds.db")
    assert run.config == {"beta": 0.04}
    frame = run.frame
    assert list(frame["reward_mean"]) == [0.5, 0.6] and frame.loc[1, "kl"] == 0.1
    assert np.isnan(frame.loc[2, "kl"]) and "kl" not in run.nan_steps  # not logged: a gap
    assert list(run.nan_steps["nanm"]) == [1] and frame.loc[2, "nanm"] == 1.0
    assert frame.loc[1, "infm"] == np.inf and frame.loc[1, "flag"] == 1.0
    assert not [c for c in frame.columns if c.startswith(("hist", "text"))]


def test_mlflow_values_sqlite_did_not_type_check(tmp_path):
    """SQLite stores what it is given: a NULL or a text value in the metrics table is a gap."""
    db = unpack("mlflow/mlflow.db.gz", tmp_path)
    conn = sqlite3.connect(db)
    run_id = conn.execute("SELECT run_uuid FROM runs WHERE name = 'short'").fetchone()[0]
    conn.executemany("INSERT INTO metrics (key, value, timestamp, run_uuid, step, is_nan) "
                     "VALUES (?, ?, 0, ?, 3, 0)",
                     [("odd", "oops", run_id), ("odd2", "0.25", run_id)])
    conn.commit()
    conn.close()
    run = load_run(db, run="short")
    assert np.isnan(run.frame.loc[3, "odd"]) and run.frame.loc[3, "odd2"] == 0.25


def test_trackio_reads_the_same_without_orjson(stores, monkeypatch):
    from grpo_doctor.importers import trackio_store

    fast = load_run(stores["trackio.db"], run=NAME)
    monkeypatch.setattr(trackio_store, "_json_parsers", lambda: [__import__("json").loads])
    assert load_run(stores["trackio.db"], run=NAME).frame.equals(fast.frame)


# --- memory bounds ------------------------------------------------------------------------


def test_a_sparse_trackio_project_is_refused_before_it_is_tabulated(tmp_path):
    import json
    import time
    import tracemalloc

    path = tmp_path / "sparse.db"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE metrics (id INTEGER PRIMARY KEY, timestamp TEXT, run_name TEXT,"
                 " step INTEGER, metrics TEXT)")
    n = 6000  # a new key at each step: 6000 x 6000 cells holding 6000 values
    conn.executemany("INSERT INTO metrics (timestamp, run_name, step, metrics) "
                     "VALUES ('', 'r', ?, ?)", [(k, json.dumps({f"m{k}": 1.0})) for k in range(n)])
    conn.commit()
    conn.close()
    tracemalloc.start()
    start = time.monotonic()
    try:
        with pytest.raises(FormatError, match="too sparse to tabulate"):
            load_run(path)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 64 << 20 and time.monotonic() - start < 10


def test_mlflow_files_are_read_within_the_read_limit(tmp_path, monkeypatch):
    mlruns = tmp_path / "mlruns"
    shutil.copytree(MLRUNS, mlruns)
    run_dir = next(p.parent for p in mlruns.glob("*/*/meta.yaml")
                   if "grpo-synthetic" in p.read_text())
    big = run_dir / "metrics" / "huge"
    with big.open("wb") as fh:  # sparse: 8 GiB on disk costs nothing
        fh.truncate(8 << 30)
    monkeypatch.setenv("GRPO_DOCTOR_MAX_READ_MB", "1")
    run = load_run(mlruns, run=NAME)
    assert any(n.startswith("metric 'huge' left out: ") and "GRPO_DOCTOR_MAX_READ_MB" in n
               for n in run.notes)
    big.unlink()
    for k in range(3):  # each under the limit, together past it
        (run_dir / "metrics" / f"part{k}").write_text("0 0.5 1\n" * 70_000)
    with pytest.raises(InputError, match=r"the store.s files hold more than the 1\.0 MiB"):
        load_runs(mlruns)


# --- SQLite keeps any type in any cell -----------------------------------------------------


def _mlflow(path: Path, runs, metrics) -> Path:
    conn = sqlite3.connect(path)
    conn.executescript(
        "CREATE TABLE experiments (experiment_id, name, lifecycle_stage);"
        "CREATE TABLE runs (run_uuid, name, experiment_id, lifecycle_stage);"
        "CREATE TABLE metrics (key, value, timestamp, run_uuid, step, is_nan);"
        "CREATE TABLE params (key, value, run_uuid);"
        "CREATE TABLE tags (key, value, run_uuid);"
        'CREATE TABLE "we""ird" (x);'  # a table name that needs quoting
        "INSERT INTO experiments VALUES (0, 'Default', 'active');")
    conn.executemany("INSERT INTO runs VALUES (?, ?, 0, 'active')", runs)
    conn.executemany("INSERT INTO metrics VALUES (?, ?, 0, ?, ?, ?)", metrics)
    conn.executemany("INSERT INTO params VALUES (?, ?, ?)", [(7, 0.5, runs[0][0])])
    conn.commit()
    conn.close()
    return path


def _points(run_id, key="reward_mean", is_nan="0", steps=range(1, 41)):
    return [(key, 0.5 + 0.01 * (i % 3), run_id, s, is_nan) for i, s in enumerate(steps)]


def test_mlflow_text_is_nan_is_not_a_logged_nan(tmp_path):
    db = _mlflow(tmp_path / "m.db", [("r1", "run")], _points("r1", is_nan="0")
                 + [("kl", 0.1, "r1", s, "false") for s in range(1, 41)])
    run = load_run(db)
    assert not run.nan_steps and not np.isnan(run.frame["reward_mean"]).any()
    assert diagnose(run).check("numerical_failure").status.value != "critical"
    db = _mlflow(tmp_path / "n.db", [("r1", "run")], _points("r1", is_nan="1"))
    assert len(load_run(db).nan_steps["reward_mean"]) == 40  # "1": a logged NaN, as MLflow


def test_mlflow_untyped_cells_ids_names_and_steps(tmp_path):
    metrics = (_points(1) + _points("2", steps=["1", "2", "3", "x"]) + _points(3, key=5))
    db = _mlflow(tmp_path / "m.db", [(1, 1), ("2", "1"), (3, b"three")], metrics)
    runs = {r.name: r for r in load_runs(db)}
    assert len(runs) == 3 and len({*runs}) == 3  # two runs named 1 (int and text): told apart
    by_id = {r.name.split("(")[-1].rstrip(")"): r for r in runs.values()}
    assert by_id["1"].n_steps == 40 and by_id["1"].config == {"7": 0.5}
    assert by_id["2"].n_steps == 3
    assert any("1 row without a step was dropped" in n for n in by_id["2"].notes)
    assert "5" in runs["three"].frame.columns


def test_trackio_untyped_cells(tmp_path):
    import json

    path = tmp_path / "p.db"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE metrics (id INTEGER PRIMARY KEY, timestamp, run_name, step,"
                 " metrics)")
    rows = [(7, s, json.dumps({"reward_mean": 0.5})) for s in range(1, 31)]
    rows += [("7", "31", json.dumps({"reward_mean": 0.6})), (7, "x", "{}"),
             (7, 32, 10**12), (7, 33, None)]  # an integer cell is no logged dict
    conn.executemany("INSERT INTO metrics (run_name, step, metrics) VALUES (?, ?, ?)", rows)
    conn.commit()
    conn.close()
    run = load_run(path)
    assert run.name == "7" and run.n_steps == 31
    assert any("logged rows that are not JSON objects were skipped" in n for n in run.notes)


def test_a_damaged_trackio_database_beside_a_good_one_is_a_note(stores, tmp_path):
    folder = tmp_path / "trackio"
    folder.mkdir()
    shutil.copy(stores["trackio.db"], folder / "good.db")
    data = (folder / "good.db").read_bytes()
    (folder / "bad.db").write_bytes(data[:100] + b"\xff" * (len(data) - 100))
    runs = load_runs(folder)
    assert runs and any(n.startswith("bad.db: skipped (") for n in runs[0].notes)


def test_a_fifo_as_the_first_swanlab_run_does_not_hide_the_folder(tmp_path):
    import os

    swanlog = tmp_path / "swanlog"
    shutil.copytree(SWANLOG, swanlog)
    fifo = swanlog / "run-00000000_000000-aaaaaaaa"
    fifo.mkdir()
    os.mkfifo(fifo / "run-aaaaaaaa.swanlab")
    assert detect_format(swanlog).name == "swanlab"
    assert len(load_runs(swanlog)) == len(load_runs(SWANLOG))


def test_the_folder_mlflow_made_its_mlruns_in_is_read(stores, tmp_path):
    """MLflow's client writes ``./mlruns`` where it runs: a run folder holding only that had
    read "no training log found" (trial 40)."""
    import shutil

    shutil.copytree(stores["mlruns"], tmp_path / "r03" / "mlruns")
    assert sorted(r.name for r in load_runs(tmp_path / "r03")) == [NAME, "short"]


def test_mlflow_runs_of_one_name_a_resume_made_are_one_run(tmp_path, monkeypatch):
    """TRL's MLflow callback starts a run per launch under the run's name: a resume from
    checkpoint-100 was two runs that --run could not tell apart (trial 67). Written by the
    real mlflow; a second run of the name from step 1 is another run, not a resume."""
    import warnings

    mlflow = pytest.importorskip("mlflow")
    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")
    store = tmp_path / "mlruns"
    mlflow.set_tracking_uri(store.as_uri())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name, steps in (("res_run", range(1, 116)), ("res_run", range(101, 201)),
                            ("again", range(1, 61)), ("again", range(1, 61))):
            with mlflow.start_run(run_name=name):
                mlflow.log_params({"output_dir": f"out/{name}"})
                for s in steps:
                    mlflow.log_metrics({"reward": 0.2 + 0.003 * s}, step=s)
    runs = load_runs(store)
    resumed = [r for r in runs if r.name == "res_run"]
    assert len(resumed) == 1 and resumed[0].n_steps == 200
    assert resumed[0].resumed_at == (101,)
    assert resumed[0].notes[0].startswith("one run resumed 1 time: 2 mlflow runs")
    assert len([r for r in runs if "again" in r.name]) == 2
    assert load_run(store, run="res_run").n_steps == 200  # --run picks the joined run


def test_mlflow_params_are_read_as_the_values_they_stand_for(tmp_path, monkeypatch):
    """MLflow keeps every param as text: a run's setup had held '8', '0.0' and 'False' where a
    run logged to another tracker held 8, 0.0 and False (a JSON consumer comparing
    `value == 0` broke by tracker; nu34). Written by the real mlflow, file store and sqlite."""
    import warnings

    mlflow = pytest.importorskip("mlflow")
    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")
    for uri in ((tmp_path / "mlruns").as_uri(), f"sqlite:///{tmp_path / 'mlflow.db'}"):
        mlflow.set_tracking_uri(uri)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with mlflow.start_run(run_name="typed"):
                mlflow.log_params({"num_generations": 8, "beta": 0.0, "bf16": False,
                                   "adam_beta1": 0.9, "report_to": ["mlflow"],
                                   "output_dir": "out/typed", "warmup_ratio": None})
                for s in range(1, 30):
                    mlflow.log_metrics({"reward": 0.2 + 0.003 * s}, step=s)
        source = tmp_path / "mlruns" if uri.startswith("file") else tmp_path / "mlflow.db"
        (run,) = load_runs(source)
        config = run.config
        assert config["num_generations"] == 8 and isinstance(config["num_generations"], int)
        assert config["beta"] == 0.0 and config["bf16"] is False
        assert config["adam_beta1"] == 0.9 and config["report_to"] == ["mlflow"]
        assert config["output_dir"] == "out/typed" and config["warmup_ratio"] is None
