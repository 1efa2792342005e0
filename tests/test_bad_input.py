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
import stat
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from tests.helpers import remove_tree, run_cli, workflow_commands

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


@pytest.mark.parametrize("text", [
    "[1,2", '{"log_history": [{"step": 1,',
    # a trainer_state.json cut before its log_history: no reader recognises it at all
    '{\n  "best_metric": null,\n  "epoch": 0.03,\n  "global_step": 250,\n  "is_hyper'])
def test_a_json_file_cut_short_is_said_as_json_not_as_a_csv(capsys, tmp_path, text):
    # It read "the CSV has a header but no rows", or "file format not recognised".
    path = tmp_path / "bad.json"
    path.write_text(text)
    code, out, err = run_cli(capsys, "diagnose", str(path))
    assert code == 2 and out == "" and err.count("\n") == 1
    assert "CSV" not in err and "not recognised" not in err, err
    assert "not valid JSON" in err and " at line " in err, err


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
     ["reward: 3 cells that are not numbers were read as gaps (e.g. 'abc')"]),
    ("duplicate-steps.csv", {"n_steps": 60},
     ["the step went backwards 1 time (a resumed run?); 10 rows repeat a step logged "
      "before: the last value logged was kept"]),
    ("short-rows.csv", {"n_steps": 60},
     ["20 rows have fewer cells than the header: the missing cells are gaps"]),
    ("long-rows.csv", {"n_steps": 60},
     ["2 rows have more cells than the header: the extra cells were left out"]),
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


def test_an_all_nan_statistic_is_found_from_its_first_step(capsys, tmp_path):
    # KL is NaN on every step while the loss and the grad norm stay finite: with no config,
    # most likely no KL was computed (TRL's default beta 0; open-r1#704, trial 69).
    code, report, _ = diagnosis(capsys, BAD / "all-nan.csv")
    nf = check(report, "numerical_failure")
    assert nf["status"] == "ok" and "no KL computed" in nf["summary"], nf["summary"]
    # With a KL term in force the estimator broke, the weights did not (a warning, not the
    # critical of a NaN loss).
    given = tmp_path / "args.json"
    given.write_text('{"beta": 0.04}')
    code, report, _ = diagnosis(capsys, BAD / "all-nan.csv", "--train-config", str(given))
    nf = check(report, "numerical_failure")
    assert code == 0 and report["status"] == "warning"
    assert nf["status"] == "warning" and nf["onset_step"] == 1
    assert nf["summary"].startswith("non-finite values first at step 1: kl")
    assert "stayed finite: the NaN did not reach the weights" in nf["summary"]
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
                 f"no training log found in {folder} (2 entries, none a log in a format "
                 "grpo-doctor reads: ", prefix=True)


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
    assert "1 printed dict was cut off or not plain literals: only its complete numeric " \
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


#: The one module that reads a pickle (a checkpoint's training_args.bin): with an unpickler
#: whose ``find_class`` imports nothing (every global is an inert stand-in), so no code the
#: pickle names can run (tests/test_pickled_args.py feeds it one that calls os.system).
INERT_UNPICKLER = PACKAGE / "importers" / "pickled_args.py"


def test_the_package_never_evaluates_or_unpickles_input():
    found = [f"{path.relative_to(PACKAGE.parent)}:{n}: {line.strip()}"
             for path in sorted(PACKAGE.rglob("*.py"))
             for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
             if _DANGEROUS.search(line) and path != INERT_UNPICKLER]
    assert found == []
    inert = INERT_UNPICKLER.read_text(encoding="utf-8")
    # Its only use of pickle: subclassing the Unpickler, find_class overridden, no import.
    assert set(re.findall(r"\bpickle\.(\w+)", inert)) == {"Unpickler", "UnpicklingError"}
    assert "def find_class" in inert and "importlib" not in inert and "__import__" not in inert


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
    wandb_api = pytest.importorskip("grpo_doctor.remote.wandb_api")
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


def test_no_report_replaces_a_file_the_command_reads_even_with_force(capsys, tmp_path):
    """``-o run.csv --force`` on run.csv had replaced the log with its report; so had a link
    to it, the --config file, compare's reference and audit's --write-baseline (helper-73)."""
    from grpo_doctor.api import example_path

    log, ref = tmp_path / "in.csv", tmp_path / "ref.csv"
    toml = tmp_path / "grpo-doctor.toml"
    link = tmp_path / "link.md"

    def reset() -> None:
        log.write_bytes(example_path("kl-drift").read_bytes())
        ref.write_bytes(example_path("healthy").read_bytes())
        toml.write_text("[map]\n")

    reset()
    link.symlink_to(log)
    cases = [
        (["diagnose", str(log), "-o", str(log)], log, "a file this command reads"),
        (["diagnose", str(log), "--html", str(log)], log, "a file this command reads"),
        (["diagnose", str(log), "-o", str(link)], link, f"{log}, which this command reads"),
        (["diagnose", str(log), "--config", str(toml), "-o", str(toml)], toml,
         "a file this command reads"),
        (["compare", str(ref), str(log), "-o", str(ref)], ref, "a file this command reads"),
        (["audit", str(log), "-j", "1", "-o", str(log)], log, "a file this command reads"),
        (["audit", str(log), "-j", "1", "--write-baseline", str(log)], log,
         "a file this command reads"),
    ]
    for args, target, what in cases:
        reset()
        assert_error(capsys, [*args, "--force"],
                     f"{target}: is {what}; not writing a report over it (name another file)")
        assert log.read_bytes() == example_path("kl-drift").read_bytes(), args
        assert ref.read_bytes() == example_path("healthy").read_bytes(), args
        assert toml.read_text() == "[map]\n", args
    # A log inside a folder the command reads is one of its inputs too (helper-75).
    folder = tmp_path / "runA"
    folder.mkdir()
    inside = folder / "train.csv"
    inside.write_bytes(example_path("healthy").read_bytes())
    for args in (["diagnose", str(folder)], ["audit", str(tmp_path), "-j", "1"]):
        where = folder if args[0] == "diagnose" else tmp_path
        assert_error(capsys, [*args, "-o", str(inside), "--force"],
                     f"{inside}: is a log in {os.path.realpath(where)}, which this command "
                     "reads; not writing a report over it (name another file)")
        assert inside.read_bytes() == example_path("healthy").read_bytes(), args
    # A report beside the log is replaced as asked, in the folder it reads too.
    old_report = folder / "report.md"
    old_report.write_text("old")
    code, _, err = run_cli(capsys, "diagnose", str(folder), "-o", str(old_report), "--force")
    assert code == 0 and err == "" and old_report.read_text() != "old"
    report = tmp_path / "report.md"
    report.write_text("old")
    code, _, err = run_cli(capsys, "diagnose", str(log), "-o", str(report), "--force")
    assert code == 1 and err == "" and report.read_text() != "old"


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


# === A hostile environment: nothing replaced, nothing injected, nothing hung =================
#
# Devices and FIFOs are made in a temp folder (mknod of a character device needs root: those
# tests are skipped otherwise); the real /dev/null is never a target.

HEALTHY = ["diagnose", "--example", "healthy", "-f", "json"]
NEEDS_ROOT = pytest.mark.skipif(not IS_ROOT, reason="mknod of a character device needs root")


def _char_device(path: Path, major: int, minor: int) -> Path:
    os.mknod(path, 0o600 | stat.S_IFCHR, os.makedev(major, minor))
    return path


def _is_char_device(path: Path) -> bool:
    return stat.S_ISCHR(os.lstat(path).st_mode)


# --- writes: only ever rename over a regular file --------------------------------------------


