"""Bad input, driven through the CLI as a user meets it: never lie, never crash, never lose.

Each input ends either as exit 2 with exactly one stderr line naming the file and what is wrong
(the text is part of the interface and is asserted whole), or as a diagnosis whose report says
what was skipped or noted. The files are tests/fixtures/bad/ (scripts/make_bad_inputs.py says
how they were made); a symlink loop, an unreadable file and a 50 MB line are made here.

Also: hostile names (markup, XML, HTML) print literally in every output, logs are never
evaluated, wandb names never become paths, and --output never loses a file.
"""

from __future__ import annotations

import errno
import json
import os
import re
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from tests.test_cli import run_cli

BAD = Path(__file__).resolve().parent / "fixtures" / "bad"
PACKAGE = Path(__file__).resolve().parents[1] / "grpo_doctor"
TB_RUN = Path(__file__).resolve().parent / "fixtures" / "tensorboard" / "simple_value"
IS_ROOT = hasattr(os, "geteuid") and os.geteuid() == 0


def assert_error(capsys, args: list[str], expected: str, *, prefix: bool = False) -> None:
    """Exit 2 and exactly the one line ``grpo-doctor: error: <expected>`` on stderr."""
    code, out, err = run_cli(capsys, *args)
    assert code == 2, (out, err)
    assert out == ""
    assert err.count("\n") == 1 and "Traceback" not in err
    line = err.rstrip("\n")
    if prefix:
        assert line.startswith(f"grpo-doctor: error: {expected}"), line
    else:
        assert line == f"grpo-doctor: error: {expected}"


def diagnosis(capsys, path: Path | str, *extra: str) -> tuple[int, dict, list[str]]:
    """(exit code, the JSON report, the notes of the Markdown report) of ``diagnose``."""
    code, out, err = run_cli(capsys, "diagnose", str(path), "-f", "json", *extra)
    assert code in (0, 1) and err == "", err
    report = json.loads(out)
    code_md, md, _ = run_cli(capsys, "diagnose", str(path), "-f", "markdown", *extra)
    assert code_md == code
    notes = [re.sub(r"\\(.)", r"\1", line[len("> note: "):])
             for line in md.splitlines() if line.startswith("> note: ")]
    return code, report, notes


def check(report: dict, mode: str) -> dict:
    return next(c for c in report["checks"] if c["mode"] == mode)


# --- one-line errors -----------------------------------------------------------------------


@pytest.mark.parametrize("name,message", [
    ("empty.csv", "the file is empty"),
    ("header-only.csv", "the CSV has a header but no rows"),
    ("no-table.ipynb", "no training progress table in the notebook"),
    ("no-log-history/trainer_state.json", "no log_history in the trainer state"),
])
def test_unreadable_inputs_are_one_line_errors(capsys, name, message):
    path = BAD / name
    assert_error(capsys, ["diagnose", str(path)], f"{path}: {message}")


def test_garbage_is_not_a_training_log(capsys):
    path = BAD / "garbage.bin"
    assert_error(capsys, ["diagnose", str(path)],
                 f"{path}: not a training log grpo-doctor can read (file format not recognised; "
                 "formats: ", prefix=True)


def test_a_trainer_output_folder_without_history_names_the_state_file(capsys):
    folder = BAD / "no-log-history"
    assert_error(capsys, ["diagnose", str(folder)],
                 f"{folder / 'trainer_state.json'}: no log_history in the trainer state")


@pytest.mark.parametrize("fmt,message", [
    ("tensorboard", "not a TensorBoard event file (no valid record at byte 0)"),
    ("wandb-offline", "not a W&B run file (no ':W&B' header)"),
    ("parquet", "not a readable parquet file"),
    ("notebook", "not a valid notebook (Expecting value at line 1)"),
    ("trainer-state", "not valid JSON (Expecting value at line 1)"),
    ("jsonl", "no line is a JSON object with a numeric value"),
    ("csv", "a CSV needs a header and at least one metric column"),
])
def test_forcing_a_format_on_garbage_says_why_it_is_not_one(capsys, fmt, message):
    path = BAD / "garbage.bin"
    assert_error(capsys, ["diagnose", str(path), "--input-format", fmt], f"{path}: {message}",
                 prefix=True)


