"""`grpo-doctor audit`: a folder of runs in several formats, every output format, baselines."""

import json
import os
import re
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from grpo_doctor import audit as auditing
from grpo_doctor.api import example_path
from grpo_doctor.errors import FetchError
from grpo_doctor.importers import load_runs
from grpo_doctor.reporters import audit_report as report
from tests.helpers import REPO, names_told_apart, run_cli

FIXTURES = Path(__file__).parent / "fixtures"
#: One source of each fixture format, where the fixture exists (they are built by others).
FIXTURE_SOURCES = [
    "tensorboard/simple_value", "tensorboard-csv/synthetic", "trainer_state/synthetic-run",
    "parquet", "jsonl/run.jsonl", "console/verl.log", "notebook/grpo.ipynb",
    "wandb-csv/export.csv", "long-csv/long.csv",
]
HOSTILE = ["</testcase><x>", "[red]x[/red]"]
ONLY = ["--select", "kl_drift", "--select", "entropy_collapse"]  # fast baseline tests
KL_AS_WARNING = ["--set", "kl_drift.stop_kl=1000", "--set", "kl_drift.adapt_kl=900"]


def _copy(name, dest):
    dest.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(example_path(name), dest)


def _hostile_csv(path):
    """One file, two runs (a run_id column) whose names are markup in every output format."""
    rows = ["run_id,step,train/kl,train/reward"]
    for name in HOSTILE:
        rows += [f'"{name}",{i},{0.05 + 0.3 * i},0.5' for i in range(1, 61)]
    path.write_text("\n".join(rows) + "\n")


def _fixture_sources():
    return [FIXTURES / s for s in FIXTURE_SOURCES if (FIXTURES / s).exists()]


@pytest.fixture(scope="module")
def tree(tmp_path_factory):
    root = tmp_path_factory.mktemp("runs")
    for name in ("healthy", "kl-drift", "entropy-collapse"):
        _copy(name, root / f"{name}.csv")
    _copy("grad-explosion", root / "nested" / "deeper" / "grad-explosion.csv")
    (root / "nested" / "run.csv").write_bytes(bytes(range(256)) * 8)  # binary garbage
    (root / "empty.csv").write_bytes(b"")
    (root / "train.py").write_text("import os, sys\n")  # not logs: passed over silently
    (root / "plot.png").write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(64))
    (root / "config.json").write_text('{"learning_rate": 1e-6, "beta": 0.04}\n')
    (root / "notes.txt").write_text("nothing to see\n")
    _hostile_csv(root / "hostile.csv")
    for src in _fixture_sources():
        dest = root / "fixtures" / src.relative_to(FIXTURES)
        if src.is_dir():
            shutil.copytree(src, dest)
        else:
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(src, dest)
    return root


@pytest.fixture(scope="module")
def result(tree):
    calls = []
    out = auditing.audit([str(tree)], jobs=1, progress=lambda done, total: calls.append(
        (done, total)))
    assert calls[0][0] == 0 and calls[-1][0] == calls[-1][1] == len(calls) - 1
    return out


def test_every_source_is_a_run_or_an_error(tree, result):
    by_source = {}
    for run in result.runs:
        by_source.setdefault(run.source, []).append(run.name)
    errors = {e.source: e.error for e in result.errors}
    # The same logged values read through another format are listed once, the copy said.
    copies = {p.source: p.why for p in result.passed_over if p.copy}
    formats = {run.source: run.record["run"]["format"] for run in result.runs}
    assert "fixtures/tensorboard-csv/synthetic" in copies  # the TensorBoard run's CSV download
    for why in copies.values():
        kept, read_as = re.fullmatch(r"the same logged values as (.+) \(read as (\S+)\): "
                                     r"listed once", why).groups()
        assert formats[kept] == read_as
    assert sorted(by_source["hostile.csv"]) == sorted(HOSTILE)
    assert by_source["nested/deeper/grad-explosion.csv"] == ["grad-explosion"]
    assert by_source["healthy.csv"] == ["healthy"]
    assert "not a training log" in errors["nested/run.csv"]
    assert "empty" in errors["empty.csv"]
    assert not {"train.py", "plot.png", "config.json", "notes.txt"} & (set(by_source) | set(
        errors))
    # Each fixture is one source, read exactly as `diagnose` reads it (folders not descended).
    for src in _fixture_sources():
        key = (Path("fixtures") / src.relative_to(FIXTURES)).as_posix()
        try:
            expected = sorted(r.name for r in load_runs(tree / key))
        except Exception:
            assert key in errors
            continue
        if key in copies:
            continue
        assert sorted(by_source[key]) == expected, key
    assert all(k in {*(f"fixtures/{s}" for s in FIXTURE_SOURCES), "hostile.csv", "healthy.csv",
                     "kl-drift.csv", "entropy-collapse.csv", "nested/deeper/grad-explosion.csv"}
               for k in by_source), sorted(by_source)


def test_order_is_worst_first_then_by_name(result):
    rank = [auditing.SEVERITY[r.status] for r in result.runs]
    assert rank == sorted(rank, reverse=True)
    for a, b in zip(result.runs, result.runs[1:]):
        if a.status == b.status:
            assert a.label <= b.label
    assert [e.source for e in result.errors] == sorted(e.source for e in result.errors)