@NEEDS_ROOT
@pytest.mark.parametrize("force", [[], ["--force"]])
def test_a_null_device_is_written_into_and_stays_a_device(capsys, tmp_path, force):
    null = _char_device(tmp_path / "null", 1, 3)
    for option in ("-o", "--html"):
        code, out, err = run_cli(capsys, *HEALTHY, option, str(null), *force)
        assert (code, err) == (0, "") and _is_char_device(null)
    code, out, err = run_cli(capsys, "audit", str(BAD / "inf.csv"), "--jobs", "1",
                             "--write-baseline", str(null), *force)
    assert code == 0 and err == "" and _is_char_device(null)  # judged against itself
    assert sorted(p.name for p in tmp_path.iterdir()) == ["null"]  # no temp file left


@NEEDS_ROOT
def test_a_full_device_is_one_line(capsys, tmp_path):
    full = _char_device(tmp_path / "full", 1, 7)
    assert_error(capsys, [*HEALTHY, "-o", str(full), "--force"],
                 f"{full}: cannot write (No space left on device)")
    assert _is_char_device(full)


def _socket(path: Path):
    import socket

    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(path))
    return sock


@pytest.mark.parametrize("what,message", [
    ("mem", "is a character device, not a regular file"),
    ("socket", "is a socket, not a regular file"),
    ("folder", "is a folder"),
    ("broken-link", "is a broken link (it points to 'nowhere'); not writing through it"),
])
def test_other_special_targets_are_refused_and_never_opened(capsys, tmp_path, what, message):
    target = tmp_path / what
    keep = None
    if what == "mem":
        if not IS_ROOT:
            pytest.skip("mknod of a character device needs root")
        _char_device(target, 1, 1)  # /dev/mem's numbers: never to be opened for writing
    elif what == "socket":
        keep = _socket(target)
    elif what == "folder":
        target.mkdir()
    else:
        target.symlink_to("nowhere")
    try:
        for force in ([], ["--force"]):
            for option in ("-o", "--html"):
                code, out, err = run_cli(capsys, *HEALTHY, option, str(target), *force)
                assert code == 2 and err.startswith(f"grpo-doctor: error: {target}: {message}")
                assert "--force" not in err and err.count("\n") == 1
    finally:
        if keep is not None:
            keep.close()
    assert os.path.lexists(target) and not (tmp_path / "nowhere").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == [what]


@pytest.mark.timeout(30)
def test_a_fifo_is_written_into_when_read_and_refused_when_not(capsys, tmp_path):
    fifo = tmp_path / "report.fifo"
    os.mkfifo(fifo)
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)  # a reader is there before the write
    try:
        code, out, err = run_cli(capsys, *HEALTHY, "-o", str(fifo))
        got = b""
        while chunk := os.read(reader, 1 << 16):
            got += chunk
    finally:
        os.close(reader)
    assert (code, err) == (0, "") and json.loads(got)["status"] == "healthy"
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert_error(capsys, [*HEALTHY, "-o", str(fifo)],
                 f"{fifo}: a FIFO that nobody reads; start its reader first")


@NEEDS_ROOT
def test_a_terminal_device_with_no_driver_behind_it_is_not_called_a_fifo(capsys, tmp_path):
    """Every ENXIO on opening a target was "a FIFO that nobody reads": a terminal's device
    node with no line behind it (major 4, minor 255: /dev/ttyS191) is a character device."""
    dead = _char_device(tmp_path / "ttyS191", 4, 255)
    assert_error(capsys, [*HEALTHY, "-o", str(dead)],
                 f"{dead}: is a character device with no device behind it (no driver, or the "
                 f"device is gone); not written")
    assert _is_char_device(dead) and sorted(p.name for p in tmp_path.iterdir()) == ["ttyS191"]


@pytest.mark.skipif(not os.path.exists("/dev/tty"), reason="no /dev/tty")
def test_dev_tty_without_a_controlling_terminal_says_so(tmp_path):
    """`-o /dev/tty` from a process with no terminal (nohup, cron, a job scheduler): ENXIO,
    which was "a FIFO that nobody reads"."""
    p = subprocess.run([sys.executable, "-m", "grpo_doctor", *HEALTHY, "-o", "/dev/tty"],
                       capture_output=True, text=True, start_new_session=True, timeout=120,
                       cwd=tmp_path)
    assert (p.returncode, p.stdout) == (2, ""), p.stderr
    assert p.stderr == ("grpo-doctor: error: /dev/tty: no controlling terminal (this process "
                        "has none, as under nohup, cron or a job scheduler); write to a file "
                        "instead\n")


def test_a_socket_put_in_place_of_a_planned_device_is_said_to_be_a_socket(tmp_path):
    """A target planned as a FIFO or a device and found a socket when written (it changed
    meanwhile): opening it is ENXIO too, and it is a socket, not a FIFO nobody reads."""
    from grpo_doctor.atomic import Target, write
    from grpo_doctor.errors import InputError

    path = tmp_path / "report"
    sock = _socket(path)
    try:
        with pytest.raises(InputError) as exc:
            write(Target(path, "device", path), b"{}")
    finally:
        sock.close()
    assert str(exc.value) == (f"{path}: is a socket, not a regular file; grpo-doctor writes "
                              "reports only to files (or to /dev/stdout, /dev/null, a terminal "
                              "or a FIFO)")


def test_dev_stdout_is_stdout_whatever_it_is(tmp_path):
    out = tmp_path / "out.json"
    with out.open("w") as fh:
        p = subprocess.run([sys.executable, "-m", "grpo_doctor", *HEALTHY, "-o", "/dev/stdout"],
                           stdout=fh, stderr=subprocess.PIPE, text=True, timeout=120)
    assert (p.returncode, p.stderr) == (0, "")
    assert json.loads(out.read_text())["status"] == "healthy"
    assert os.path.islink("/dev/stdout")


def test_a_link_to_a_report_stays_a_link(capsys, tmp_path):
    real = tmp_path / "reports" / "r.json"
    real.parent.mkdir()
    real.write_text("old")
    link = tmp_path / "latest.json"
    link.symlink_to(real)
    code, _, err = run_cli(capsys, *HEALTHY, "-o", str(link), "--force")
    assert (code, err) == (0, "") and link.is_symlink()
    assert json.loads(real.read_text())["status"] == "healthy"


def test_of_concurrent_writers_without_force_exactly_one_wins(tmp_path):
    from concurrent.futures import ThreadPoolExecutor

    from grpo_doctor.atomic import plan, write
    from grpo_doctor.errors import InputError

    target = tmp_path / "baseline.json"
    planned = [plan(target) for _ in range(3)]  # all three see no file yet

    def attempt(i: int) -> str:
        try:
            write(planned[i], f"writer {i}\n")
            return "won"
        except InputError as exc:
            return str(exc)

    with ThreadPoolExecutor(3) as pool:
        outcomes = list(pool.map(attempt, range(3)))
    assert outcomes.count("won") == 1
    assert outcomes.count(f"{target}: already exists; pass --force to replace it") == 2
    winner = outcomes.index("won")
    assert target.read_text() == f"writer {winner}\n"
    assert [p.name for p in tmp_path.iterdir()] == ["baseline.json"]


def test_audit_html_into_a_used_folder_writes_nothing(capsys, tmp_path):
    runs = tmp_path / "runs"
    runs.mkdir()
    for name in ("a", "b"):
        shutil.copy(BAD / "inf.csv", runs / f"{name}.csv")
    report = tmp_path / "report"
    code, _, err = run_cli(capsys, "audit", str(runs), "--jobs", "1", "--html", str(report))
    assert code == 1 and err == ""
    before = {p.name: p.read_bytes() for p in report.iterdir()}
    shutil.copy(BAD / "bom.csv", runs / "c.csv")  # a new run: a new page name
    baseline = tmp_path / "baseline.json"
    assert_error(capsys, ["audit", str(runs), "--jobs", "1", "--html", str(report),
                          "--write-baseline", str(baseline)],
                 f"{report / 'index.html'}: already exists; pass --force to replace it")
    assert {p.name: p.read_bytes() for p in report.iterdir()} == before
    assert not baseline.exists()