# --- diagnoses that say what they noted or skipped -------------------------------------------


TB_FILE = "tb-truncated/events.out.tfevents.1700000000.bad"
TRUNCATED = "truncated final record at byte 9912 (run still being written?)"


@pytest.mark.parametrize("source,run,notes", [
    # content decides the format, not the name
    ("events.out.tfevents.1700000000.csv-inside", {"format": "csv", "n_steps": 60}, []),
    ("tensorboard-named.csv", {"format": "tensorboard", "n_steps": 60}, []),
    ("bom.csv", {"first_step": 1, "last_step": 60, "n_steps": 60}, []),
    ("no-step.csv", {"first_step": 0, "last_step": 59},
     ["no step column found: steps are row numbers"]),
    ("non-numeric.csv", {"n_steps": 60},
     ["reward: 3 cell(s) that are not numbers were read as gaps (e.g. 'abc')"]),
    ("duplicate-steps.csv", {"n_steps": 60},
     ["the step went backwards 1 time(s) (a resumed run?); 10 row(s) repeat a step logged "
      "before: the last value logged was kept"]),
    ("short-rows.csv", {"n_steps": 60},
     ["20 row(s) have fewer cells than the header: the missing cells are gaps"]),
    ("long-rows.csv", {"n_steps": 60},
     ["2 row(s) have more cells than the header: the extra cells were left out"]),
    ("latin1.csv", {"n_steps": 60},
     ["the file is not valid UTF-8: undecodable bytes were replaced (U+FFFD)"]),
    ("tb-truncated", {"format": "tensorboard", "last_step": 40}, [TRUNCATED]),
    (TB_FILE, {"format": "tensorboard", "last_step": 40}, [TRUNCATED]),
    ("tb-crc", {"format": "tensorboard", "n_steps": 60}, ["corrupt record at byte 7432 skipped"]),
    ("wandb-corrupt", {"name": "corrupt-block", "last_step": 240, "n_steps": 222},
     ["corrupt block at byte 29590 skipped"]),
])
def test_the_report_says_what_was_read_and_what_was_not(capsys, source, run, notes):
    code, report, said = diagnosis(capsys, BAD / source)
    assert {key: report["run"][key] for key in run} == run
    assert said == notes


def test_the_mapping_survives_a_renamed_file_a_bom_and_other_bytes(capsys):
    canonical = {"reward_mean", "entropy", "kl", "grad_norm", "loss"}
    assert set(diagnosis(capsys, BAD / "bom.csv")[1]["metrics"]) == canonical
    assert diagnosis(capsys, BAD / "tensorboard-named.csv")[1]["metrics"]["entropy"] == \
        "train/entropy"
    assert diagnosis(capsys, BAD / "latin1.csv")[1]["metrics"]["reward_mean"] == "reward"


def test_an_all_nan_metric_is_critical_from_its_first_step(capsys):
    code, report, _ = diagnosis(capsys, BAD / "all-nan.csv")
    nf = check(report, "numerical_failure")
    assert code == 1 and report["status"] == "critical"
    assert nf["status"] == "critical" and nf["onset_step"] == 1
    assert nf["summary"].startswith("non-finite values first at step 1: kl")
    assert check(report, "kl_drift")["status"] == "skipped"  # no finite kl to judge


def test_a_logged_inf_is_critical_at_its_step(capsys):
    code, report, _ = diagnosis(capsys, BAD / "inf.csv")
    nf = check(report, "numerical_failure")
    assert code == 1 and nf["status"] == "critical" and nf["onset_step"] == 30
    assert nf["summary"].startswith("non-finite values first at step 30: grad_norm")


def test_one_row_skips_the_rules_that_need_more_steps(capsys):
    code, report, _ = diagnosis(capsys, BAD / "one-row.csv")
    assert report["run"]["n_steps"] == 1 and code == 0
    for mode, reason in (("entropy_collapse", r"needs at least \d+ logged entropy values"),
                         ("reward_overfit", r"needs at least \d+ logged rewards$"),
                         ("entropy_blowup", r"needs at least \d+ logged entropy values$")):
        assert check(report, mode)["status"] == "skipped"
        assert re.match(reason, check(report, mode)["reason"]), check(report, mode)