def test_json_contract_and_exit_code_and_parallel_is_identical(capsys, tree, result):
    code, out, err = run_cli(capsys, "audit", str(tree), "-f", "json", "--jobs", "2")
    assert code == 1 and not err
    assert out == report.render_audit_json(result)  # --jobs 2 == --jobs 1
    doc = json.loads(out)
    assert set(doc) == {"schema_version", "runs", "errors", "summary"}
    assert doc["schema_version"] == 2
    s = doc["summary"]
    assert s["runs"] == len(doc["runs"]) == (s["critical"] + s["warning"] + s["healthy"]
                                              + s["inconclusive"])
    assert s["errors"] == len(doc["errors"]) == 2 and s["new"] is None
    for run in doc["runs"]:
        assert {"schema_version", "run", "metrics", "checks", "status"} <= set(run)
        assert set(run["audit"]) == {"source", "label", "failing", "new", "worsened"}
    kl = next(r for r in doc["runs"] if r["run"]["name"] == "kl-drift")
    assert "kl_drift" in kl["audit"]["failing"]
    healthy = next(r for r in doc["runs"] if r["run"]["name"] == "healthy")
    assert healthy["status"] == "healthy" and healthy["audit"]["failing"] == []
    assert {e["source"] for e in doc["errors"]} == {"empty.csv", "nested/run.csv"}


def test_junit_structure(result):
    root = ET.fromstring(report.render_audit_junit(result).encode())
    assert root.tag == "testsuites"
    suites = root.findall("testsuite")
    assert len(suites) == len(result.runs) + len(result.errors)
    for key in ("tests", "failures", "errors", "skipped"):
        assert int(root.get(key)) == sum(int(s.get(key)) for s in suites)
    by_name = {s.get("name"): s for s in suites}
    kl = by_name["kl-drift"]
    cases = {c.get("name"): c for c in kl.findall("testcase")}
    assert int(kl.get("tests")) == len(cases) and all(
        c.get("classname") == "kl-drift" for c in cases.values())
    failure = cases["kl_drift"].find("failure")
    assert failure is not None and failure.get("message") and "What to change" in failure.text
    assert int(kl.get("failures")) == sum(c.find("failure") is not None for c in cases.values())
    skipped = [c for c in cases.values() if c.find("skipped") is not None]
    assert int(kl.get("skipped")) == len(skipped) >= 1
    assert all(c.find("skipped").get("message") for c in skipped)
    healthy = by_name["healthy"]
    assert healthy.get("failures") == "0" and healthy.find("properties/property[@name='source']"
                                                           ).get("value") == "healthy.csv"
    broken = by_name["nested/run.csv"]
    assert broken.get("errors") == "1" and broken.find("testcase/error").get("message")
    assert set(HOSTILE) <= set(by_name)  # names are escaped, so they parse back literally
    assert {c.get("classname") for c in by_name[HOSTILE[0]].findall("testcase")} == {HOSTILE[0]}


def test_markdown(result):
    md = report.render_audit_markdown(result)
    assert md.startswith("## grpo-doctor audit: ")
    assert ("| run | status | root cause | do first | findings (onset step) | logged | format "
            "| source |") in md
    # one line per run: what broke first and what to change first
    kl = next(r for r in result.runs if r.label == "kl-drift")
    cause = kl.record["root_cause"]
    row = next(line for line in md.splitlines() if line.startswith("| kl-drift |"))
    assert row.startswith(f"| kl-drift | 🛑 critical | {cause['mode']}@{cause['step']:,} | ")
    assert re.search(r"roll back to a checkpoint from (before step|step [\d,]+ or before)",
                     row) and "**kl_drift@" in row
    assert "(the last logged step" not in row and "(the best reward" not in row  # folded
    healthy = next(line for line in md.splitlines() if line.startswith("| healthy |"))
    assert healthy.startswith("| healthy | ✅ healthy |  |  | – |")
    assert "### Unreadable sources" in md and "| nested/run.csv |" in md
    # each failing run's details folded: root cause, the whole plan, its failing findings
    assert "### Failing runs" in md
    details = md.split("<details><summary>kl-drift: critical, root cause ")[1]
    details = details.split("</details>")[0]
    assert f"**Do this first**: {cause['first_action']}" in details
    assert "What to change, first things first:" in details
    assert all(f"\n{k}. " in details for k in range(1, len(kl.record["plan"]) + 1))
    assert details.count(cause["first_action"]) == 1  # plan item 1 points to it
    assert "\n1. do this first, above (" in details
    assert "&lt;/testcase>&lt;x>" in md and "</testcase>" not in md
    assert "\\[red\\]x\\[/red\\]" in md


def test_terminal_table_and_github_annotations(capsys, tree, monkeypatch):
    small = tree.parent / "small"
    small.mkdir(exist_ok=True)
    for name in ("hostile.csv", "healthy.csv", "empty.csv"):
        shutil.copy(tree / name, small / name)
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    code, out, _ = run_cli(capsys, "audit", str(small), "-j", "1")
    assert code == 1
    lines = out.splitlines()
    notes = [line for line in lines if line.startswith("::")]
    assert any(line.startswith("::error title=grpo-doctor kl_drift::[red]x[/red]: ")
               for line in notes)
    assert any(line.startswith("::error title=grpo-doctor unreadable log::empty.csv: ")
               for line in notes)
    table = "\n".join(line for line in lines if not line.startswith("::"))
    for name in HOSTILE:
        assert name in table  # literally: not rich markup
    assert "healthy" in table and "empty.csv" in table and "error" in table
    assert "3 runs: 2 critical, 0 warning, 1 healthy; 1 unreadable" in table
    monkeypatch.delenv("GITHUB_ACTIONS")
    code, out, _ = run_cli(capsys, "audit", str(small), "-j", "1", "-f", "markdown")
    assert "::" not in out  # annotations only in terminal mode


def test_annotation_escaping():
    record = {"run": {"name": "a,b:c", "format": "csv", "n_steps": 3}, "status": "critical",
              "checks": [{"mode": "kl_drift", "status": "critical", "onset_step": 2,
                          "summary": "100% bad\r\nnext", "remedies": [], "reason": None}]}
    run = auditing.AuditedRun("a.csv", "a,b:c", record, failing=("kl_drift",))
    out = report.github_annotations(auditing.AuditResult((run,), ()))
    assert out == "::error title=grpo-doctor kl_drift::a,b:c: 100%25 bad%0D%0Anext\n"


