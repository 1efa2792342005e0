"""Fleet audits: `audit --shard K/N`, `audit-merge`, `audit --format parquet`."""

import json
import shutil
from pathlib import Path

import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from grpo_doctor.api import example_path
from grpo_doctor.compare import KNOBS
from grpo_doctor.fleet import COLUMNS, parse_shard, shard_of
from tests.helpers import REAL_RUNS, run_cli

CORPUS = Path(__file__).parent / "fixtures" / "corpus"
#: Few checks keep the many audits of these tests quick; the shard logic does not care.
ONLY = ["--select", "kl_drift", "--select", "entropy_collapse", "--select",
        "advantage_collapse", "-j", "1"]


@pytest.fixture(scope="module")
def tree(tmp_path_factory):
    """Runs in several formats, one file holding two runs, two unreadable logs."""
    root = tmp_path_factory.mktemp("fleet")
    for name in ("healthy", "kl-drift", "entropy-collapse", "advantage-collapse"):
        (root / "examples").mkdir(exist_ok=True)
        shutil.copy(example_path(name), root / "examples" / f"{name}.csv")
    for run in ("01_healthy_s1", "02_healthy_s2", "03_healthy_s3", "11_too_hard"):
        if (CORPUS / run).exists():
            shutil.copytree(CORPUS / run, root / "corpus" / run)
    rows = ["run_id,step,train/kl,train/reward"]
    rows += [f"{r},{i},{0.05 + k * 0.3 * i},0.5" for k, r in enumerate("ab")
             for i in range(1, 61)]
    (root / "two-runs.csv").write_text("\n".join(rows) + "\n")  # one source, two runs
    (root / "broken").mkdir()
    (root / "broken" / "empty.csv").write_bytes(b"")
    (root / "broken" / "garbage.jsonl").write_text("not json\n")
    return root


def _audit(capsys, tree, *args):
    code, out, err = run_cli(capsys, "audit", str(tree), *ONLY, *args)
    return code, out


def _whole_json(capsys, tree):
    code, out = _audit(capsys, tree, "-f", "json")
    return code, out


@pytest.mark.parametrize("n", [3, 7])
def test_shards_hold_every_run_once_and_merge_into_the_whole_audit(capsys, tree, tmp_path, n):
    code_whole, out_whole = _whole_json(capsys, tree)
    whole = json.loads(out_whole)
    paths, seen = [], []
    for k in range(1, n + 1):
        code, out = _audit(capsys, tree, "-f", "json", "--shard", f"{k}/{n}")
        assert code in (0, 1)
        doc = json.loads(out)
        assert doc["shard"] == f"{k}/{n}"
        seen += [(r["audit"]["source"], r["run"]["name"]) for r in doc["runs"]]
        seen += [(e["source"], None) for e in doc["errors"]]
        (tmp_path / f"shard-{k}.json").write_text(out)
        paths.append(str(tmp_path / f"shard-{k}.json"))
    expected = [(r["audit"]["source"], r["run"]["name"]) for r in whole["runs"]]
    expected += [(e["source"], None) for e in whole["errors"]]
    assert sorted(seen, key=str) == sorted(expected, key=str) and len(seen) == len(set(seen))
    code, merged = run_cli(capsys, "audit-merge", *reversed(paths), "-f", "json")[:2]
    assert code == code_whole
    assert json.dumps(json.loads(merged), sort_keys=True) == json.dumps(whole, sort_keys=True)
    assert merged == out_whole  # the order is the whole audit's too
    for fmt in ("junit", "markdown"):
        _, want, _ = run_cli(capsys, "audit", str(tree), *ONLY, "-f", fmt)
        _, got, _ = run_cli(capsys, "audit-merge", *paths, "-f", fmt)
        assert got == want


def test_the_partition_does_not_depend_on_where_the_tree_is(capsys, tree, tmp_path):
    moved = tmp_path / "elsewhere" / "checkout"
    shutil.copytree(tree, moved)
    for k in (1, 2):
        _, here = _audit(capsys, tree, "-f", "json", "--shard", f"{k}/2")
        _, there = _audit(capsys, moved, "-f", "json", "--shard", f"{k}/2")
        sources = [[r["audit"]["source"] for r in json.loads(x)["runs"]] for x in (here, there)]
        assert sources[0] == sources[1]