# --- made at test time: symlink loops, unreadable files, a 50 MB line ------------------------


def _loop_folder(tmp_path: Path) -> Path:
    run = tmp_path / "run"
    (run / "sub").mkdir(parents=True)
    shutil.copy(next(TB_RUN.iterdir()), run / "sub")
    (run / "sub" / "up").symlink_to("..")  # a loop through the parent
    (run / "self").symlink_to("self")  # a link to itself (ELOOP)
    (run / "events.out.tfevents.1.loop").symlink_to("events.out.tfevents.1.loop")
    return run


def test_a_folder_with_symlink_loops_is_read_once(capsys, tmp_path):
    run = _loop_folder(tmp_path)
    code, report, _ = diagnosis(capsys, run)
    assert report["run"]["format"] == "tensorboard" and report["run"]["n_steps"] == 200


def test_a_folder_of_loops_and_no_log_is_not_a_training_log(capsys, tmp_path):
    folder = tmp_path / "loops"
    folder.mkdir()
    (folder / "self").symlink_to("self")
    (folder / "up").symlink_to("..")
    assert_error(capsys, ["diagnose", str(folder)],
                 f"{folder}: not a training log grpo-doctor can read (folder format not "
                 "recognised; formats: ", prefix=True)


def test_audit_of_a_folder_with_symlink_loops(capsys, tmp_path):
    run = _loop_folder(tmp_path)
    shutil.copy(BAD / "inf.csv", tmp_path)
    code, out, err = run_cli(capsys, "audit", str(tmp_path), "--jobs", "1", "-f", "json")
    assert code == 1 and err == ""
    assert {r["run"]["format"] for r in json.loads(out)["runs"]} == {"tensorboard", "csv"}
    assert run.exists()


@pytest.mark.skipif(IS_ROOT, reason="root reads a chmod 000 file; see the monkeypatched test")
def test_an_unreadable_file_is_permission_denied(capsys, tmp_path):
    path = tmp_path / "secret.csv"
    shutil.copy(BAD / "inf.csv", path)
    path.chmod(0)
    try:
        assert_error(capsys, ["diagnose", str(path)], f"{path}: permission denied")
    finally:
        path.chmod(0o600)


def _deny_open(monkeypatch: pytest.MonkeyPatch, target: Path) -> None:
    """Opening ``target`` raises PermissionError, as a chmod 000 file does for a non-root user."""
    real_open = Path.open

    def fake_open(self, *args, **kwargs):
        if Path(self) == target:
            raise PermissionError(errno.EACCES, "Permission denied", str(self))
        return real_open(self, *args, **kwargs)

    monkeypatch.setattr(Path, "open", fake_open)


@pytest.mark.parametrize("name,fmt", [
    ("inf.csv", None), ("inf.csv", "csv"), ("inf.csv", "long-csv"), ("inf.csv", "jsonl"),
    ("inf.csv", "console"), ("tensorboard-named.csv", "tensorboard"),
    ("wandb-corrupt/run-badblock.wandb", "wandb-offline"), ("no-table.ipynb", "notebook"),
    ("no-log-history/trainer_state.json", "trainer-state"),
])
def test_permission_error_while_reading_is_one_line(capsys, tmp_path, monkeypatch, name, fmt):
    path = tmp_path / Path(name).name
    shutil.copy(BAD / name, path)
    _deny_open(monkeypatch, path)
    args = ["diagnose", str(path)] + (["--input-format", fmt] if fmt else [])
    assert_error(capsys, args, f"{path}: permission denied")


def test_audit_reports_an_unreadable_file_and_reads_the_rest(capsys, tmp_path, monkeypatch):
    shutil.copy(BAD / "inf.csv", tmp_path / "a.csv")
    shutil.copy(BAD / "bom.csv", tmp_path / "b.csv")
    _deny_open(monkeypatch, tmp_path / "b.csv")
    code, out, err = run_cli(capsys, "audit", str(tmp_path), "--jobs", "1", "-f", "json")
    doc = json.loads(out)
    assert code == 1 and [r["run"]["name"] for r in doc["runs"]] == ["a"]
    assert doc["errors"] == [{"source": "b.csv", "error": f"{tmp_path / 'b.csv'}: permission "
                              "denied"}]