def test_baseline_round_trip_new_and_worsened(capsys, tmp_path):
    runs = tmp_path / "checkout" / "runs"
    for name in ("kl-drift", "healthy"):
        _copy(name, runs / f"{name}.csv")
    warn_base, base = tmp_path / "warn.json", tmp_path / "base.json"
    # KL drift accepted as a warning; under the default thresholds it is critical: worsened.
    code, _, _ = run_cli(capsys, "audit", str(runs), *ONLY, *KL_AS_WARNING, "-j", "1",
                         "--write-baseline", str(warn_base))
    assert code == 0
    doc = json.loads(warn_base.read_text())
    assert doc == {"schema_version": 1, "findings": [
        {"run": "kl-drift", "source": "kl-drift.csv", "mode": "kl_drift", "status": "warning"}]}
    code, _, _ = run_cli(capsys, "audit", str(runs), *ONLY, *KL_AS_WARNING, "-j", "1",
                         "--baseline", str(warn_base), "--fail-on", "warning")
    assert code == 0
    code, out, _ = run_cli(capsys, "audit", str(runs), *ONLY, "-j", "1", "--baseline",
                           str(warn_base), "-f", "json")
    kl = json.loads(out)["runs"][0]
    assert code == 1 and kl["audit"]["worsened"] == ["kl_drift"] == kl["audit"]["failing"]
    # Today's findings accepted: clean; the baseline survives moving the checkout.
    code, _, _ = run_cli(capsys, "audit", str(runs), *ONLY, "-j", "1", "--write-baseline",
                         str(base))
    assert code == 0
    moved = tmp_path / "elsewhere"
    shutil.move(str(tmp_path / "checkout"), moved)
    runs = moved / "runs"
    code, _, _ = run_cli(capsys, "audit", str(runs), *ONLY, "-j", "1", "--baseline", str(base))
    assert code == 0
    # A new failing run: exit 1, reported as new.
    _copy("entropy-collapse", runs / "later" / "entropy-collapse.csv")
    code, out, _ = run_cli(capsys, "audit", str(runs), *ONLY, "-j", "1", "--baseline",
                           str(base), "-f", "json")
    doc = json.loads(out)
    new = next(r for r in doc["runs"] if r["run"]["name"] == "entropy-collapse")
    assert code == 1 and new["audit"]["new"] == ["entropy_collapse"]
    assert doc["summary"]["new"] == 1 and doc["summary"]["worsened"] == 0
    code, out, _ = run_cli(capsys, "audit", str(runs), *ONLY, "-j", "1", "--baseline",
                           str(base))
    assert "entropy_collapse@" in out and "(new)" in out
    code, _, err = run_cli(capsys, "audit", str(runs), *ONLY, "--write-baseline", str(base))
    assert code == 2 and "already exists" in err


def test_output_file_is_atomic_and_not_overwritten(capsys, tmp_path):
    _copy("healthy", tmp_path / "runs" / "healthy.csv")
    out = tmp_path / "junit.xml"
    code, stdout, _ = run_cli(capsys, "audit", str(tmp_path / "runs"), "-f", "junit", "-o",
                              str(out))
    assert code == 0 and stdout == "" and ET.parse(out).getroot().get("failures") == "0"
    code, _, err = run_cli(capsys, "audit", str(tmp_path / "runs"), "-f", "junit", "-o",
                           str(out))
    assert code == 2 and "already exists" in err


def test_globs_since_and_explicit_files(capsys, tmp_path):
    runs = tmp_path / "runs"
    _copy("healthy", runs / "a" / "new.csv")
    _copy("healthy", runs / "b" / "old.csv")
    os.utime(runs / "b" / "old.csv", (0, 86400 * 365))  # 1971
    res = auditing.audit([str(runs / "**" / "*.csv")], jobs=1, settings=None)
    assert sorted(r.source for r in res.runs) == ["a/new.csv", "b/old.csv"]
    res = auditing.audit([str(runs)], jobs=1, since=auditing.parse_since("2000-01-01"))
    assert [r.source for r in res.runs] == ["a/new.csv"]
    # Nothing modified since the cutoff: a quiet day for a nightly audit, exit 0 and said so
    # (not "no training log found", exit 2, which failed the job on every quiet day).
    code, out, err = run_cli(capsys, "audit", str(runs / "b" / "old.csv"), "--since",
                             "2000-01-01T00:00:00Z", "-f", "json")
    assert code == 0 and "no training log modified since 2000-01-01" in err
    assert json.loads(out)["runs"] == []
    # A path that does not exist is still an error, --since or not.
    code, _, err = run_cli(capsys, "audit", str(runs / "gone"), "--since", "2000-01-01")
    assert code == 2 and "no such file" in err


@pytest.mark.parametrize("args,message", [
    (["audit"], "Missing argument"),
    (["audit", "/no/such/folder"], "/no/such/folder: no such file or folder"),
    (["audit", "/no/such/*.csv"], "matches no file or folder"),
    (["audit", ".", "--format", "xml"], "--format must be terminal, json, junit, markdown or"),
    (["audit", ".", "--since", "last week"], "--since takes a date"),
    (["audit", ".", "--jobs", "0"], "--jobs must be at least 1"),
    (["audit", ".", "--select", "nope"], "unknown failure mode"),
    (["audit", ".", "--baseline", "/no/base.json"], "baseline not found"),
    (["audit", ".", "--baseline", "a", "--write-baseline", "b"], "not both"),
    # An empty shard spec was no shard at all (the whole audit, as a shard's report).
    (["audit", ".", "--shard", ""], "--shard takes K/N with 1 <= K <= N (e.g. 3/8), got ''"),
    (["audit", ".", "--shard", " "], "--shard takes K/N with 1 <= K <= N (e.g. 3/8), got ' '"),
    (["audit", ".", "--shard", "0/3"], "--shard takes K/N"),
    (["audit", ".", "--shard", "1/"], "--shard takes K/N"),
])
def test_usage_errors_exit_2(capsys, args, message):
    code, out, err = run_cli(capsys, *args)
    assert code == 2 and err.startswith("grpo-doctor: error: ") and err.count("\n") == 1
    assert message in err