def test_a_used_page_name_stops_the_audit_html_before_any_page(capsys, tmp_path):
    shutil.copy(BAD / "inf.csv", tmp_path / "a.csv")
    report = tmp_path / "report"
    report.mkdir()
    (report / "0001-a.html").write_text("precious")
    assert_error(capsys, ["audit", str(tmp_path / "a.csv"), "--jobs", "1", "--html",
                          str(report)],
                 f"{report / '0001-a.html'}: already exists; pass --force to replace it")
    assert [p.name for p in report.iterdir()] == ["0001-a.html"]


# --- names are data everywhere ---------------------------------------------------------------

#: A file name and column names an attacker (or a broken logger) could write.
INJECTED_NAME = "run\n::error title=PWNED::x\n.csv"
ESCAPES = "\x1b]0;TITLE\x07\x1b[2J##[add-mask]x\u202e\x00"
RAW = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def _hostile_tree(tmp_path: Path) -> Path:
    runs = tmp_path / "runs"
    runs.mkdir()
    for name in (INJECTED_NAME, "ok.csv"):
        text = (BAD / "steps-2p62.csv").read_text().replace("entropy", "ent\x1b[31mropy\u202e")
        (runs / name).write_text(text.replace("step", "step", 1))
    (runs / "broken\n::warning::y\n.csv").write_bytes(b"\x00\x01 not a log")
    return runs


def test_a_file_name_cannot_forge_a_workflow_command(capsys, tmp_path, monkeypatch):
    runs = _hostile_tree(tmp_path)
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    code, out, err = run_cli(capsys, "audit", str(runs), "--jobs", "1",
                             "--map", "entropy=ent\x1b[31mropy\u202e")
    assert code == 1
    commands = workflow_commands(out) + workflow_commands(err)
    ours = re.compile(r"::(error|warning|notice) title=grpo-doctor [a-z_ ]+::[^\n]*$")
    assert commands and all(ours.match(c) for c in commands), commands
    assert not any("PWNED" in c.split("::")[1] for c in commands)  # never a command's title
    assert "::error title=grpo-doctor entropy_collapse::run%0A::error title=PWNED::x%0A: " \
           "entropy collapsed" in out
    assert not RAW.search(out + err)


@pytest.mark.parametrize("fmt", ["terminal", "markdown", "json", "junit"])
def test_control_characters_never_reach_an_audit_report(capsys, tmp_path, fmt):
    runs = _hostile_tree(tmp_path)
    code, out, err = run_cli(capsys, "audit", str(runs), "--jobs", "1", "-f", fmt,
                             "--map", "entropy=ent\x1b[31mropy\u202e")
    assert code == 1 and not RAW.search(out + err)
    assert all(not line.lstrip().startswith("::") for line in out.split("\n"))
    if fmt == "json":
        doc = json.loads(out)
        assert {r["audit"]["source"] for r in doc["runs"]} == {INJECTED_NAME, "ok.csv"}
        assert doc["runs"][0]["metrics"]["entropy"] == "ent\x1b[31mropy\u202e"  # exact data
    if fmt == "junit":
        ET.fromstring(out.split("\n", 1)[1])  # well-formed XML 1.0


def test_control_characters_never_reach_diagnose_metrics_or_the_error_line(capsys, tmp_path):
    runs = _hostile_tree(tmp_path)
    path = runs / INJECTED_NAME
    maps = ["--map", "entropy=ent\x1b[31mropy\u202e"]
    for args in (["diagnose", str(path), *maps], ["diagnose", str(path), "-f", "markdown",
                                                  *maps],
                 ["diagnose", str(path), "-f", "json", *maps], ["metrics", str(path)]):
        code, out, err = run_cli(capsys, *args)
        assert code in (0, 1) and err == "" and not RAW.search(out)
        assert all(not line.lstrip().startswith("::") for line in out.split("\n"))
    broken = runs / "broken\n::warning::y\n.csv"
    code, out, err = run_cli(capsys, "diagnose", str(broken))
    assert code == 2 and err.count("\n") == 1 and "broken\\n::warning::y\\n.csv" in err
    html = tmp_path / "r.html"
    run_cli(capsys, "diagnose", str(path), *maps, "-f", "json", "--html", str(html))
    assert not RAW.search(html.read_text())


def test_watch_shows_markup_and_escapes_in_paths_literally(tmp_path):
    import io

    from grpo_doctor.watch import Watcher, run_watch

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    folder = tmp_path / "runs" / "[/b]\x1b[2J"
    folder.mkdir(parents=True)
    shutil.copy(BAD / "steps-2p62.csv", folder / "run.csv")
    out = Terminal()
    code = run_watch(Watcher(folder / "run.csv"), interval=0, max_polls=2, out=out,
                     err=io.StringIO(), sleep=lambda s: None)
    assert code == 0 and "status: critical" in out.getvalue()
    code = run_watch(Watcher(folder / "run.csv"), once=True, out=(plain := io.StringIO()),
                     err=io.StringIO(), output="json")
    assert code == 0 and "\x1b" not in plain.getvalue()


# --- hangs: inputs are regular files of bounded size -------------------------------------------


@pytest.mark.timeout(60)
def test_a_fifo_is_refused_wherever_a_file_is_read(capsys, tmp_path):
    fifo = tmp_path / "run.csv"
    os.mkfifo(fifo)
    said = f"{fifo}: is a FIFO (named pipe), not a regular file"
    for args in (["diagnose", str(fifo)], ["diagnose", str(fifo), "--input-format", "csv"],
                 ["metrics", str(fifo)], ["watch", str(fifo), "--once"],
                 ["watch", str(fifo), "--max-polls", "1", "--interval", "0"],
                 ["diagnose", "--example", "healthy", "--config", str(fifo)],
                 ["audit", str(BAD / "inf.csv"), "--baseline", str(fifo)]):
        assert_error(capsys, args, said)
    code, out, err = run_cli(capsys, "audit", str(tmp_path), str(BAD / "inf.csv"), "--jobs",
                             "1", "-f", "json")
    key = Path(os.path.relpath(fifo, os.path.commonpath([tmp_path, BAD.resolve()]))).as_posix()
    assert code == 1 and json.loads(out)["errors"] == [{"source": key, "error": said}]


@NEEDS_ROOT
@pytest.mark.timeout(60)
def test_an_endless_device_is_refused_before_a_byte_is_read(capsys, tmp_path):
    zero = _char_device(tmp_path / "zero", 1, 5)
    for fmt in ("csv", "console", "jsonl", "tensorboard"):
        assert_error(capsys, ["diagnose", str(zero), "--input-format", fmt],
                     f"{zero}: is a character device, not a regular file")


@pytest.mark.timeout(60)
def test_a_whole_file_read_is_capped(capsys, tmp_path):
    huge = tmp_path / "huge.csv"
    with huge.open("wb") as fh:  # sparse: 5 GiB that take no disk
        fh.write(b"step,reward\n")
        fh.truncate(5 << 30)
    for fmt in ("csv", "jsonl", "console"):
        assert_error(capsys, ["diagnose", str(huge), "--input-format", fmt],
                     f"{huge}: the file is 5.0 GiB, more than the 4.0 GiB grpo-doctor reads "
                     f"into memory (GRPO_DOCTOR_MAX_READ_MB raises the limit)")