def test_an_empty_shard_is_not_an_error(capsys, tmp_path):
    shutil.copy(example_path("healthy"), tmp_path / "only.csv")
    mine = shard_of("only.csv", 5)
    other = 1 + mine % 5
    code, out = _audit(capsys, tmp_path, "-f", "json", "--shard", f"{other}/5")
    assert code == 0 and json.loads(out)["runs"] == []
    code, out = _audit(capsys, tmp_path, "-f", "json", "--shard", f"{mine}/5")
    assert code == 0 and len(json.loads(out)["runs"]) == 1


def test_merge_refuses_what_is_not_the_whole_audit(capsys, tree, tmp_path):
    for k in (1, 2):
        _, out = _audit(capsys, tree, "-f", "json", "--shard", f"{k}/3")
        (tmp_path / f"s{k}.json").write_text(out)
    code, _, err = run_cli(capsys, "audit-merge", str(tmp_path / "s1.json"),
                           str(tmp_path / "s2.json"))
    assert code == 2 and err.strip().endswith("shard 3/3 missing: the merge would not be "
                                              "the whole audit")
    code, _, err = run_cli(capsys, "audit-merge", str(tmp_path / "s1.json"),
                           str(tmp_path / "s1.json"))
    assert code == 2 and "shard 1/3 also in" in err
    (tmp_path / "other.json").write_text('{"schema_version": 1, "findings": []}')
    code, _, err = run_cli(capsys, "audit-merge", str(tmp_path / "other.json"))
    assert code == 2 and "not a grpo-doctor audit JSON report" in err
    code, _, err = run_cli(capsys, "audit", str(tree), "--shard", "4/3")
    assert code == 2 and "--shard takes K/N with 1 <= K <= N" in err


def test_parquet_one_row_per_run_and_check(capsys, tree, tmp_path):
    out = tmp_path / "audit.parquet"
    code, _ = _audit(capsys, tree, "--format", "parquet", "--output", str(out))
    _, doc = _whole_json(capsys, tree)
    doc = json.loads(doc)
    df = pd.read_parquet(out)
    assert list(df.columns) == [*COLUMNS, *(f"config_{k}" for k in KNOBS)]
    checks = df[df["status"] != "error"]
    assert len(checks) == sum(len(r["checks"]) for r in doc["runs"])
    assert len(checks.groupby(["source", "run", "mode"])) == len(checks)
    assert set(checks["mode"]) == {"kl_drift", "entropy_collapse", "advantage_collapse"}
    assert set(df.loc[df["status"] == "error", "source"]) == {e["source"] for e in doc["errors"]}
    kl = checks[(checks["run"] == "kl-drift") & (checks["mode"] == "kl_drift")].iloc[0]
    assert kl["status"] == "critical" and kl["severity"] == 2 and bool(kl["failing"])
    assert kl["onset_step"] > 0 and str(df["modified"].dtype).startswith("datetime64")
    if (tree / "corpus" / "01_healthy_s1").exists():
        s1 = checks[checks["source"] == "corpus/01_healthy_s1"].iloc[0]
        assert s1["config_learning_rate"] == pytest.approx(1e-4)
        assert s1["config_group_size"] == 8
    # A query as the README shows it: runs with KL drift since a date.
    since = pd.Timestamp("2000-01-01", tz="UTC")
    hits = df[(df["mode"] == "kl_drift") & (df["severity"] >= 1) & (df["modified"] >= since)]
    assert "kl-drift" in set(hits["run"])
    code, _, err = run_cli(capsys, "audit", str(tree), "--format", "parquet")
    assert code == 2 and "give --output FILE" in err


def test_shard_of_is_a_fixed_function_of_the_key():
    # sha256: the same on every machine and Python; these values must never change.
    assert [shard_of(k, 8) for k in ("runs/a.csv", "runs/b.csv", "wandb://e/p/r")] == [5, 1, 2]
    assert parse_shard(" 2 / 5 ") == (2, 5)


@given(st.lists(st.text(min_size=1, max_size=30), max_size=60, unique=True),
       st.integers(1, 12))
def test_shards_partition_any_set_of_keys(keys, n):
    parts = [[k for k in keys if shard_of(k, n) == i] for i in range(1, n + 1)]
    assert sorted(k for p in parts for k in p) == sorted(keys)
    assert all(1 <= shard_of(k, n) <= n for k in keys)


def _versions(root, *collapsing):
    """``root/vK/metrics.csv``: one file name in every run's folder; ``collapsing`` ones
    collapse their entropy."""
    for k in range(3):
        (root / f"v{k}").mkdir(parents=True, exist_ok=True)
        name = "entropy-collapse" if k in collapsing else "healthy"
        shutil.copy(example_path(name), root / f"v{k}" / "metrics.csv")
    return [str(root / f"v{k}" / "metrics.csv") for k in range(3)]