def test_bad_baseline_file(capsys, tmp_path):
    bad = tmp_path / "b.json"
    bad.write_text('{"findings": 3}')
    code, _, err = run_cli(capsys, "audit", str(tmp_path), "--baseline", str(bad))
    assert code == 2 and "not a grpo-doctor baseline" in err


def test_nothing_readable_exits_2(capsys, tmp_path):
    (tmp_path / "train.py").write_text("x = 1\n")
    code, _, err = run_cli(capsys, "audit", str(tmp_path))
    assert code == 2 and "no training log found" in err
    (tmp_path / "broken.csv").write_bytes(b"\x00\x01")
    code, out, _ = run_cli(capsys, "audit", str(tmp_path), "-f", "json")
    assert code == 2 and json.loads(out)["errors"][0]["source"] == "broken.csv"


def test_a_folder_named_that_holds_no_log_is_an_error_row(capsys, tmp_path):
    """A folder given to audit beside a log, holding only a config.json (or nothing): an error
    row, as a path that does not exist is; it was left out of the report without a word."""
    _copy("healthy", tmp_path / "good.csv")
    cfg = tmp_path / "cfg"
    cfg.mkdir()
    (cfg / "config.json").write_text('{"learning_rate": 1e-6, "beta": 0.04}')
    empty = tmp_path / "empty"
    empty.mkdir()
    code, out, err = run_cli(capsys, "audit", str(tmp_path / "good.csv"), str(cfg), str(empty),
                             "-f", "json")
    assert code == 0 and err == ""
    doc = json.loads(out)
    assert [r["run"]["name"] for r in doc["runs"]] == ["good"]
    assert doc["errors"] == [
        {"source": str(cfg), "error": f"no training log found in {cfg}"},
        {"source": str(empty), "error": f"no training log found in {empty}"},
    ]
    # Alone, or with each other only, still one line and exit 2 naming every folder.
    code, out, err = run_cli(capsys, "audit", str(cfg), str(empty))
    assert (code, out) == (2, "")
    assert err == f"grpo-doctor: error: no training log found in {cfg}, {empty}\n"
    # With a path that does not exist, that path is the error said.
    code, _, err = run_cli(capsys, "audit", str(cfg), str(tmp_path / "gone"))
    assert (code, err) == (2, f"grpo-doctor: error: {tmp_path / 'gone'}: no such file or folder\n")
    # A subfolder holding no log, found while searching, is no error: it is passed over.
    (tmp_path / "parent" / "sub").mkdir(parents=True)
    _copy("healthy", tmp_path / "parent" / "run.csv")
    shutil.copy(cfg / "config.json", tmp_path / "parent" / "sub" / "config.json")
    code, out, _ = run_cli(capsys, "audit", str(tmp_path / "parent"), "-f", "json")
    assert code == 0 and json.loads(out)["errors"] == []
    # --strict makes the unreadable folder fail the audit, as any unreadable source does.
    code, _, _ = run_cli(capsys, "audit", str(tmp_path / "good.csv"), str(cfg))
    assert code == 0
    code, _, _ = run_cli(capsys, "audit", str(tmp_path / "good.csv"), str(cfg), "--strict")
    assert code == 1


def test_strict_makes_unreadable_logs_fail(capsys, tmp_path):
    _copy("healthy", tmp_path / "healthy.csv")
    (tmp_path / "broken.jsonl").write_text("not json at all\n")
    assert run_cli(capsys, "audit", str(tmp_path), "-j", "1")[0] == 0
    assert run_cli(capsys, "audit", str(tmp_path), "-j", "1", "--strict")[0] == 1


def test_a_failing_source_never_stops_the_rest(tmp_path, monkeypatch):
    _copy("healthy", tmp_path / "healthy.csv")
    _copy("kl-drift", tmp_path / "boom.csv")
    real = auditing.diagnose

    def diagnose(run, cfg):
        if run.name == "boom":
            raise ValueError("bad things")
        return real(run, cfg)

    def load_runs(source, **kwargs):
        if str(source).startswith("wandb://"):
            raise FetchError("wandb://me/proj: no credentials")
        return real_load(source, **kwargs)

    real_load = auditing.load_runs
    monkeypatch.setattr(auditing, "diagnose", diagnose)
    monkeypatch.setattr(auditing, "load_runs", load_runs)
    res = auditing.audit([str(tmp_path), "wandb://me/proj"], jobs=1)
    assert [r.name for r in res.runs] == ["healthy"]
    assert {e.source: e.error for e in res.errors} == {
        "boom.csv": "internal error: ValueError: bad things",
        "wandb://me/proj": "wandb://me/proj: no credentials"}


def test_audit_html_folder_has_an_index_linking_each_report(capsys, tmp_path):
    logs = tmp_path / "logs"
    logs.mkdir()
    for name in ("healthy", "kl-drift"):
        shutil.copy(example_path(name), logs / f"{name}.csv")
    (logs / "broken.csv").write_bytes(b"\x00\x01garbage")
    out = tmp_path / "report"
    code, _, _ = run_cli(capsys, "audit", str(logs), "-j", "1", "--html", str(out), "-f", "json")
    assert code == 1
    pages = sorted(p.name for p in out.iterdir())
    assert "index.html" in pages and len(pages) == 3
    index = (out / "index.html").read_text()
    for page in pages:
        if page != "index.html":
            assert page in index and "<svg" in (out / page).read_text()
    assert "broken.csv" in index