@pytest.mark.timeout(60)
@pytest.mark.parametrize("name,start", [
    ("events.out.tfevents.1.huge", next(TB_RUN.iterdir())),
    ("run-huge.wandb", BAD / "wandb-corrupt" / "run-badblock.wandb"),
])
def test_an_event_file_or_wandb_log_past_the_read_limit_is_refused(capsys, tmp_path, name,
                                                                    start):
    huge = tmp_path / name
    with huge.open("wb") as fh:  # a real log's first records, then sparse: 5 GiB of no disk
        fh.write(start.read_bytes()[:4096])
        fh.truncate(5 << 30)
    assert_error(capsys, ["diagnose", str(huge)],
                 f"{huge}: the file is 5.0 GiB, more than the 4.0 GiB grpo-doctor reads into "
                 f"memory (GRPO_DOCTOR_MAX_READ_MB raises the limit)")


@pytest.mark.timeout(120)
def test_a_small_parquet_that_expands_to_100m_rows_is_refused(capsys, tmp_path):
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = tmp_path / "history.parquet"
    zeros = pa.table({"reward": pa.array(np.zeros(20_000_000))})
    with pq.ParquetWriter(path, zeros.schema, compression="zstd") as writer:
        for _ in range(5):
            writer.write_table(zeros, row_group_size=20_000_000)
    assert path.stat().st_size < 2 << 20
    assert_error(capsys, ["diagnose", str(path)],
                 f"{path}: the parquet data expands to 100,000,000 rows x 1 column, more "
                 f"than grpo-doctor tabulates (16,777,216 rows, 67,108,864 cells); not a "
                 f"training log?")


def _session_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


@pytest.mark.timeout(180)
def test_ctrl_c_during_a_parallel_audit_exits_130_cleanly(tmp_path):
    import signal
    import time

    from grpo_doctor.api import example_path

    for i in range(24):
        shutil.copy(example_path("entropy-collapse"), tmp_path / f"r{i}.csv")
    for delay in (0.4, 1.2, 2.0):  # while importing, while forking the workers, while working
        p = subprocess.Popen([sys.executable, "-m", "grpo_doctor", "audit", str(tmp_path),
                              "--jobs", "2"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True, start_new_session=True)
        time.sleep(delay)
        os.killpg(p.pid, signal.SIGINT)  # what Ctrl-C sends: the whole process group
        try:
            out, err = p.communicate(timeout=30)
        finally:
            if _session_alive(p.pid):
                os.killpg(p.pid, signal.SIGKILL)
        if p.returncode in (0, 1):
            continue  # finished before the signal came
        assert (p.returncode, err) == (130, "grpo-doctor: interrupted\n"), (delay, err)
        time.sleep(0.5)
        assert not _session_alive(p.pid), "a worker outlived the audit"


def test_a_ctrl_c_after_the_command_finished_cannot_turn_its_exit_into_a_signal():
    """Ctrl-C in the ~0.1 s between an audit's report and the process's end (the pool's exit
    handlers) ended it as killed by SIGINT (status -2), neither its code nor 130: once the
    command is done, the CLI ignores SIGINT through its shutdown."""
    probe = ("import atexit, signal, sys\n"
             "atexit.register(lambda: print('ignored' if signal.getsignal(signal.SIGINT)"
             " is signal.SIG_IGN else 'live'))\n"
             "sys.argv = ['grpo-doctor', 'examples']\n"
             "from grpo_doctor.cli import main\n"
             "main()\n")
    p = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                       timeout=60)
    assert p.returncode == 0 and p.stdout.splitlines()[-1] == "ignored", p.stderr


# --- steps are integers in range; duplicate columns ---------------------------------------------


@pytest.mark.parametrize("name,message", [
    ("steps-beyond-int64.csv", "no logged steps found (200 rows with a step beyond the 64-bit "
                               "integer range (e.g. 1e+19) were dropped)"),
    ("steps-1e30.csv", "no logged steps found (200 rows with a step beyond the 64-bit integer "
                       "range (e.g. 1e+30) were dropped)"),
])
def test_steps_beyond_int64_never_collapse_into_one(capsys, name, message):
    assert_error(capsys, ["diagnose", str(BAD / name)], f"{BAD / name}: {message}")


@pytest.mark.parametrize("name,n_steps,note", [
    ("steps-2p62.csv", 200, None),
    ("steps-some-beyond.csv", 150, "50 rows with a step beyond the 64-bit integer range "
                                   "(e.g. 1e+19) were dropped"),
    ("steps-half.csv", 100, "100 rows with a step that is not a whole number (e.g. 0.5) were "
                            "dropped"),
])
def test_odd_steps_are_kept_exactly_or_dropped_with_a_true_note(capsys, name, n_steps, note):
    code, report, notes = diagnosis(capsys, BAD / name)
    assert report["run"]["n_steps"] == n_steps
    assert notes == ([note] if note else [])
    assert not any("repeat" in n for n in notes)
    assert check(report, "entropy_collapse")["status"] == "critical"  # the collapse is found