def test_files_named_alike_in_two_folders_are_two_keys(capsys, tmp_path):
    # The CI gate: a baseline of v0 and v1, then a new collapsing run v2 with the same file
    # name: its finding is new (exit 1), not taken for v1's accepted one.
    v0, v1, v2 = _versions(tmp_path / "runs", 1, 2)
    baseline = tmp_path / "b.json"
    run_cli(capsys, "audit", v0, v1, *ONLY, "--write-baseline", str(baseline))
    sources = {f["source"] for f in json.loads(baseline.read_text())["findings"]}
    assert sources == {"v1/metrics.csv"}
    code, out, _ = run_cli(capsys, "audit", v0, v1, v2, *ONLY, "--baseline", str(baseline),
                           "--fail-on", "warning", "-f", "json")
    doc = json.loads(out)
    assert code == 1 and doc["summary"]["new"] >= 1
    assert {r["audit"]["source"] for r in doc["runs"]} == {
        "v0/metrics.csv", "v1/metrics.csv", "v2/metrics.csv"}
    assert all(r["audit"]["new"] == [] for r in doc["runs"]
               if r["audit"]["source"] != "v2/metrics.csv")
    # The files named, a quoted glob and their folder: one key each way.
    for args in ([str(tmp_path / "runs" / "*" / "metrics.csv")], [str(tmp_path / "runs")]):
        _, out, _ = run_cli(capsys, "audit", *args, *ONLY, "-f", "json")
        assert {r["audit"]["source"] for r in json.loads(out)["runs"]} == {
            "v0/metrics.csv", "v1/metrics.csv", "v2/metrics.csv"}
    _, out, _ = run_cli(capsys, "audit", v2, *ONLY, "-f", "json")  # one file: by its name
    assert [r["audit"]["source"] for r in json.loads(out)["runs"]] == ["metrics.csv"]


def test_a_shard_holding_two_files_named_alike_merges(capsys, tmp_path):
    v0, v1, _ = _versions(tmp_path / "runs")
    _, out, _ = run_cli(capsys, "audit", v0, v1, *ONLY, "-f", "json", "--shard", "1/1")
    (tmp_path / "s1.json").write_text(out)
    code, merged, err = run_cli(capsys, "audit-merge", str(tmp_path / "s1.json"), "-f", "json")
    assert code == 0, err
    assert len(json.loads(merged)["runs"]) == 2
    # Two runs of one name in one source (a W&B project's runs sharing a display name): one
    # report, not "in two reports".
    doc = json.loads(out)
    for run in doc["runs"]:
        run["audit"]["source"] = "wandb://e/p"
    (tmp_path / "s1.json").write_text(json.dumps(doc))
    code, merged, err = run_cli(capsys, "audit-merge", str(tmp_path / "s1.json"), "-f", "json")
    assert code == 0, err
    assert len(json.loads(merged)["runs"]) == 2


@pytest.mark.skipif(not REAL_RUNS.is_dir(), reason="shared real runs not present")
def test_a_notebook_and_its_csv_table_in_two_shards_merge_into_one_run(capsys, tmp_path):
    """The whole audit lists a run read in two formats once (a notebook and the table
    exported from it); with the two files in two shards, the merge had listed it twice (52
    runs against 51, helper-67). The shards keep a digest of each run's values for it."""
    notebook = REAL_RUNS / "notebooks" / "Qwen3_VL_(8B)-Vision-GRPO.ipynb"
    table = (REAL_RUNS / "notebook-tables"
             / "Qwen3_VL_(8B)-Vision-GRPO__2025-10-14_4480b9c4_4d11ec.csv")
    # Two folders whose files fall in different shards of 2.
    a, b = next((a, b) for a in "abcdefgh" for b in "ijklmnop"
                if shard_of(f"{a}/{notebook.name}", 2) != shard_of(f"{b}/{table.name}", 2))
    for folder, src in ((a, notebook), (b, table)):
        (tmp_path / "root" / folder).mkdir(parents=True)
        shutil.copy(src, tmp_path / "root" / folder / src.name)
    root = tmp_path / "root"
    _, whole = _audit(capsys, root, "-f", "json")
    paths = []
    for k in (1, 2):
        _, out = _audit(capsys, root, "-f", "json", "--shard", f"{k}/2")
        assert len(json.loads(out)["runs"]) == 1  # each shard holds one of the copies
        paths.append(tmp_path / f"s{k}.json")
        paths[-1].write_text(out)
    code, merged, err = run_cli(capsys, "audit-merge", *map(str, paths), "-f", "json")
    assert code in (0, 1), err
    assert len(json.loads(whole)["runs"]) == 1
    assert merged == whole