def _nan_from(path, step, n=1200):
    """A run whose loss turns NaN at ``step`` (an onset printed with a thousands comma)."""
    rows = ["step,train/loss,train/reward,train/kl"]
    rows += [f"{i},{'nan' if i >= step else 0.5},{0.3 + i / (4 * n)},{0.01}" for i in
             range(1, n + 1)]
    path.write_text("\n".join(rows) + "\n")


def _first_cells_and_tokens(text):
    """The run cells (first column) and every word of the findings column, line by line (a
    narrow table has no format column)."""
    cells, words = [], []
    for line in text.splitlines():
        parts = line.split(" │ ")
        if len(parts) in (4, 5):
            cells.append(parts[0].strip())
            words += parts[2].split()
    return cells, words


@pytest.mark.parametrize("width", [80, 100])
def test_the_table_fits_the_terminal_without_cutting_a_step_or_a_name(capsys, tmp_path,
                                                                      monkeypatch, width):
    """At 80 columns no line is wider, no ``mode@step`` or number is cut in two, and long
    run names keep their start and end (kept apart) instead of wrapping mid-word."""
    long = "nips-grpo-dynamics_exp1a_rho{}_seed{}_{}"
    for rho, seed, example in (("0.50", 43, "entropy-collapse"), ("1.00", 42, "kl-drift"),
                               ("0.70", 44, "grad-explosion")):
        _copy(example, tmp_path / (long.format(rho, seed, example) + ".csv"))
    for stamp in ("120223", "181457"):  # names that differ only before a shared end
        _copy("entropy-collapse", tmp_path / f"20251022_{stamp}_run_terminal.csv")
    _nan_from(tmp_path / "agent-r1-30_nan_step1083_a_very_long_run_name.csv", 1083)
    result = auditing.audit([str(tmp_path)], jobs=1)
    expected = {f"{c['mode']}@{c['onset_step']:,}" for r in result.runs for c in r.findings}
    assert "numerical_failure@1,083" in expected and len(result.runs) == 6
    monkeypatch.setenv("COLUMNS", str(width))
    _, out, _ = run_cli(capsys, "audit", str(tmp_path), "-j", "1")
    for text in (out, report.render_audit_text(result, width=width)):
        lines = text.splitlines()
        assert max(len(line) for line in lines) <= width
        cells, words = _first_cells_and_tokens(text)
        assert expected <= {w.rstrip(",") for w in words}  # every token whole, on one line
        names = [c for c in cells if c]  # one line per name
        assert len(names) == len(result.runs)
        assert names_told_apart(names, [r.label for r in result.runs])
        assert any(n.startswith("nips-grpo") and n.endswith("entropy-collapse")
                   for n in names)  # both ends kept


def test_a_named_path_that_does_not_exist_is_an_error_row(capsys, tmp_path):
    """`audit good_dir nosuch` audits good_dir and reports nosuch, as a named unreadable file
    is; only when nothing at all could be read is it a usage error (exit 2)."""
    good = tmp_path / "good"
    _copy("healthy", good / "healthy.csv")
    missing, pattern = str(tmp_path / "nosuch"), str(tmp_path / "no" / "*.csv")
    code, out, err = run_cli(capsys, "audit", str(good), missing, pattern, "-j", "1", "-f",
                             "json")
    report = json.loads(out)
    assert (code, err) == (0, "") and [r["status"] for r in report["runs"]] == ["healthy"]
    assert sorted(report["errors"], key=str) == sorted([
        {"source": missing, "error": f"{missing}: no such file or folder"},
        {"source": pattern, "error": f"{pattern}: the pattern matches no file or folder"}],
        key=str)
    assert run_cli(capsys, "audit", str(good), missing, "-j", "1", "--strict")[0] == 1
    code, out, _ = run_cli(capsys, "audit", str(good), missing, "-j", "1")
    assert code == 0 and "1 healthy; 1 unreadable" in out
    (tmp_path / "broken.csv").write_bytes(b"\x00\x01")  # nothing readable: exit 2, both rows
    code, out, err = run_cli(capsys, "audit", str(tmp_path / "broken.csv"), missing, "-f",
                             "json")
    assert code == 2 and len(json.loads(out)["errors"]) == 2
    assert err.startswith("grpo-doctor: error: none of the 2 sources could be read (") \
        and err.count("\n") == 1
    code, out, err = run_cli(capsys, "audit", str(tmp_path / "broken.csv"))
    assert code == 2 and "no run could be read: exit 2" in out and "passes" not in out
    assert err == f"grpo-doctor: error: {tmp_path / 'broken.csv'}: not a training log " \
        "grpo-doctor can read (file format not recognised)\n"
    code, out, err = run_cli(capsys, "audit", missing, str(tmp_path / "also-missing"))
    assert (code, out) == (2, "") and err == f"grpo-doctor: error: {missing}: no such file or " \
        "folder\n"


def test_a_new_tag_stays_with_its_finding_when_the_cell_wraps(capsys, tmp_path, monkeypatch):
    """At 80 columns "(new)" wrapped to the next line, beside the next finding:
    "advantage_collapse@40" / "(new), length_hacking@45" read as tagging the wrong one."""
    runs = tmp_path / "runs"
    _copy("entropy-collapse", runs / "a_run_with_a_long_enough_name_to_squeeze.csv")
    base = tmp_path / "base.json"
    base.write_text(json.dumps({"schema_version": 1, "findings": []}))
    monkeypatch.setenv("COLUMNS", "80")
    code, out, _ = run_cli(capsys, "audit", str(runs), "-j", "1", "--baseline", str(base))
    assert code == 1 and "(new)" in out
    cells = [line.split(" │ ")[2].strip() for line in out.splitlines()
             if line.count(" │ ") >= 3]
    assert cells and not any(c.startswith("(") for c in cells)
    assert all(" (new)" not in c for c in cells)