def test_steps_2p62_stay_distinct_in_json_lines(capsys, tmp_path):
    path = tmp_path / "run.jsonl"
    rows = [{"step": 2**62 + i, "entropy": 1.0 - 0.0049 * i, "reward": 0.5} for i in range(200)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    code, report, notes = diagnosis(capsys, path)
    assert report["run"]["first_step"] == 2**62 and report["run"]["n_steps"] == 200


@pytest.mark.parametrize("name,column", [("duplicate-entropy.csv", 2),
                                         ("duplicate-entropy-last.csv", 4)])
def test_of_two_entropy_columns_the_one_with_the_signal_is_used(capsys, name, column):
    code, report, notes = diagnosis(capsys, BAD / name)
    assert check(report, "entropy_collapse")["status"] == "critical"
    assert notes == [f"the column 'entropy' appears 2 times: the copy in column {column} of the "
                     f"header was used (it varies; the other copy is constant)"]


# --- configuration visible and strict -------------------------------------------------------------


def _ignore_all() -> str:
    return "ignore = [" + ", ".join(f'"{m}"' for m in check_modes()) + "]\n"


def test_ignoring_every_check_is_never_healthy(capsys, tmp_path, monkeypatch):
    (tmp_path / "grpo-doctor.toml").write_text(_ignore_all())
    sub = tmp_path / "deep" / "er"
    sub.mkdir(parents=True)
    monkeypatch.chdir(sub)  # the config is found upwards
    config = tmp_path / "grpo-doctor.toml"
    code, out, err = run_cli(capsys, *HEALTHY)
    report = json.loads(out)
    assert (code, err, report["status"]) == (0, "", "inconclusive")
    assert report["status_reason"] == "no check could judge it: every check was ignored"
    assert report["config"]["file"] == str(config)
    assert report["config"]["ignored"] == check_modes()
    code, out, err = run_cli(capsys, "diagnose", "--example", "healthy", "--strict")
    assert code == 1 and "HEALTHY" not in out and "No failure mode found" not in out
    assert "INCONCLUSIVE" in out and f"config:{config}" in "".join(out.split())  # wrapped
    code, out, err = run_cli(capsys, "audit", str(BAD / "inf.csv"), "--jobs", "1", "-f", "json")
    assert [r["status"] for r in json.loads(out)["runs"]] == ["inconclusive"]


def test_every_report_says_which_config_and_which_checks_were_ignored(capsys, tmp_path,
                                                                       monkeypatch):
    config = tmp_path / "grpo-doctor.toml"
    config.write_text('ignore = ["kl_drift"]\n[rules.entropy_collapse]\ncritical_ratio = 0.05\n')
    monkeypatch.chdir(tmp_path)
    code, out, _ = run_cli(capsys, *HEALTHY, "--ignore", "tool_spam")
    assert json.loads(out)["config"] == {
        "file": str(config), "ignored": ["kl_drift", "tool_spam"],
        "overrides": {"entropy_collapse": {"critical_ratio": 0.05}}}
    line = (f"config: {config} · checks ignored: kl_drift, tool_spam · thresholds set: "
            f"entropy_collapse.critical_ratio=0.05")
    code, out, _ = run_cli(capsys, "diagnose", "--example", "healthy", "--ignore", "tool_spam")
    assert "".join(line.split()) in "".join(out.split())  # however the terminal wrapped it
    code, out, _ = run_cli(capsys, "diagnose", "--example", "healthy", "-f", "markdown")
    assert re.sub(r"\\(.)", r"\1", out).count(f"config: {config} · checks ignored: kl_drift")
    code, out, _ = run_cli(capsys, "audit", str(BAD / "inf.csv"), "--jobs", "1", "-f", "json")
    assert json.loads(out)["runs"][0]["config"]["ignored"] == ["kl_drift"]


@pytest.mark.parametrize("name,text,message", [
    ("pyproject.toml", '[project]\nname = "x"\n[tool.grpo-doctor]\nignore = ["kl_drift"\n',
     "invalid TOML (Unclosed array (at end of document))"),
    ("pyproject.toml", '[project\nname = "x"\n', "invalid TOML (Expected ']' at the end of a "
                                                  "table declaration (at line 1, column 9))"),
    ("grpo-doctor.toml", "[rules.kl_drfit]\nstop_kl = 20\n", "unknown rule 'kl_drfit'; rules: "),
    ("grpo-doctor.toml", "[rules.kl_drift]\nstop_kl = nan\n",
     "kl_drift.stop_kl must be a finite number, got nan"),
    ("grpo-doctor.toml", "[rules.kl_drift]\nstop_kl = true\n",
     "[rules.kl_drift] parameters must be numbers"),
    ("grpo-doctor.toml", 'select = ["kl_drfit"]\n', "select: unknown failure mode 'kl_drfit'"),
    ("grpo-doctor.toml", "[rules.kl_drift]\nstop_kl = -5\n",
     "kl_drift.stop_kl must be at least 0, got -5"),
])
def test_a_bad_config_file_is_one_line(capsys, tmp_path, monkeypatch, name, text, message):
    (tmp_path / name).write_text(text)
    monkeypatch.chdir(tmp_path)
    assert_error(capsys, HEALTHY, f"{tmp_path / name}: {message}", prefix=True)


@pytest.mark.parametrize("assignment,message", [
    ("kl_drfit.stop_kl=20", "--set: unknown rule 'kl_drfit'; rules: "),
    ("kl_drift.stop_kl=nan", "--set: kl_drift.stop_kl must be a finite number, got nan"),
    ("kl_drift.stop_kl=1e999", "--set: kl_drift.stop_kl must be a finite number, got inf"),
    ("kl_drift.stop_kl=-inf", "--set: kl_drift.stop_kl must be a finite number, got -inf"),
    ("kl_drift.stop_kl=-5", "--set: kl_drift.stop_kl must be at least 0, got -5"),
    ("entropy_collapse.critical_ratio=-0.1",
     "--set: entropy_collapse.critical_ratio must be greater than 0, got -0.1"),
])
def test_set_is_strict(capsys, assignment, message):
    for command in (HEALTHY, ["audit", str(BAD / "inf.csv"), "--jobs", "1"],
                    ["watch", str(BAD / "inf.csv"), "--once"]):
        assert_error(capsys, [*command, "--set", assignment], message, prefix=True)


def test_every_threshold_default_is_within_its_bounds_and_bounds_are_enforced(capsys):
    from grpo_doctor.config import check_params
    from grpo_doctor.errors import ConfigError
    from grpo_doctor.rules import RULES, Param

    for rule in RULES:
        for p in rule.params:
            assert p.out_of_bounds(p.default) is None, (rule.id, p.name)
            assert p.out_of_bounds(-1e-9) is not None, (rule.id, p.name)  # none negative
            # 0 is allowed, except where it divides, tests at no confidence or counts nothing.
            zero_is_bad = (p.name == "alpha" or p.integer
                           or p.name.endswith(("_ratio", "_factor")))
            assert (p.out_of_bounds(0.0) is not None) == zero_is_bad, (rule.id, p.name)
    share = Param("share", 0.5, "a share", min=0.0, max=1.0)
    assert share.out_of_bounds(1.5) == share.out_of_bounds(-0.5) == "between 0 and 1"
    assert Param("x", 1.0, "no bound", min=None).out_of_bounds(-3.0) is None
    with pytest.raises(ConfigError, match="must be at least 0, got -5"):
        check_params({"kl_drift": {"stop_kl": -5.0}}, "--set")


# --- one exit code per outcome ------------------------------------------------------------------


@pytest.mark.parametrize("env", [{"PYTHONIOENCODING": "ascii"},
                                 {"LC_ALL": "C", "LANG": "C", "PYTHONCOERCECLOCALE": "0",
                                  "PYTHONUTF8": "0", "PYTHONIOENCODING": ""}])
def test_output_that_cannot_be_encoded_degrades_to_replacement_characters(env):
    for fmt in ("terminal", "markdown"):
        p = subprocess.run([sys.executable, "-m", "grpo_doctor", "diagnose", "--example",
                            "healthy", "-f", fmt],
                           capture_output=True, env={**os.environ, **env}, timeout=120)
        assert (p.returncode, p.stderr) == (0, b""), p.stderr
        assert b"?" in p.stdout and p.stdout.decode("ascii")  # '·', '–', '✅' replaced


@NEEDS_ROOT
def test_stdout_on_a_full_disk_is_one_line(tmp_path):
    full = _char_device(tmp_path / "full", 1, 7)
    with full.open("w") as fh:
        p = subprocess.run([sys.executable, "-m", "grpo_doctor", "diagnose", "--example",
                            "healthy"], stdout=fh, stderr=subprocess.PIPE, text=True,
                           timeout=120)
    assert (p.returncode, p.stderr) == (
        2, "grpo-doctor: error: cannot write to stdout (No space left on device)\n")


def test_a_closed_pipe_is_not_a_finding(tmp_path):
    p = subprocess.Popen([sys.executable, "-m", "grpo_doctor", "diagnose", "--example",
                          "healthy", "-f", "json"], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE)
    p.stdout.close()
    assert (p.wait(timeout=120), p.stderr.read()) == (0, b"")


def test_an_internal_error_is_one_line_with_a_hint_and_exit_3(capsys, monkeypatch):
    from grpo_doctor import engine

    def broken(*args, **kwargs):
        raise ZeroDivisionError("a bug")

    monkeypatch.setattr(engine, "check_rule", broken)
    code, out, err = run_cli(capsys, *HEALTHY)
    assert (code, out) == (3, "")
    assert err == ("grpo-doctor: internal error: ZeroDivisionError: a bug; this is a bug in "
                   "grpo-doctor: please report it with the command that caused it "
                   "(GRPO_DOCTOR_DEBUG=1 prints the traceback)\n")


def test_a_grad_norm_near_the_float_limit_draws(capsys, tmp_path):
    path = tmp_path / "huge-grad.csv"
    lines = ["step,grad_norm,reward,entropy"]
    for i in range(200):
        grad = 1.0 + 0.01 * (i % 3) if i < 100 else 1.7e308 * (1 if i % 2 else 0.5)
        lines.append(f"{i},{grad!r},{0.1 + 0.001 * i},{1 - 0.001 * i}")
    path.write_text("\n".join(lines) + "\n")
    html = tmp_path / "r.html"
    code, out, err = run_cli(capsys, "diagnose", str(path), "-f", "json", "--html", str(html))
    assert code == 1 and err == "" and "grad_explosion" in html.read_text()
    pytest.importorskip("matplotlib")
    code, out, err = run_cli(capsys, "diagnose", str(path), "-f", "json", "--png",
                             str(tmp_path / "png"))
    assert code == 1 and err == "" and (tmp_path / "png" / "grad_explosion.png").exists()


def test_a_baseline_nested_100000_deep_is_one_line(capsys, tmp_path):
    deep = tmp_path / "baseline.json"
    deep.write_text("[" * 100_000 + "]" * 100_000)
    assert_error(capsys, ["audit", str(BAD / "inf.csv"), "--baseline", str(deep)],
                 f"{deep}: the baseline is not valid JSON (nested too deeply)")


# --- folders: no recursion, links followed once -------------------------------------------------


@pytest.fixture
def deep_tree(tmp_path):
    """runs/a.csv and runs/d/d/.../d (1,000 levels)/deep.csv; removed without recursion
    afterwards (pytest's own clean-up would fail on it and leave it behind)."""
    top = tmp_path / "runs"
    top.mkdir()
    shutil.copy(BAD / "inf.csv", top / "a.csv")
    fd = os.open(top, os.O_RDONLY)
    try:
        for _ in range(1000):  # relative to the last folder: no path grows past PATH_MAX
            os.mkdir("d", dir_fd=fd)
            fd, parent = os.open("d", os.O_RDONLY, dir_fd=fd), fd
            os.close(parent)
        with open(os.open("deep.csv", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd), "wb") as fh:
            fh.write((BAD / "bom.csv").read_bytes())
    finally:
        os.close(fd)
    yield top
    remove_tree(top)


def test_a_folder_tree_1000_levels_deep_is_an_error_row(capsys, deep_tree):
    top = deep_tree
    code, out, err = run_cli(capsys, "audit", str(top), "--jobs", "1", "-f", "json")
    doc = json.loads(out)
    assert code == 1 and err == "" and [r["run"]["name"] for r in doc["runs"]] == ["a"]
    (error,) = doc["errors"]
    assert error["source"] == "/".join(["d"] * 64)
    assert error["error"].endswith("more than 64 folders deep; the folders below it were not "
                                   "searched")


def test_a_linked_run_folder_is_audited_once(capsys, tmp_path):
    elsewhere = tmp_path / "elsewhere" / "exp1"
    shutil.copytree(TB_RUN, elsewhere)
    runs = tmp_path / "runs"
    runs.mkdir()
    (runs / "exp1").symlink_to(elsewhere, target_is_directory=True)
    (runs / "again").symlink_to(elsewhere, target_is_directory=True)  # the same folder twice
    (runs / "loop").symlink_to(runs, target_is_directory=True)
    code, out, err = run_cli(capsys, "audit", str(runs), "--jobs", "1", "-f", "json")
    doc = json.loads(out)
    assert err == "" and doc["errors"] == []
    assert [r["audit"]["source"] for r in doc["runs"]] == ["again"]


def test_a_linked_tensorboard_run_is_read_by_diagnose_once(capsys, tmp_path):
    store = tmp_path / "store" / "exp1"
    shutil.copytree(TB_RUN, store)
    runs = tmp_path / "runs"
    runs.mkdir()
    (runs / "exp1").symlink_to(store, target_is_directory=True)
    (runs / "up").symlink_to(tmp_path, target_is_directory=True)  # a loop through the parent
    code, report, _ = diagnosis(capsys, runs)
    assert report["run"]["name"] == "exp1" and report["run"]["n_steps"] == 200


# --- watch remembers what it sent -----------------------------------------------------------------


def test_watch_does_not_repeat_alerts_when_the_log_is_rewritten(tmp_path):
    from grpo_doctor.watch import Watcher

    log = tmp_path / "run.csv"
    content = (BAD / "duplicate-entropy.csv").read_text()
    log.write_text(content)
    watcher = Watcher(log)
    assert "entropy_collapse" in [a.mode for a in watcher.poll()]
    for _ in range(3):  # the trainer rewrites its log (a new file under the same name)
        tmp = tmp_path / "run.tmp"
        tmp.write_text(content)
        os.replace(tmp, log)
        assert watcher.poll() == []
    assert watcher.restarts == 3


def test_watch_sees_a_rewrite_to_the_same_size(tmp_path):
    from grpo_doctor.watch import Watcher

    log = tmp_path / "run.csv"
    content = (BAD / "steps-2p62.csv").read_text()
    log.write_text(content)
    watcher = Watcher(log)
    watcher.poll()
    assert watcher.status == "critical"
    lines = content.splitlines()
    flat = [lines[0]] + [",".join([line.split(",")[0], "0.9900", line.split(",")[2]])
                         for line in lines[1:]]
    same_size = "\n".join(flat) + "\n"
    assert len(same_size) == len(content)
    with log.open("r+") as fh:  # in place: same inode, same size
        fh.write(same_size)
    os.utime(log, ns=(log.stat().st_atime_ns, log.stat().st_mtime_ns + 1_000_000))
    watcher.poll()
    # Read again: the collapse is gone (whether the flat rewrite learns is not the point).
    assert watcher.restarts == 1 and watcher.status in ("healthy", "inconclusive")
    assert watcher.diagnosis() is not None and not watcher.diagnosis().findings


# --- parameters with real bounds, configs of the wrong shape, no stdout -----------------------


@pytest.mark.parametrize("setting,said", [
    ("grad_explosion.burst_ratio=0", "grad_explosion.burst_ratio must be greater than 0, got 0"),
    ("ratio_instability.burst_window=0.5",
     "ratio_instability.burst_window must be a whole number of at least 1, got 0.5"),
    ("ratio_instability.burst_window=0",
     "ratio_instability.burst_window must be a whole number of at least 1, got 0"),
    ("kl_drift.alpha=5", "kl_drift.alpha must be between 0 and 1 (exclusive), got 5"),
    ("kl_drift.alpha=0", "kl_drift.alpha must be between 0 and 1 (exclusive), got 0"),
    ("advantage_collapse.warn_fraction=1.5",
     "advantage_collapse.warn_fraction must be between 0 and 1, got 1.5"),
])
def test_parameters_out_of_their_bounds_are_one_line(capsys, setting, said):
    assert_error(capsys, ["diagnose", "--example", "healthy", "--set", setting],
                 f"--set: {said}")


def test_any_value_a_parameter_accepts_diagnoses_without_an_internal_error():
    """Every parameter at its edges (0, a half, 1, 1e300) and at random values: refused in
    one line, or a diagnosis; never a division by zero or a window of half a point."""
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    from grpo_doctor import api
    from grpo_doctor.config import Settings, check_params
    from grpo_doctor.errors import ConfigError
    from grpo_doctor.importers import load_run
    from grpo_doctor.rules import RULES

    run = load_run(api.example_path("grad-explosion")).truncated(300)
    params = [(rule.id, p.name) for rule in RULES for p in rule.params]

    def diagnose_with(rule: str, name: str, value: float) -> None:
        try:
            check_params({rule: {name: value}}, "--set")
        except ConfigError:
            return
        api.diagnose(run, Settings(params={rule: {name: value}}, select=(rule,)).doctor_config())

    for rule, name in params:
        for value in (0.0, 0.5, 1.0, 1e300):
            diagnose_with(rule, name, value)

    @settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(case=st.sampled_from(params), value=st.floats(-10, 1e6))
    def check(case, value):
        diagnose_with(*case, value)

    check()


def test_a_pyproject_whose_tool_is_not_a_table_is_one_line(capsys, tmp_path):
    config = tmp_path / "pyproject.toml"
    config.write_text("tool = 5\n")
    assert_error(capsys, ["diagnose", "--example", "healthy", "--config", str(config)],
                 f"{config}: [tool] must be a table")


@pytest.mark.skipif(os.name != "posix", reason="closes a descriptor before exec")
@pytest.mark.parametrize("closed", [(1,), (1, 2)])
def test_no_stdout_is_not_an_internal_error(closed):
    def close() -> None:
        for fd in closed:
            os.close(fd)

    for example, code in (("healthy", 0), ("entropy-collapse", 1)):
        p = subprocess.run([sys.executable, "-m", "grpo_doctor", "diagnose", "--example",
                            example], preexec_fn=close, stderr=subprocess.PIPE, timeout=120)
        assert p.returncode == code, p.stderr
        if 2 not in closed:
            assert p.stderr == b""


def test_a_metric_column_of_text_is_named_not_asked_for(capsys, tmp_path):
    """A reward column holding only text is left out, and the report says why, rather than
    asking the user to log a reward the file has a column for."""
    path = tmp_path / "text.csv"
    path.write_text("step,reward,loss\n1,abc,0.5\n2,def,0.4\n")
    code, out, err = run_cli(capsys, "diagnose", str(path), "-f", "json")
    doc = json.loads(out)
    assert code == 0 and err == "" and doc["status"] == "inconclusive"
    assert "reward (read as reward_mean) holds no numbers (e.g. 'abc'): it was left out" \
        in doc["notes"]
    path.write_text("step,reward,loss\n1,0.1,0.5\n2,0.2,0.4\n")
    code, out, _ = run_cli(capsys, "diagnose", str(path), "-f", "json")
    assert not any("holds no numbers" in n for n in json.loads(out)["notes"])


def test_a_csv_whose_every_column_is_text_is_no_log(capsys, tmp_path):
    """Every column text: not an inconclusive run (as if it were short), one line and exit 2
    from diagnose, compare and audit alike; one text column among numbers is only a note."""
    log = tmp_path / "text.csv"
    log.write_text("step,reward,kl,entropy\n1,abc,def,ghi\n2,abc,def,ghi\n")
    assert_error(capsys, ["diagnose", str(log)],
                 f"{log}: no numbers in any metric column (reward, kl, entropy hold only text)")
    message = f"{log}: no numbers in any metric column"
    code, _, err = run_cli(capsys, "compare", str(log), str(log))
    assert code == 2 and message in err and err.count("\n") == 1
    code, out, err = run_cli(capsys, "audit", str(log))
    assert code == 2 and message in err
    partial = tmp_path / "partial.csv"
    partial.write_text("step,reward,kl\n1,abc,0.1\n2,abc,0.2\n")
    code, out, _ = run_cli(capsys, "diagnose", str(partial))
    assert code == 0 and "reward (read as reward_mean) holds no numbers" in out


def test_a_folder_holding_only_a_config_is_not_a_run(capsys, tmp_path):
    """A config.json (one JSON object) is not a one-step JSONL log: diagnose and compare say
    no training log was found, and the file itself is not a JSON training log."""
    folder = tmp_path / "cfg"
    folder.mkdir()
    (folder / "config.json").write_text('{"learning_rate": 1e-6, "beta": 0.04}')
    good = PACKAGE / "examples" / "healthy.csv"
    for args in (["diagnose", str(folder)], ["compare", str(good), str(folder)]):
        code, out, err = run_cli(capsys, *args)
        assert code == 2 and err.count("\n") == 1, (args, err)
        assert f"no training log found in {folder}" in err
    code, _, err = run_cli(capsys, "diagnose", str(folder / "config.json"))
    assert code == 2 and "not a JSON training log" in err


def test_odd_arguments_are_one_line_errors_or_read(capsys, tmp_path, monkeypatch):
    """helper-73: each of these had ended in an internal error (exit 3)."""
    from grpo_doctor.api import example_path

    assert_error(capsys, ["diagnose", "--example", ""], "no example named ''", prefix=True)
    # A --since before what a timestamp holds cuts nothing.
    log = tmp_path / "run.csv"
    log.write_bytes(example_path("healthy").read_bytes())
    code, out, err = run_cli(capsys, "audit", str(log), "--since", "0001-01-01", "-j", "1")
    assert code == 0 and err == "" and "1 run:" in out
    # A file name that is not UTF-8 (pyarrow takes paths only as UTF-8).
    odd = Path(os.fsdecode(bytes(tmp_path) + b"/bad-\xff\xfe.csv"))
    odd.write_bytes(example_path("healthy").read_bytes())
    code, out, err = run_cli(capsys, "diagnose", str(odd))
    assert code == 0 and err == "" and out.startswith("HEALTHY")
    # A W&B server URL wandb itself refuses: said, never reached.
    wandb = pytest.importorskip("wandb")
    monkeypatch.setenv("WANDB_BASE_URL", "notaurl")
    monkeypatch.setenv("WANDB_API_KEY", "x" * 40)
    wandb.teardown()  # settings are read once per wandb session: a fresh one reads the URL
    try:
        assert_error(capsys, ["fetch", "ent/proj/run1", "--out", str(tmp_path / "cache")],
                     "WANDB_BASE_URL='notaurl' is not a URL wandb accepts; set it to the "
                     "server's URL (https://api.wandb.ai, or your own)")
    finally:
        wandb.teardown()


def test_watch_reads_past_a_garbage_line_with_a_bare_carriage_return(tmp_path):
    """helper-73: a line holding a bare CR, NUL and a byte not UTF-8 appended to a watched
    CSV had ended the watch in an internal error, where diagnose reads the file."""
    from grpo_doctor.api import example_path
    from grpo_doctor.watch import Watcher

    lines = example_path("entropy-collapse").read_text().splitlines(keepends=True)
    log = tmp_path / "grow.csv"
    log.write_text("".join(lines[:200]))
    watcher = Watcher(log)
    watcher.poll()
    with log.open("ab") as fh:
        fh.write(b"201,0.1\r0.2,junk\x00\xff\n")
        fh.write("".join(lines[202:250]).encode())
    watcher.poll(final=True)
    assert watcher.run is not None and watcher.run.last_step == 249


@pytest.mark.parametrize("table, said", [
    ('temperature = "hot"', "temperature: 'hot' is not a number"),
    ("num_generations = 16.5", "num_generations: 16.5 is not a whole number"),
    ("learning_rate = 1e400", "learning_rate: inf is not a finite number"),
    ("beta = nan", "beta: nan is not a number"),
])
def test_a_config_files_run_settings_are_checked_as_train_config_is(capsys, tmp_path, table,
                                                                     said):
    """helper-73: values no trainer takes in a config file's [config] had been notes on a
    diagnosis (exit 1); --train-config and preflight refuse them."""
    from grpo_doctor.api import example_path

    config = tmp_path / "grpo-doctor.toml"
    config.write_text(f"[config]\n{table}\n")
    assert_error(capsys, ["diagnose", str(example_path("healthy")), "--config", str(config)],
                 f"{config}: [config]: {said}")


def test_watch_reads_an_event_file_whose_host_name_ends_like_a_script(tmp_path):
    """helper-73: ``events.out.tfevents.1700000000.node.sh`` was passed over as a shell script
    by watch (diagnose read it): a live run was never alerted on."""
    from tensorboard.compat.proto import event_pb2, summary_pb2
    from tensorboard.summary.writer.event_file_writer import EventFileWriter

    from grpo_doctor.watch import Watcher

    written = tmp_path / "written"
    w = EventFileWriter(str(written))
    for step in range(1, 21):
        value = summary_pb2.Summary.Value(tag="train/reward", simple_value=step / 20)
        w.add_event(event_pb2.Event(wall_time=1.7e9 + step, step=step,
                                    summary=summary_pb2.Summary(value=[value])))
    w.close()
    run = tmp_path / "run"
    run.mkdir()
    next(written.glob("*tfevents*")).rename(run / "events.out.tfevents.1700000000.node.sh")
    watcher = Watcher(run)
    watcher.poll()
    assert watcher.run is not None and watcher.run.n_steps == 20


def test_the_training_config_read_beside_a_log_is_never_replaced(capsys, tmp_path):
    """helper-77: ``diagnose runB -o runB/training_args.json --force`` replaced the config
    the same report said it read its settings from."""
    run = tmp_path / "runB"
    run.mkdir()
    (run / "train.csv").write_text("step,reward,entropy\n" + "".join(
        f"{s},{0.2 + s / 100},0.5\n" for s in range(1, 41)), encoding="utf-8")
    config = run / "training_args.json"
    config.write_text(json.dumps({"learning_rate": 1e-6, "beta": 0.04}), encoding="utf-8")
    before = config.read_bytes()
    for args in (["diagnose", str(run), "-o", str(config), "--force"],
                 ["diagnose", str(run / "train.csv"), "-o", str(config), "--force"],
                 ["audit", str(run), "-o", str(config), "--force"]):
        code, _, err = run_cli(capsys, *args)
        assert code == 2 and "this command reads" in err, (args, err)
        assert config.read_bytes() == before


@pytest.mark.parametrize("command", [["diagnose", ""], ["watch", "", "--once"], ["audit", ""],
                                     ["metrics", ""]])
def test_an_empty_path_names_no_log(capsys, tmp_path, monkeypatch, command):
    """helper-77: ``diagnose "$LOG"`` with LOG unset read the current folder whole."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "train.csv").write_text("step,reward\n1,0.5\n", encoding="utf-8")
    code, out, err = run_cli(capsys, *command)
    assert code == 2 and not out and "empty" in err and err.count("\n") == 1, err


def test_one_path_given_where_a_list_is_asked(tmp_path):
    """helper-77: ``compare_sources("a.csv")`` read each character as a path ("/": the whole
    file system, hanging on /proc as root)."""
    from grpo_doctor.compare import compare_sources
    from grpo_doctor.errors import ConfigError

    with pytest.raises(ConfigError, match="takes a list of sources"):
        compare_sources(str(tmp_path / "a.csv"))


def test_the_library_answers_plausible_wrong_arguments_in_its_own_words(tmp_path):
    """helper-77: raw TypeErrors for compare_runs(run, run) and diagnose(df, format="csv"),
    and select="kl_drift" read as its letters."""
    import pandas as pd

    import grpo_doctor
    from grpo_doctor.compare import compare_runs
    from grpo_doctor.config import DoctorConfig
    from grpo_doctor.errors import ConfigError

    frame = pd.DataFrame({"step": range(1, 41), "reward": [i / 40 for i in range(40)]})
    frame.to_csv(tmp_path / "run.csv", index=False)
    run = grpo_doctor.load_run(tmp_path / "run.csv")
    with pytest.raises(ConfigError, match="format: not an option for a DataFrame"):
        grpo_doctor.diagnose(frame, format="csv")
    with pytest.raises(ConfigError, match="takes a list of Runs"):
        compare_runs(run, None)  # type: ignore[arg-type]
    assert [r.id for r in DoctorConfig(select="kl_drift").rules()] == ["kl_drift"]


@pytest.mark.skipif(not Path("/proc/kmsg").exists(), reason="no /proc/kmsg here")
@pytest.mark.parametrize("command", ["diagnose", "metrics"])
def test_a_kernel_pseudo_file_is_refused_not_read(capsys, command):
    """/proc/kmsg is a regular file by its mode, of size 0, and a read of it blocks for ever:
    diagnose had hung in the failed-launch check's read of its tail (helper-77)."""
    code, _, err = run_cli(capsys, command, "/proc/kmsg")
    assert code == 2 and "a kernel pseudo-file (/proc, /sys), not a log" in err


def test_a_ctrl_c_while_the_cli_is_still_importing_is_one_line_and_130():
    """Ctrl-C in the first tenth of a second (typer's import, before the CLI's own error
    boundary) had printed a 20-line traceback and ended as killed by SIGINT (helper-83). The
    interrupt is raised here exactly where it lands: in the import of typer."""
    probe = (
        "import sys\n"
        "class Interrupting:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name == 'typer':\n"
        "            raise KeyboardInterrupt\n"
        "sys.meta_path.insert(0, Interrupting())\n"
        "from grpo_doctor.__main__ import main\n"
        "main()\n")
    done = subprocess.run([sys.executable, "-c", probe, "--help"], capture_output=True,
                          text=True, timeout=60)
    assert (done.returncode, done.stderr) == (130, "grpo-doctor: interrupted\n")


@pytest.mark.skipif(not Path("/proc/self").exists(), reason="no /proc here")
@pytest.mark.parametrize("args", [("audit", "/proc"), ("audit", "/proc/self"),
                                  ("watch", "--once", "/proc")])
def test_a_kernel_folder_is_refused_never_walked(capsys, args):
    """/proc/<pid>/root is "/": an audit of /proc walked the whole machine and never ended
    (helper-84)."""
    code, _, err = run_cli(capsys, *args)
    assert code == 2 and "a kernel pseudo-file (/proc, /sys), not a log" in err


@pytest.mark.skipif(not Path("/proc/self").exists(), reason="no /proc here")
def test_a_link_to_proc_inside_an_audited_folder_is_not_followed(tmp_path, capsys):
    (tmp_path / "p").symlink_to("/proc")
    rows = ["step,reward"] + [f"{s},{0.01 * s}" for s in range(1, 30)]
    (tmp_path / "run.csv").write_text("\n".join(rows) + "\n")
    code, out, _ = run_cli(capsys, "audit", str(tmp_path))
    assert "1 run" in out or "1 runs" in out, out


@pytest.mark.parametrize("command", ["diagnose", "preflight"])
def test_a_symlink_loop_is_one_line_and_exit_2(tmp_path, capsys, command):
    (tmp_path / "a").symlink_to(tmp_path / "b")
    (tmp_path / "b").symlink_to(tmp_path / "a")
    code, _, err = run_cli(capsys, command, str(tmp_path / "a"))
    assert code == 2 and err.count("\n") == 1 and "internal error" not in err, err


def test_a_log_with_a_few_nul_bytes_is_read_and_utf16_text_is_said(tmp_path, capsys):
    """A crash mid-write leaves NUL bytes in a log; Windows PowerShell's '>' writes UTF-16.
    Both had been refused as "file format not recognised", not saying why (helper-84)."""
    rows = [f"{{'loss': 0.01, 'reward': {0.2 + 0.01 * s:.2f}, 'epoch': {s / 30:.2f}}}"
            for s in range(30)]
    nul = tmp_path / "crashed.log"
    nul.write_bytes(("\n".join(rows[:15]) + "\n\0\0\0" + "\n".join(rows[15:]) + "\n").encode())
    code, out, _ = run_cli(capsys, "metrics", str(nul))
    assert code == 0 and "30 logged" in out
    wide = tmp_path / "windows.log"
    wide.write_bytes(("\n".join(rows) + "\n").encode("utf-16"))
    code, _, err = run_cli(capsys, "diagnose", str(wide))
    assert code == 2 and "UTF-16 text" in err and "iconv" in err and len(err.splitlines()) == 1


def test_a_jsonl_of_numbers_written_as_text_says_so(capsys, tmp_path):
    """Trial 74: a pasted JSONL whose only metric was "52.5469|37.7781" (a mean and a std as
    text) read "no metric grpo-doctor knows (no columns)", then, with the --map that message
    asked for, "--map names a column not in" the file: two contradictions. Both name it now."""
    log = tmp_path / "ppo.jsonl"
    log.write_text("".join(f'{{"step": {s}, "ppo_response_length": "{52 - s}.5|37.7"}}\n'
                           for s in range(1, 11)))
    code, out, err = run_cli(capsys, "diagnose", str(log))
    assert (code, out) == (2, "") and len(err.strip().splitlines()) == 1
    assert "ppo_response_length ('51.5|37.7') hold numbers written as text" in err, err
    code, _, err = run_cli(capsys, "diagnose", str(log), "--map",
                           "response_length_mean=ppo_response_length")
    assert code == 2 and "holding numbers written as text" in err, err