@pytest.fixture(scope="module")
def shard_doc(tmp_path_factory):
    """A valid one-shard report of two runs."""
    root = tmp_path_factory.mktemp("one-shard")
    for name in ("healthy", "entropy-collapse"):
        shutil.copy(example_path(name), root / f"{name}.csv")
    from grpo_doctor.audit import audit
    from grpo_doctor.config import Settings

    result = audit([str(root)], Settings(select=("entropy_collapse",)), jobs=1, shard=(1, 1))
    return result.to_dict()


def _set(doc, path, value):
    """``doc`` with the field at ``path`` (keys and indexes) set to ``value`` (or deleted when
    value is ``...``)."""
    import copy

    doc = copy.deepcopy(doc)
    obj = doc
    for key in path[:-1]:
        obj = obj[key]
    if value is ...:
        del obj[path[-1]]
    else:
        obj[path[-1]] = value
    return doc


BAD_RECORDS = [
    (("runs", 0), [1]), (("runs", 0), {}), (("runs", 0, "run", "n_steps"), ...),
    (("runs", 0, "status"), "bogus"), (("runs", 0, "context", "modified"), "yesterday"),
    (("runs", 0, "checks", 0, "onset_step"), 1e30), (("runs", 0, "checks", 0, "onset_step"),
                                                     10**30),
    (("runs", 0, "checks", 0, "status"), "fine"), (("runs", 0, "checks", 0), "x"),
    (("runs", 0, "audit"), None), (("runs", 0, "audit", "failing"), [3]),
    (("runs", 0, "audit", "new"), "yes"), (("runs", 0, "run", "name"), 5),
    (("runs", 0, "context", "config", "learning_rate"), "fast"), (("errors",), [7]),
    (("runs", 0, "run", "first_step"), True),
]


@pytest.mark.parametrize("path,value", BAD_RECORDS)
def test_merge_refuses_bad_records_in_one_line(capsys, tmp_path, shard_doc, path, value):
    (tmp_path / "s.json").write_text(json.dumps(_set(shard_doc, path, value)))
    code, _, err = run_cli(capsys, "audit-merge", str(tmp_path / "s.json"), "-f", "parquet",
                           "--output", str(tmp_path / "out.parquet"))
    assert code == 2, err
    assert "not a valid audit JSON report (" in err and len(err.strip().splitlines()) == 1


_JSON = st.recursive(st.one_of(st.none(), st.booleans(), st.integers(), st.floats(),
                               st.text(max_size=8)),
                     lambda inner: st.lists(inner, max_size=3)
                     | st.dictionaries(st.text(max_size=8), inner, max_size=3), max_leaves=6)


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data(), value=_JSON,
       fmt=st.sampled_from(["json", "junit", "markdown", "terminal"]))
def test_merge_never_fails_inside_on_any_field(capsys, tmp_path, shard_doc, data, value,
                                               fmt):
    paths = []

    def walk(obj, at):
        paths.append(at)
        items = obj.items() if isinstance(obj, dict) else enumerate(obj) \
            if isinstance(obj, list) else ()
        for key, child in items:
            walk(child, (*at, key))

    walk(shard_doc, ())
    path = data.draw(st.sampled_from([p for p in paths if p]))
    (tmp_path / "s.json").write_text(json.dumps(_set(shard_doc, path, value)))
    code, _, err = run_cli(capsys, "audit-merge", str(tmp_path / "s.json"), "-f", fmt)
    assert code in (0, 1, 2) and "internal error" not in err, err


def test_merge_refuses_shards_of_different_audits(capsys, tree, tmp_path):
    _, out = _audit(capsys, tree, "-f", "json", "--shard", "1/2")
    (tmp_path / "s1.json").write_text(out)
    _, out = _audit(capsys, tree, "-f", "json", "--shard", "2/2", "--fail-on", "warning")
    (tmp_path / "s2.json").write_text(out)
    code, _, err = run_cli(capsys, "audit-merge", str(tmp_path / "s1.json"),
                           str(tmp_path / "s2.json"))
    assert code == 2 and "a shard of a different audit than" in err
    _, out = _audit(capsys, tree, "-f", "json", "--shard", "2/2")
    (tmp_path / "s2.json").write_text(out)
    code, _, err = run_cli(capsys, "audit-merge", str(tmp_path / "s1.json"),
                           str(tmp_path / "s2.json"))
    assert code in (0, 1), err