def test_markdown_details_failing_findings_in_the_order_they_began(tmp_path):
    shutil.copytree(REPO / "tests/fixtures/corpus/20_lr_warmup_to_0.3", tmp_path / "warmup")
    res = auditing.audit([str(tmp_path)], jobs=1)
    md = report.render_audit_markdown(res)
    (run,) = res.runs
    onsets = {c["mode"]: c["onset_step"] for c in run.findings}
    detailed = re.findall(r"^- \*\*(\w+)@[\d,]+\*\* \(", md, flags=re.M)
    assert len(detailed) >= 3
    assert [onsets[m] for m in detailed] == sorted(onsets[m] for m in detailed)


@pytest.fixture(scope="module")
def formats_audit(tmp_path_factory):
    """One run in each format the fixtures hold, beside a failing corpus run (TensorBoard) and
    a failing example (CSV), audited."""
    root = tmp_path_factory.mktemp("formats")
    for src in _fixture_sources():
        dest = root / src.relative_to(FIXTURES).as_posix().replace("/", "__")
        (shutil.copytree if src.is_dir() else shutil.copy)(src, dest)
    shutil.copytree(REPO / "tests/fixtures/corpus/20_lr_warmup_to_0.3", root / "warmup")
    shutil.copytree(REPO / "tests/fixtures/corpus/22_entropy_bonus_0.5", root / "bonus")
    _copy("kl-drift", root / "kl-drift.csv")
    return auditing.audit([str(root)], jobs=1)


def test_every_audit_report_says_each_failing_runs_root_cause_and_first_action(formats_audit):
    result = formats_audit
    failing = [r for r in result.runs if r.failing]
    assert len(failing) >= 3 and len({r.record["run"]["format"] for r in failing}) >= 2
    text = report.render_audit_text(result, width=100)
    md = report.render_audit_markdown(result)
    junit = ET.fromstring(report.render_audit_junit(result).encode())
    notes = report.github_annotations(result)
    verbose = report.render_audit_text(result, width=100, verbose=True)
    for run in failing:
        cause = run.record["root_cause"]
        where = f"{cause['mode']}@{cause['step']:,}"
        first = report.without_asides(cause["first_action"])
        assert first and len(first) <= len(cause["first_action"])
        # terminal: the run's cell says it (words may wrap, so compare without spaces)
        flat = re.sub(r"[\s│]+", "", text)
        assert re.sub(r"\s+", "", f"→ root {where} · do first: {first}") in flat
        # markdown: on the run's line
        label = report.escape(run.label)
        row = next(line for line in md.splitlines() if line.startswith(f"| {label} |"))
        assert f"| {report.escape(where)} | {report.escape(first)} |" in row
        # JUnit: the root cause's failing testcase names it in its message
        suite = next(s for s in junit.findall("testsuite") if s.get("name") == run.label)
        case = next(c for c in suite.findall("testcase") if c.get("name") == cause["mode"])
        message = case.find("failure").get("message")
        assert message.startswith("root cause: ") and message.endswith(f"; do first: {first}")
        props = {p.get("name"): p.get("value") for p in suite.findall("properties/property")}
        assert props["root_cause"] == where and props["first_action"] == first
        # annotations: the root cause's carries the first action
        assert f"{run.label}: " in notes and f"Root cause; do first: {first}" in notes
        # -v: the whole plan, numbered, in the order to act
        assert f"{run.label}: root cause {where}" in verbose
        plan = run.record["plan"]
        assert all(f"  {k}. " in verbose for k in range(1, len(plan) + 1))
    for run in result.runs:
        if not run.findings:  # a healthy run says nothing of a root cause
            label = report.escape(run.label)
            row = next(line for line in md.splitlines() if line.startswith(f"| {label} |"))
            assert row.split(" | ")[2:4] == ["", ""]


def test_an_older_shards_records_without_root_cause_still_render():
    record = {"run": {"name": "old", "format": "csv", "n_steps": 3}, "status": "critical",
              "checks": [{"mode": "kl_drift", "status": "critical", "onset_step": 2,
                          "summary": "KL rose", "remedies": ["lower the lr"], "reason": None}]}
    run = auditing.AuditedRun("old.csv", "old", record, failing=("kl_drift",))
    result = auditing.AuditResult((run,), ())
    md = report.render_audit_markdown(result)
    assert "| old | 🛑 critical |  |  | **kl_drift@2** ✗ |" in md and "  - lower the lr" in md
    junit = report.render_audit_junit(result)
    assert 'message="KL rose"' in junit and "- lower the lr" in junit
    assert "→ root" not in report.render_audit_text(result)


_ONSETS = st.one_of(st.integers(0, 999), st.integers(0, 10**6), st.integers(0, 10**18))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(width=st.integers(40, 120), data=st.data())
def test_no_onset_is_cut_at_any_width(result, width, data):
    """Below 60 columns the table cut `likelihood_displacement@290` to `...@29` (and
    `@14` for 145): at every width each finding's onset appears whole, on one line, and no
    line is wider than the terminal (below the table's least width, one block per run)."""
    from dataclasses import replace

    runs = []
    for run in result.runs:
        checks = [dict(c, onset_step=data.draw(_ONSETS)) if c["status"] in ("warning",
                  "critical") else c for c in run.record["checks"]]
        new = tuple(c["mode"] for c in checks[:1] if data.draw(st.booleans()))
        runs.append(replace(run, record={**run.record, "checks": checks}, new=new or None))
    shown = replace(result, runs=tuple(runs))
    text = report.render_audit_text(shown, width=width)
    assert max(len(line) for line in text.splitlines()) <= width, text
    numbers = {n.rstrip(",") for n in re.findall(r"\d[\d,]*", text)}
    for run in shown.runs:
        for check in run.findings:
            assert f"{check['onset_step']:,}" in numbers, (check["onset_step"], text)