def test_a_50_mb_header_line_is_refused_quickly(capsys, tmp_path):
    path = tmp_path / "wide.csv"
    with path.open("w") as fh:
        fh.write("step")
        fh.write("".join(f",metric_{i}" for i in range(5_000_000)))  # ~ 60 MB, one line
    assert path.stat().st_size > 50 << 20
    assert_error(capsys, ["diagnose", str(path)],
                 f"{path}: the header has more than 20,000 columns (not a training log)")


def test_a_50_mb_line_of_text_is_not_a_log(capsys, tmp_path):
    path = tmp_path / "stdout.log"
    path.write_bytes(b"x" * (50 << 20))
    assert_error(capsys, ["diagnose", str(path), "--input-format", "console"],
                 f"{path}: no metric lines found (expected verl 'step:N - key:value' lines, "
                 "printed {'loss': ...} dicts or a Step | ... table)")


def test_a_50_mb_printed_dict_keeps_only_its_first_mib(capsys, tmp_path):
    path = tmp_path / "trl.log"
    path.write_text("{'loss': 0.5, " + "'reward': 1.0, " * ((50 << 20) // 15) + "\n")
    code, report, notes = diagnosis(capsys, path)
    assert report["run"]["n_steps"] == 1
    assert "1 printed dict(s) were cut off or not plain literals: only their complete numeric " \
           "entries were read" in notes


def _sparse_events(n: int) -> bytes:
    from tensorboard.compat.proto import event_pb2, summary_pb2

    from tests.importers.test_tensorboard import frame_records

    return frame_records([event_pb2.Event(step=i, summary=summary_pb2.Summary(
        value=[summary_pb2.Summary.Value(tag=f"k{i}", simple_value=1.0)])).SerializeToString()
        for i in range(n)])


def _sparse_wandb(n: int) -> bytes:
    from tests.importers.test_wandb_offline import history, write_log

    return write_log([history({f"k{i}": 1.0, "_step": i}, nested=False) for i in range(n)])


SPARSE = 12_000  # records, each at a new step under a new name: 144M cells for 12k values


@pytest.mark.parametrize("name,content,shape", [
    ("run.jsonl", lambda n: "".join(f'{{"step": {i}, "k{i}": 1.0}}\n' for i in range(n)),
     "12,000 steps x 12,001 metrics holding 24,000 values"),
    ("verl.log", lambda n: "".join(f"step:{i} - k{i}:1.0\n" for i in range(n)),
     "12,000 steps x 12,000 metrics holding 12,000 values"),
    ("long.csv", lambda n: "step,metric,value\n" + "".join(f"{i},k{i},1\n" for i in range(n)),
     "12,000 steps x 12,000 metrics holding 12,000 values"),
    ("run-sparse.wandb", _sparse_wandb, "12,000 steps x 12,001 metrics holding 24,000 values"),
    ("events.out.tfevents.1.sparse", _sparse_events,
     "12,000 steps x 12,000 metrics holding 12,000 values"),
])
def test_a_log_too_sparse_to_tabulate_is_refused(capsys, tmp_path, name, content, shape):
    path = tmp_path / name
    data = content(SPARSE)
    path.write_bytes(data.encode() if isinstance(data, str) else data)
    assert path.stat().st_size < 1 << 20  # a small file that would ask for > 1 GB
    assert_error(capsys, ["diagnose", str(path)],
                 f"{path}: {shape} is too sparse to tabulate (not a training log?)")


# --- hostile input ---------------------------------------------------------------------------

_DANGEROUS = re.compile(
    r"(?<![\w.])(eval|exec)\s*\("  # eval( / exec(, not ast.literal_eval(
    r"|\b(import|from)\s+(c?pickle|dill|shelve|marshal|joblib)\b"
    r"|\b(pickle|dill|shelve|marshal)\.\w+\s*\(|read_pickle|torch\.load\s*\("
    r"|allow_pickle\s*=\s*True|yaml\.unsafe_load|yaml\.load\((?![^)]*SafeLoader)"
)


def test_the_package_never_evaluates_or_unpickles_input():
    found = [f"{path.relative_to(PACKAGE.parent)}:{n}: {line.strip()}"
             for path in sorted(PACKAGE.rglob("*.py"))
             for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
             if _DANGEROUS.search(line)]
    assert found == []


def test_the_grep_catches_what_it_looks_for():
    for bad in ("eval(x)", "exec(code)", "import pickle", "pickle.loads(b)", "pd.read_pickle(p)",
                "yaml.load(f)", "torch.load(p)", "np.load(p, allow_pickle=True)"):
        assert _DANGEROUS.search(bad), bad
    for fine in ("ast.literal_eval(x)", "yaml.load(f, Loader=yaml.SafeLoader)",
                 '".pkl", ".pickle",', "never eval: a log is untrusted"):
        assert not _DANGEROUS.search(fine), fine


def test_console_logs_are_parsed_literally(capsys, tmp_path):
    marker = tmp_path / "PWNED"
    path = tmp_path / "train.log"
    lines = [f"{{'loss': 0.{i}, 'reward': __import__('os').system('touch {marker}'), "
             f"'kl': 0.01, 'step': {i}}}" for i in range(1, 12)]
    lines.append(f"{{'loss': (lambda: open('{marker}', 'w'))(), 'step': 12}}")
    path.write_text("\n".join(lines) + "\n")
    code, report, notes = diagnosis(capsys, path)
    assert not marker.exists()
    assert report["run"]["n_steps"] == 11  # the call is not a value; the numbers are read
    assert any("cut off or not plain literals" in n for n in notes)


RUN_NAMES = ["[red]x[/red]", "</testcase><script>alert(1)</script>"]
ENTROPY_COL, REWARD_COL = "[bold]ent[/bold]", "<script>r</script>"


def _hostile_csv(tmp_path: Path) -> Path:
    path = tmp_path / "[blink]runs[bold].csv"
    lines = [f"run_id,step,{REWARD_COL},{ENTROPY_COL},reward_std"]
    for name in RUN_NAMES:
        lines += [f"{name},{i},{0.5 + 0.001 * (i % 3):.4f},{1.0 - 0.0045 * i:.4f},0.0"
                  for i in range(1, 201)]
    path.write_text("\n".join(lines) + "\n")
    return path


def _maps() -> list[str]:
    return ["--map", f"entropy={ENTROPY_COL}", "--map", f"reward_mean={REWARD_COL}"]


def test_names_print_literally_in_every_diagnose_output(capsys, tmp_path):
    path = _hostile_csv(tmp_path)
    for name in RUN_NAMES:
        args = ["diagnose", str(path), "--run", name, *_maps()]
        code, out, err = run_cli(capsys, *args)
        assert code == 1 and err == ""
        assert name in out  # rich markup is not interpreted
        code, out, _ = run_cli(capsys, *args, "-f", "json")
        report = json.loads(out)
        assert report["run"]["name"] == name
        assert report["metrics"]["entropy"] == ENTROPY_COL
        assert report["metrics"]["reward_mean"] == REWARD_COL
        code, out, _ = run_cli(capsys, *args, "-f", "markdown")
        assert "<script>" not in out and "</testcase>" not in out and "[red]" not in out
        html = tmp_path / "report.html"
        code, _, err = run_cli(capsys, *args, "--html", str(html), "--force", "-f", "json")
        page = html.read_text()
        assert "<script>alert" not in page and "<script>r</script>" not in page
        assert "</testcase>" not in page
    code, out, _ = run_cli(capsys, "metrics", str(path), *_maps())
    assert all(f"run {name} (csv)" in out for name in RUN_NAMES)
    assert f"entropy     <- {ENTROPY_COL}" in out


def test_names_print_literally_in_every_audit_output(capsys, tmp_path):
    path = _hostile_csv(tmp_path)
    base = ["audit", str(path), "--jobs", "1", *_maps()]
    code, out, err = run_cli(capsys, *base)
    assert code == 1 and all(name in out for name in RUN_NAMES)
    code, out, _ = run_cli(capsys, *base, "-f", "json")
    assert sorted(r["run"]["name"] for r in json.loads(out)["runs"]) == sorted(RUN_NAMES)
    code, out, _ = run_cli(capsys, *base, "-f", "junit")
    root = ET.fromstring(out.split("\n", 1)[1])
    suites = root.findall("testsuite")
    assert sorted(s.get("name") for s in suites) == sorted(RUN_NAMES)
    assert all(len(s.findall("testcase")) == len(check_modes()) for s in suites)
    assert "<script>" not in out  # the names are escaped, so the document parsed as built
    code, out, _ = run_cli(capsys, *base, "-f", "markdown")
    assert "<script>" not in out and "</testcase>" not in out and "[red]" not in out
    code, out, _ = run_cli(capsys, *base, "-f", "terminal")
    assert all(name in out for name in RUN_NAMES)


def check_modes() -> list[str]:
    from grpo_doctor.rules import RULES

    return [r.id for r in RULES]


def test_wandb_names_never_become_paths(capsys, tmp_path):
    wandb_api = pytest.importorskip("grpo_doctor.importers.wandb_api")
    from grpo_doctor.errors import FetchError

    for bad in ("..", "../etc", "a/../b", "/etc", ".hidden", "-rf", "a b", "x" * 129, "",
                "run\x00id", "..\\..\\win"):
        with pytest.raises(FetchError, match="invalid wandb"):
            wandb_api.safe_name(bad, "run id")
    for bad in ("wandb://../../etc/passwd", "wandb://ent/../run", "wandb://ent/proj/..",
                "wandb://ent/proj/../../x"):
        with pytest.raises(FetchError):
            wandb_api.parse_path(bad)
    with pytest.raises(FetchError):
        wandb_api.cache_paths(tmp_path, "ent", "proj", "../../escape")
    assert_error(capsys, ["diagnose", "wandb://ent/../run"],
                 "invalid wandb project '..': only letters, digits, '.', '_' and '-' are "
                 "allowed (at most 128, not starting with '.' or '-')")


# --- --output never loses a file -------------------------------------------------------------


def test_audit_and_html_outputs_never_overwrite_without_force(capsys, tmp_path):
    for option, args in (("-o", ["audit", str(BAD / "inf.csv"), "--jobs", "1"]),
                         ("--html", ["diagnose", str(BAD / "inf.csv"), "-f", "json"])):
        target = tmp_path / "precious.txt"
        target.write_text("precious")
        assert_error(capsys, [*args, option, str(target)],
                     f"{target}: already exists; pass --force to replace it")
        assert target.read_text() == "precious"
        assert [p.name for p in tmp_path.iterdir()] == ["precious.txt"]
        code, _, err = run_cli(capsys, *args, option, str(target), "--force")
        assert code == 1 and err == "" and target.read_text() != "precious"
        target.unlink()


@pytest.mark.parametrize("fail", ["replace", "fsync"])
def test_a_failed_write_keeps_the_old_file_and_leaves_no_temp_file(capsys, tmp_path,
                                                                     monkeypatch, fail):
    import grpo_doctor.atomic

    target = tmp_path / "report.json"
    target.write_text("precious")

    def boom(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(grpo_doctor.atomic.os, fail, boom)
    assert_error(capsys, ["diagnose", "--example", "healthy", "-f", "json", "-o", str(target),
                          "--force"], f"{target}: cannot write (No space left on device)")
    assert target.read_text() == "precious"
    assert [p.name for p in tmp_path.iterdir()] == ["report.json"]


@pytest.mark.skipif(IS_ROOT, reason="root writes into a read-only folder")
def test_a_read_only_folder_is_one_line_and_leaves_nothing(capsys, tmp_path):
    folder = tmp_path / "ro"
    folder.mkdir()
    folder.chmod(0o500)
    try:
        target = folder / "report.json"
        assert_error(capsys, ["diagnose", "--example", "healthy", "-f", "json", "-o",
                              str(target)], f"{target}: cannot write (Permission denied)")
        assert list(folder.iterdir()) == []
    finally:
        folder.chmod(0o700)