def test_a_warning_below_fail_on_still_says_what_broke_first():
    """Under --fail-on critical a warning run passes the audit, but a reviewer still needs its
    root cause and first action (a run that never learned its task is a warning)."""
    record = {"run": {"name": "w", "format": "csv", "n_steps": 300}, "status": "warning",
              "checks": [{"mode": "no_progress", "status": "warning", "onset_step": 1,
                          "summary": "not learning", "remedies": ["check the reward"],
                          "reason": None}],
              "root_cause": {"mode": "no_progress", "step": 1, "summary": "not learning",
                             "first_action": "check the reward (it never paid a right answer)"},
              "plan": [{"action": "check the reward", "for": ["no_progress"],
                        "treats": "root_cause"}]}
    run = auditing.AuditedRun("w.csv", "w", record, failing=())
    result = auditing.AuditResult((run,), ())
    md = report.render_audit_markdown(result)
    assert "| w | ⚠️ warning | no_progress@1 | check the reward |" in md
    # and its details are folded below the table, the first action said once
    details = md.split("### Runs with warnings (below --fail-on)", 1)[1]
    assert "**Do this first**: check the reward (it never paid a right answer)" in details
    assert "1. check the reward (no_progress)" in details
    assert "- **no_progress@1** (warning): not learning" in details
    assert "→ root no_progress@1 · do first: check the reward" in report.render_audit_text(
        result)


def test_a_markdown_document_in_a_folder_is_passed_over_not_an_error_row(capsys, tmp_path):
    """A Markdown document beside the logs (notes whose heading holds a comma, a table of
    prose: read as a CSV before) is passed over as a README is; a console capture saved as
    .md is still a run, and a document named on the command line is still an error."""
    _copy("healthy", tmp_path / "good.csv")
    (tmp_path / "ADVICE.md").write_text(
        "# What to do first, run by run\n\nSome prose, with commas.\n\n"
        "| run | what happened | do first |\n|---|---|---|\n| a.log | it broke | roll back |\n")
    shutil.copy(FIXTURES / "console" / "verl.log", tmp_path / "run_terminal.md")
    code, out, _ = run_cli(capsys, "audit", str(tmp_path), "-f", "json")
    doc = json.loads(out)
    assert code == 0 and doc["errors"] == [], doc["errors"]
    assert sorted(r["run"]["name"] for r in doc["runs"]) == ["good", "run_terminal"]
    res = auditing.audit([str(tmp_path)], jobs=1)
    assert any(p.source == "ADVICE.md" and "no training log in it" in p.why
               for p in res.passed_over)
    named = [str(tmp_path / "ADVICE.md"), str(tmp_path / "good.csv")]
    code, out, _ = run_cli(capsys, "audit", *named, "-f", "json")
    assert [e["source"] for e in json.loads(out)["errors"]] == ["ADVICE.md"]


def test_the_findings_column_lists_the_root_cause_first_among_equal_onsets(tmp_path, capsys):
    """A length finding at step 10 that is the root cause, beside equal groups also dated 10:
    the column lists the cause first, as diagnose does (it had listed the rule order)."""
    from tests.helpers import REAL_RUNS

    src = REAL_RUNS / "trl-console" / "20251022_120223_run_terminal.md"
    if not src.exists():
        pytest.skip("shared real runs not present")
    shutil.copy(src, tmp_path / src.name)
    code, out, err = run_cli(capsys, "audit", str(tmp_path), "-f", "markdown")
    row = next(line for line in out.splitlines() if line.startswith("| 20251022_120223"))
    assert re.search(r"length_hacking@10\W*( ✗)?, \**advantage_collapse@10", row), row


def test_a_text_log_with_comma_timestamps_is_passed_over_not_unreadable(tmp_path, capsys):
    """wandb's debug.log ("2026-12-06 11:11:39,323 INFO ...") reads as a CSV of no numbers:
    beside a run it is a document passed over, not an unreadable run (trial 41: "3 unreadable"
    on an audit of verl runs with their wandb folders)."""
    _copy("healthy", tmp_path / "run" / "metrics.csv")
    wandb = tmp_path / "run" / "wandb"
    wandb.mkdir()
    (wandb / "debug.log").write_text(
        "2026-12-06 11:11:39,323 INFO    MainThread:9682 [wandb_setup.py:_flush():81] "
        "Current SDK version is 0.31.0\n"
        "2026-12-06 11:11:39,324 INFO    MainThread:9682 [wandb_setup.py:_flush():81] "
        "Configure stats pid to 9682\n")
    code, out, _ = run_cli(capsys, "audit", str(tmp_path), "-f", "json", "-j", "1")
    result = json.loads(out)
    assert result["errors"] == [] and len(result["runs"]) == 1


def test_an_inconclusive_run_shows_what_every_step_shows_below_the_table(tmp_path, capsys):
    """Pasted excerpts audited together: a two-line log whose completions were all cut at the
    cap was one more "inconclusive" row with nothing below the table."""
    line = ('{{"grad_norm": 0.0, "completions/mean_length": 4096.0, '
            '"completions/clipped_ratio": 1.0, "frac_reward_zero_std": 1.0, "step": {k}}}\n')
    (tmp_path / "cut.jsonl").write_text(line.format(k=1) + line.format(k=2))
    (tmp_path / "fine.jsonl").write_text(
        '{"grad_norm": 0.5, "completions/clipped_ratio": 0.1, "frac_reward_zero_std": 0.2, '
        '"step": 1}\n')
    code, out, _ = run_cli(capsys, "audit", str(tmp_path))
    assert code == 0, out
    below = out.split("\n\n", 1)[1]
    assert "→ inconclusive · the logged steps show: every completion cut at the length cap" \
        in " ".join(below.split()), out
    assert "fine" not in below, out


def test_the_headline_tells_short_inconclusive_runs_from_runs_that_show_no_learning(
        tmp_path, capsys):
    """Pasted excerpts of one to eleven steps were counted among "inconclusive (no failure and
    no sign of learning)" (helper-55): too short to judge is another reason."""
    (tmp_path / "short.jsonl").write_text('{"step": 1, "reward": 0.5, "loss": 0.1}\n')
    _, out, _ = run_cli(capsys, "audit", str(tmp_path))
    assert "1 inconclusive (1 too short to judge)" in " ".join(out.split()), out


def test_a_root_cause_wrong_from_the_first_step_is_said_as_setup(tmp_path, capsys):
    """`length_hacking@1` alone read as a policy gaming length where the budget cut every
    answer from the first log (helper-83)."""
    rows = ["step,reward,completions/mean_length,completions/clipped_ratio"] + [
        f"{s},{0.1 + 0.001 * s},512,0.97" for s in range(1, 41)]
    (tmp_path / "cut.csv").write_text("\n".join(rows) + "\n")
    code, out, _ = run_cli(capsys, "audit", str(tmp_path))
    assert "→ root completion_budget_too_small@1 (seen as length_hacking; a setup problem)" \
        in " ".join(out.split()), out


def test_a_run_folders_console_copy_is_a_copy_not_a_log_with_no_metrics(tmp_path):
    """Trial 68's audit headline said "10 log files with no training metrics" of the consoles
    its -v listed as "another copy of the same run, no richer"."""
    history = [{"step": s, "loss": 0.01, "reward": round(0.2 + 0.01 * s, 4),
                "epoch": s / 40} for s in range(1, 41)]
    for name in ("run_a", "run_b"):
        state = tmp_path / name / "checkpoint-40"
        state.mkdir(parents=True)
        (state / "trainer_state.json").write_text(json.dumps(
            {"global_step": 40, "log_history": history}))
        (tmp_path / name / "console.log").write_text("".join(
            repr({k: v for k, v in e.items() if k != "step"}) + "\n" for e in history))
    result = auditing.audit([str(tmp_path)])
    assert len(result.runs) == 2
    assert all(p.copy for p in result.passed_over if p.source.endswith("console.log"))
    from grpo_doctor.reporters.audit_report import _headline

    assert "with no training metrics" not in _headline(result)


def test_a_run_named_after_the_audited_folder_is_labelled_by_its_source(tmp_path):
    """Events directly in real-runs/tensorboard/ are named after the folder above their
    generic one, "real-runs": the audit of real-runs showed a row of its own root's name, read
    as a summary row (helper-95). Its label is its source there."""
    root = tmp_path / "real-runs"
    events = Path(__file__).parent / "fixtures" / "tensorboard" / "simple_value"
    shutil.copytree(events, root / "tensorboard")
    (root / "csv").mkdir()
    shutil.copy(example_path("healthy"), root / "csv" / "run_b.csv")
    result = auditing.audit([str(root)], jobs=1)
    assert sorted(r.label for r in result.runs) == ["run_b", "tensorboard"], [
        r.label for r in result.runs]
    assert {r.name for r in result.runs} == {"real-runs", "run_b"}  # the keys stay


def test_a_log_of_metric_lines_in_a_format_not_read_is_an_error_row_not_passed_over(
        capsys, tmp_path):
    """Trial 74: a custom loop's log of metric lines in a format not read, in a folder of runs
    had been passed over as "a document with no console-log lines" (so, before its format was
    read, had DeepSpeed-Chat's with an inf loss). A README stays passed over."""
    (tmp_path / "good.csv").write_text("step,reward_mean\n" + "".join(
        f"{s},{0.1 + s / 100}\n" for s in range(1, 30)))
    (tmp_path / "train.log").write_text("".join(
        f"[rank0] it {s} >> loss={s / 1000:.4f} reward=0.00\n" for s in range(5)))
    (tmp_path / "README.md").write_text("# notes\nStep 1: loss=0.1, reward=0.2\n")
    code, out, _ = run_cli(capsys, "audit", str(tmp_path), "-f", "json")
    doc = json.loads(out)
    assert [e["source"] for e in doc["errors"]] == ["train.log"], doc["errors"]
    assert doc["errors"][0]["error"].startswith("metric lines in a format grpo-doctor does not "
                                                "read")
    assert all("train.log" not in p for p, _ in doc.get("passed_over", [])), doc


def test_notes_quoting_metric_lines_stay_passed_over(capsys, tmp_path):
    """h103: notes.txt and README.txt with a 'loss=0.1' or two had become error rows (and
    --strict failed the audit): only a .log or .out of metric lines is a log not read."""
    (tmp_path / "good.csv").write_text("step,reward_mean\n" + "".join(
        f"{s},{0.1 + s / 100}\n" for s in range(1, 30)))
    (tmp_path / "notes.txt").write_text("tried loss=0.1 then loss=0.2, reward=0.3\n")
    (tmp_path / "README.txt").write_text("Step 1: loss=0.1, reward=0.2\nStep 2: loss=0.1\n")
    _, out, _ = run_cli(capsys, "audit", str(tmp_path), "-f", "json")
    assert json.loads(out)["errors"] == []
