"""One run, counted once: Trainer output folders holding several logs of one run.

Each folder is built from fixtures of one synthetic run written by real writers (TensorBoard
through tensorboardX, a W&B offline run through wandb, the CSV of the same values), plus the
``trainer_state.json`` a Trainer saves (its ``log_history``: TRL's keys without the
``train/`` prefix its TensorBoard and W&B callbacks add) and its checkpoints' prefixes.
"""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

import pytest

from grpo_doctor import audit as auditing
from grpo_doctor.importers import detect_format, load_run, load_runs
from tests.helpers import run_cli

FIXTURES = Path(__file__).parent / "fixtures"
CSV = FIXTURES / "tensorboard" / "grpo_synthetic.csv"
WANDB_RUN = FIXTURES / "wandb" / "wandb" / "offline-run-20250101_000000-grpofix1"
STATE = "trainer_state.json"
FOLDERS = ["r08_lr1e-6", "r09_lr5e-6", "r10_beta0", "r11_beta0.1"]


def log_history() -> list[dict[str, float]]:
    with CSV.open() as fh:
        rows = list(csv.DictReader(fh))
    history = []
    for row in rows:
        entry: dict[str, float] = {}
        for key, value in row.items():
            if value and key != "step":
                name = key.replace("eval/", "eval_").removeprefix("train/")
                entry[name] = float(value)
        history.append({**entry, "step": int(row["step"])})
    return history


def output_folder(folder: Path, *, top_state: bool = True, saves: tuple[int, ...] = (100, 200)
                  ) -> Path:
    """A Trainer output folder: metrics.csv, trainer_state.json, tensorboard/, wandb/ and
    checkpoint-N/trainer_state.json."""
    history = log_history()
    shutil.copytree(FIXTURES / "tensorboard" / "simple_value", folder / "tensorboard")
    shutil.copytree(WANDB_RUN, folder / "wandb" / WANDB_RUN.name)
    shutil.copy(CSV, folder / "metrics.csv")
    (folder / "README.md").write_text("# notes\n\n| lr | beta |\n|---|---|\n| 1 | 2 |\n")
    (folder / "config.json").write_text('{"learning_rate": 1e-6}')
    for step in saves:
        (folder / f"checkpoint-{step}").mkdir()
        state = {"global_step": step, "max_steps": 200, "log_history": history[:step]}
        (folder / f"checkpoint-{step}" / "trainer_state.json").write_text(json.dumps(state))
    if top_state:
        shutil.copy(folder / f"checkpoint-{saves[-1]}" / "trainer_state.json", folder)
    return folder


@pytest.fixture(scope="module")
def runs_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("outputs")
    for name in FOLDERS:
        output_folder(root / name)
    # One copy that disagrees with the others: the CSV's reward edited at three steps.
    edited = root / FOLDERS[2] / "metrics.csv"
    lines = edited.read_text().splitlines()
    for i in (10, 20, 30):
        cells = lines[i].split(",")
        cells[1] = "9.5"
        lines[i] = ",".join(cells)
    edited.write_text("\n".join(lines) + "\n")
    return root


@pytest.fixture(scope="module")
def result(runs_root: Path) -> auditing.AuditResult:
    return auditing.audit([str(runs_root)], jobs=1)


def test_audit_reports_one_row_per_output_folder_named_after_it(result):
    assert sorted(r.name for r in result.runs) == FOLDERS
    assert sorted(r.label for r in result.runs) == FOLDERS
    assert sorted(r.source for r in result.runs) == FOLDERS
    assert not result.errors
    # Read from the trainer state (as rich as the others, and it carries the config).
    assert {r.record["run"]["format"] for r in result.runs} == {"trainer-state"}


def test_copies_and_earlier_checkpoints_are_passed_over_with_why(result):
    passed = {p.source: p.why for p in result.passed_over}
    for name in FOLDERS:
        assert passed[f"{name}/metrics.csv"] == "another copy of the same run, no richer (200 x 9)"
        assert passed[f"{name}/tensorboard"].startswith("another copy of the same run")
        assert passed[f"{name}/wandb/{WANDB_RUN.name}"].startswith("another copy of the same run")
        for step in (100, 200):
            assert passed[f"{name}/checkpoint-{step}/trainer_state.json"] == (
                "an earlier save of the same log_history")
    assert len(passed) == 5 * len(FOLDERS)


def test_verbose_lists_what_was_passed_over(capsys, runs_root):
    code, out, _ = run_cli(capsys, "audit", str(runs_root), "--jobs", "1")
    assert code == 1 and "4 runs:" in out and "passed over" not in out
    code, out, _ = run_cli(capsys, "audit", str(runs_root), "--jobs", "1", "-v")
    assert "passed over (20):" in out
    assert "r08_lr1e-6/checkpoint-100/trainer_state.json: an earlier save of the same " \
           "log_history" in out


def test_a_copy_that_disagrees_is_a_note(runs_root):
    run = load_run(runs_root / FOLDERS[2])
    assert ("metrics.csv disagrees with trainer_state.json: reward_mean differs at 3 of 200 "
            "shared steps (step 10: 9.5 there, ") in " ".join(run.notes)
    clean = load_run(runs_root / FOLDERS[0])
    assert not any("disagrees" in n for n in clean.notes)


def test_metrics_says_which_files_were_found_and_used(capsys, runs_root):
    code, out, _ = run_cli(capsys, "metrics", str(runs_root / FOLDERS[0]))
    assert code == 0
    assert ("one run's folder: 4 logs of it found; read trainer_state.json (trainer-state, "
            "200 steps x 9 metrics), the richest") in out
    assert ("passed over other copies: metrics.csv (200 x 9), tensorboard (200 x 9), "
            "wandb/offline-run-20250101_000000-grpofix1 (200 x 9); earlier checkpoints: "
            "checkpoint-100/trainer_state.json, checkpoint-200/trainer_state.json") in " ".join(
                out.split())


def test_diagnose_reads_the_folder_as_one_run_or_one_copy_when_told(runs_root):
    folder = runs_root / FOLDERS[0]
    assert detect_format(folder).name == "run-folder"
    (run,) = load_runs(folder)
    assert run.name == FOLDERS[0] and run.source == str(folder / "trainer_state.json")
    (tb,) = load_runs(folder, format="tensorboard")
    assert tb.format == "tensorboard" and not any("one run's folder" in n for n in tb.notes)
    (csv_run,) = load_runs(folder / "metrics.csv")
    assert csv_run.format == "csv" and csv_run.name == FOLDERS[0]  # "metrics" says nothing


def test_the_richest_copy_is_read(tmp_path):
    """The Trainer saved at step 100 and the run went on: TensorBoard has all 200 steps."""
    folder = output_folder(tmp_path / "crashed", top_state=False, saves=(50, 100))
    (folder / "metrics.csv").unlink()
    shutil.rmtree(folder / "wandb")
    run = load_run(folder)
    assert run.format == "tensorboard" and run.n_steps == 200 and run.name == "crashed"
    assert ("passed over other copies: checkpoint-100/trainer_state.json (100 x 9); "
            "earlier checkpoints: checkpoint-50/trainer_state.json") in run.notes
    assert run.config["max_steps"] == 200  # the copies' config fills in what the run lacks


def test_a_folder_of_runs_side_by_side_is_not_one_run(tmp_path):
    """Unrelated logs (and a subfolder of other logs) beside a TensorBoard folder."""
    shutil.copytree(FIXTURES / "tensorboard" / "simple_value", tmp_path / "tensorboard")
    shutil.copy(CSV, tmp_path / "a.csv")
    (tmp_path / "more").mkdir()
    shutil.copy(CSV, tmp_path / "more" / "b.csv")
    result = auditing.audit([str(tmp_path)], jobs=1)
    # The event files hold the values of the CSVs: the same run read as another format,
    # listed once, the copy that told the most settings kept (the two CSVs, one format,
    # stay two rows, as given, where one of them is kept).
    told = {r.source: len(r.record["setup"]) for r in result.runs}
    copies = sorted(p.source for p in result.passed_over if p.copy)
    assert sorted([*told, *copies]) == ["a.csv", "more/b.csv", "tensorboard"]
    assert copies in (["tensorboard"], ["a.csv", "more/b.csv"]), copies


def test_text_documents_are_audited_when_they_hold_a_training_log(tmp_path):
    capture = (FIXTURES / "console" / "trl.log").read_text()
    (tmp_path / "run_terminal.md").write_text("# run\n\n```\n" + capture + "```\n")
    (tmp_path / "README.md").write_text("# results\n\n| model | score |\n|---|---|\n| a | 1 |\n")
    result = auditing.audit([str(tmp_path)], jobs=1)
    assert [r.source for r in result.runs] == ["run_terminal.md"]
    assert not result.errors
    (readme,) = [p for p in result.passed_over if p.source == "README.md"]
    assert "training log" in readme.why  # not recognised, or recognised but empty


def test_diagnose_of_a_folder_passes_over_notes_beside_its_log(tmp_path):
    """A Markdown table of notes beside the one log (a CSV to a sniffer) is not a second run:
    the folder is that log, as audit reads it."""
    shutil.copy(CSV, tmp_path / "metrics.csv")
    (tmp_path / "NOTES.md").write_text("# Notes, run 1\n\nlr, beta, reward\n1, 2, 3\n")
    (run,) = load_runs(tmp_path)
    assert run.source.endswith("metrics.csv") and run.format == "csv"
    assert len(run.steps) == len(load_runs(CSV)[0].steps)


def test_a_bare_log_history_list_is_audited(tmp_path):
    (tmp_path / "step_logs.json").write_text(json.dumps(log_history()))
    (tmp_path / "tokenizer_config.json").write_text(json.dumps({"model_max_length": 512}))
    result = auditing.audit([str(tmp_path)], jobs=1)
    assert [(r.source, r.record["run"]["format"]) for r in result.runs] == [
        ("step_logs.json", "trainer-state")]
    assert [p.source for p in result.passed_over] == ["tokenizer_config.json"]


def _state_of(example: str, steps: int) -> dict:
    """A trainer state whose log_history is the first ``steps`` rows of an example run."""
    from grpo_doctor.api import example_path

    with example_path(example).open() as fh:
        rows = list(csv.DictReader(fh))[:steps]
    history = [{**{k.removeprefix("train/"): float(v) for k, v in row.items()
                   if k != "train/global_step"}, "step": int(row["train/global_step"])}
               for row in rows]
    return {"global_step": steps, "max_steps": steps, "log_history": history}


def test_a_gpu_statistics_csv_does_not_outrank_the_trainer_state(tmp_path, capsys):
    folder = tmp_path / "run"
    folder.mkdir()
    (folder / STATE).write_text(json.dumps(_state_of("entropy-collapse", 800)))
    cols = [f"gpu{i}_{what}" for i in range(8) for what in ("util", "mem", "temp", "power")]
    rows = [",".join(["step", *cols])] + [",".join([str(s), *(["1.5"] * len(cols))])
                                          for s in range(1, 1601)]
    (folder / "gpu_stats.csv").write_text("\n".join(rows) + "\n")
    run = load_run(folder)
    assert run.format == "trainer-state"
    assert run.notes[0].startswith("one run's folder: 2 logs of it found; read "
                                   "trainer_state.json (trainer-state, 800 steps x 8 metrics)")
    assert "gpu_stats.csv (holds no metric grpo-doctor knows (1600 x 32))" in run.notes[1]
    code, _, err = run_cli(capsys, "diagnose", str(folder))
    assert code == 1, err  # the collapse is found


def test_a_log_of_another_run_beside_the_state_is_a_run_of_its_own(tmp_path, capsys):
    from grpo_doctor.api import example_path

    folder = tmp_path / "run"
    folder.mkdir()
    (folder / STATE).write_text(json.dumps(_state_of("entropy-collapse", 800)))
    lines = example_path("healthy").read_text().splitlines()  # another run, logged longer
    more = [f"{int(row.split(',', 1)[0]) + 800},{row.split(',', 1)[1]}" for row in lines[1:]]
    (folder / "metrics.csv").write_text("\n".join([*lines, *more]) + "\n")
    runs = load_runs(folder)
    assert [r.name for r in runs] == ["run", "run/trainer_state.json"]
    assert any("trainer_state.json is not a copy of metrics.csv: it differs at " in n
               and "another run's log, read as a run of its own" in n for n in runs[0].notes)
    result = auditing.audit([str(folder)], jobs=1)
    status = {r.name: r.status for r in result.runs}
    assert status["run/trainer_state.json"] == "critical" and status["run"] != "critical"
    code, _, err = run_cli(capsys, "diagnose", str(folder))
    assert code == 2 and "holds 2 runs" in err
    code, _, _ = run_cli(capsys, "diagnose", str(folder), "--run", "run/trainer_state.json")
    assert code == 1


def test_a_stdout_capture_without_steps_is_a_copy_of_the_state(tmp_path):
    """transformers 5 prints each log as a dict of 4-significant-figure strings with no step,
    and ``python train.py > console.log`` keeps no progress bar (stderr): the i-th dict is the
    state's i-th logged step (every 10th here), within its printed rounding. A script's own
    print of its settings (``RUN {"learning_rate": ...}``) is no row."""
    state = _state_of("entropy-collapse", 400)
    state["log_history"] = [e for e in state["log_history"] if e["step"] % 10 == 0]
    folder = tmp_path / "run"
    (folder / "checkpoint-400").mkdir(parents=True)
    (folder / "checkpoint-400" / STATE).write_text(json.dumps(state))
    lines = ['RUN demo {"learning_rate": 1e-06, "seed": 1} task sum']
    for entry in state["log_history"]:
        printed = {k: f"{v:.4g}" for k, v in entry.items() if k != "step"}
        lines.append(repr(printed))
    (folder / "console.log").write_text("\n".join(lines) + "\n")
    run = load_run(folder)
    assert run.format == "trainer-state" and run.n_steps == 40
    assert "console.log (40 x" in run.notes[1], run.notes
    assert not any("disagrees" in n or "not a copy" in n for n in run.notes), run.notes
    alone = load_run(folder / "console.log")
    assert alone.n_steps == 40  # the settings line is not a row


def test_a_reward_term_logged_as_none_on_every_step_is_kept_from_the_copy_that_has_it(
        tmp_path):
    """Trial 44: a reward function that returned None for every completion (it read a dataset
    column that does not exist). TRL logged ``None`` for its mean; TensorBoard drops such a
    tag, so the folder read the events and the term was gone: its first action blamed the
    format term. The trainer state's nulls are evidence, carried into the run read."""
    folder = output_folder(tmp_path / "none_reward", saves=(200,))
    (folder / "metrics.csv").unlink()
    shutil.rmtree(folder / "wandb")
    state = json.loads((folder / STATE).read_text())
    dropped = next(k for k in state["log_history"][0] if k != "step")
    for entry in state["log_history"]:
        entry.pop(dropped)  # the events hold more: TRL's TensorBoard tags outnumber its state's
        entry["rewards/correctness_reward/mean"] = None
        entry["rewards/correctness_reward/std"] = None
    (folder / STATE).write_text(json.dumps(state))
    alone = load_run(folder / STATE)
    assert len(alone.nan_steps["reward_component/correctness_reward"]) == alone.n_steps
    run = load_run(folder)
    assert run.format == "tensorboard"
    assert len(run.nan_steps["reward_component/correctness_reward"]) == run.n_steps
    assert any("rewards/correctness_reward/mean, rewards/correctness_reward/std logged with "
               "no value (None) on every step" in n for n in run.notes), run.notes
    # A null elsewhere is no number, as before: not evidence of anything.
    state["log_history"][0]["learning_rate"] = None
    (folder / STATE).write_text(json.dumps(state))
    assert "learning_rate" not in load_run(folder / STATE).nan_steps


def test_an_output_folder_whose_only_log_is_a_loggers_store_reads_the_store(tmp_path):
    """Trial 44: TRL with report_to swanlab (or trackio) and no checkpoint saved yet leaves
    an output folder holding only ``swanlog/`` beside notes; it read "no training log found"
    (exit 2) while the store itself reads fine."""
    folder = tmp_path / "swan_out"
    folder.mkdir()
    run_dir = sorted((FIXTURES / "swanlab" / "swanlog").iterdir())[0]
    shutil.copytree(run_dir, folder / "swanlog" / run_dir.name)
    (folder / "README.md").write_text("# notes\n")
    run = load_run(folder)
    assert run.format == "swanlab" and run.n_steps > 0


def test_tensorboard_events_beside_other_logs_are_a_folder_of_runs(tmp_path, capsys):
    """``diagnose`` of a folder holding one TensorBoard run among other runs' logs (a CSV, a
    console log, in subfolders of their own) read the events alone under the folder's name,
    without a word (helper-50, on ../shared/real-runs)."""
    folder = tmp_path / "many"
    shutil.copytree(FIXTURES / "tensorboard" / "simple_value", folder / "tensorboard")
    (folder / "csv").mkdir()
    shutil.copy(CSV, folder / "csv" / "metrics.csv")
    code, _out, err = run_cli(capsys, "diagnose", str(folder))
    assert code == 2 and "holds TensorBoard events and 1 other log (csv)" in err, err
    assert "audit" in err
    # The events' own folder reads as before.
    assert load_run(folder / "tensorboard").format == "tensorboard"


def _trainer_state_of(run, last_step: int) -> dict:
    """A Trainer's trainer_state.json holding ``run``'s values up to ``last_step``, under the
    names TRL logs them (its loggers add the ``train/`` prefix)."""
    history = []
    for step, row in run.frame.loc[:last_step].iterrows():
        entry = {run.mapping[c].removeprefix("train/").replace("eval/", "eval_"): float(v)
                 for c, v in row.items() if c in run.mapping and v == v}
        history.append({**entry, "step": int(step)})
    return {"global_step": last_step, "log_history": history}


@pytest.mark.parametrize("saved_at", [100, 200])
def test_a_loggers_store_beside_the_checkpoints_is_a_copy_and_wins_when_it_goes_further(
        tmp_path, saved_at):
    """Trial 44: TRL's SwanLab (MLflow, Trackio) callback writes its store beside the
    checkpoints; the folder read the checkpoint's trainer state without listing the store.
    After a crash past the last save, only the store reaches the last step."""
    run_dir = sorted((FIXTURES / "swanlab" / "swanlog").iterdir())[0]
    store = load_run(run_dir)
    folder = tmp_path / "out"
    shutil.copytree(run_dir, folder / "swanlog" / run_dir.name)
    saved = folder / f"checkpoint-{saved_at}"
    saved.mkdir()
    (saved / STATE).write_text(json.dumps(_trainer_state_of(store, saved_at)))
    run = load_run(folder)
    assert run.last_step == store.last_step == 200
    read = run.notes[0]
    if saved_at < 200:
        assert run.format == "swanlab" and "read swanlog (swanlab" in read, read
        assert f"checkpoint-{saved_at}/trainer_state.json ({saved_at} x" in run.notes[1]
    else:  # as rich in what the checks read: the trainer state, which brings its settings
        assert run.format == "trainer-state" and "swanlog" in run.notes[1], run.notes[:2]



def test_a_damaged_store_beside_the_checkpoints_is_said_not_dropped(tmp_path):
    """An mlflow.db cut short in a Trainer output folder was left out without a word."""
    run_dir = sorted((FIXTURES / "swanlab" / "swanlog").iterdir())[0]
    store = load_run(run_dir)
    folder = tmp_path / "out"
    (folder / "checkpoint-200").mkdir(parents=True)
    (folder / "checkpoint-200" / STATE).write_text(json.dumps(_trainer_state_of(store, 200)))
    shutil.copy(CSV, folder / "metrics.csv")
    (folder / "mlflow.db").write_bytes(b"SQLite format 3\x00" + b"\x10\x00" + b"\x00" * 200)
    run = load_run(folder)
    assert "mlflow.db (a tracker's SQLite store that cannot be read)" in run.notes[1], run.notes
    # With the checkpoint its only other log too (helper-57: the folder read as its
    # checkpoint, the store unsaid).
    (folder / "metrics.csv").unlink()
    run = load_run(folder)
    assert run.format == "trainer-state" and run.last_step == 200
    assert "1 log of it found" in run.notes[0] and "the richest" not in run.notes[0], run.notes
    assert "mlflow.db (a tracker's SQLite store that cannot be read)" in run.notes[1], run.notes


def test_a_copy_printed_to_6_decimals_agrees_with_the_full_precision_log():
    """A notebook's table prints 6 decimals: a loss of -6.6e-9 is -0.000000 there. Trial 55
    read "disagrees ... loss differs at 116 of 200 shared steps (step 13: -0 there,
    -6.62274e-09 here)" from the rounding alone; a real difference is still one."""
    import numpy as np

    from grpo_doctor.importers.run_folder import _disagreement
    from tests.helpers import make_run

    rng = np.random.default_rng(1)
    loss = rng.normal(0, 1e-8, 200)
    reward = rng.random(200)
    full = make_run(loss=loss, reward=reward)
    printed = make_run(loss=np.round(loss, 6), reward=np.round(reward, 6))
    assert _disagreement(full, printed) is None
    edited = make_run(loss=np.round(loss, 6), reward=np.where(np.arange(200) == 7, 9.5,
                                                              np.round(reward, 6)))
    assert "differs at 1 of 200" in (_disagreement(full, edited) or "")


def test_a_log_read_alone_names_a_richer_trainer_state_beside_it(tmp_path):
    """Pointed at a notebook or CSV of a run whose checkpoint holds the full log_history, the
    checks the richer log feeds were skipped unsaid (trial 55: 7 checks of 11 on a notebook,
    its entropy and grad norm in checkpoint-200/trainer_state.json)."""
    from grpo_doctor.sources import load_runs as load_source

    n = 30
    history = [{"step": s, "reward": 0.1 + s / 100, "entropy": 0.5 - s / 200,
                "grad_norm": 0.3, "loss": 0.01} for s in range(1, n + 1)]
    (tmp_path / "checkpoint-30").mkdir()
    (tmp_path / "checkpoint-30" / "trainer_state.json").write_text(json.dumps(
        {"global_step": n, "max_steps": n, "log_history": history}))
    table = tmp_path / "table.csv"
    table.write_text("step,reward\n" + "".join(f"{h['step']},{h['reward']}\n" for h in history))
    note = next((x for x in load_source(table)[0].notes if "richer log" in x), None)
    assert note is not None and note.startswith(
        "a richer log of this run lies beside it: checkpoint-30/trainer_state.json"), note
    # Read from the folder, or with nothing richer beside it: no such note.
    assert not any("richer log" in x for x in load_source(tmp_path)[0].notes)
    lone = tmp_path / "lone"
    lone.mkdir()
    (lone / "table.csv").write_text(table.read_text())
    assert not any("richer log" in x for x in load_source(lone / "table.csv")[0].notes)


def test_trls_completion_samples_folder_is_the_runs_not_another_run(tmp_path):
    """TRL's log_completions writes completions/completions_NNNNN.parquet (prompt, completion,
    each reward, advantage) into the output folder: trial 70's audit split such a folder into
    six runs and an error row ("map yours with --map reward_mean=correctness_reward")."""
    import pandas as pd

    folder = output_folder(tmp_path / "run")
    samples = folder / "completions"
    samples.mkdir()
    for step in (1, 2, 3):
        pd.DataFrame({"step": [step] * 2, "prompt": ["1+2=", "3+4="],
                      "completion": ["<a>3</a>", "<a>7</a>"], "correctness_reward": [1.0, 1.0],
                      "advantage": [0.0, 0.0]}).to_parquet(
                          samples / f"completions_{step:05d}.parquet")
    (run,) = load_runs(folder)
    assert run.name == "run" and run.format == "trainer-state"
    assert any("completions" in n and "log_completions" in n for n in run.notes), run.notes
    res = auditing.audit([str(tmp_path)], jobs=1)
    assert [r.name for r in res.runs] == ["run"] and not res.errors
    # A folder of that name holding a metric log is read as any other (helper-93).
    other = tmp_path / "other"
    other.mkdir()
    (other / "completions").mkdir()
    shutil.copy(CSV, other / "completions" / "metrics.csv")
    res = auditing.audit([str(other)], jobs=1)
    assert len(res.runs) == 1 and res.runs[0].source.endswith("metrics.csv"), res.runs


def test_trls_completion_samples_named_alone_are_refused_in_one_line(tmp_path, capsys):
    """helper-97: diagnose on completions/ offered "--map reward_mean=prompt"; watch waited on
    it forever."""
    import pandas as pd

    samples = tmp_path / "run" / "completions"
    samples.mkdir(parents=True)
    pd.DataFrame({"prompt": ["1+2="], "completion": ["<a>3</a>"],
                  "correctness_reward": [1.0]}).to_parquet(samples / "completions_00001.parquet")
    for target in (samples, samples / "completions_00001.parquet"):
        for command in (("diagnose", str(target)), ("watch", str(target), "--once")):
            code, out, err = run_cli(capsys, *command)
            assert code == 2 and "sampled completions (TRL's log_completions)" in err, (
                command, err)
            assert len(err.strip().splitlines()) == 1


def test_a_console_beside_one_loggers_store_before_any_checkpoint_is_one_run(tmp_path):
    """Trial 72: a run in its first steps holds its console and the store TRL's Trackio,
    MLflow or SwanLab callback writes, no checkpoint yet: a folder watch alerted twice, once
    per copy. A store of several runs beside a console is still a folder of runs."""
    from grpo_doctor.importers import load_runs as load

    swanlog = FIXTURES / "swanlab" / "swanlog"
    one = tmp_path / "early"
    (one / "swanlog").mkdir(parents=True)
    shutil.copytree(swanlog / "run-20261201_154105-tocybb26",
                    one / "swanlog" / "run-20261201_154105-tocybb26")
    (store,) = load(one / "swanlog")
    rows = ["{" + f"'loss': 0.1, 'reward': {v:.4f}, 'epoch': {s / 200:.3f}" + "}"
            for s, v in zip(store.steps, store.frame["reward_mean"])]
    (one / "console.log").write_text("\n".join(rows) + "\n")
    runs = load(one)
    assert len(runs) == 1 and runs[0].name == "early", [(r.name, r.source) for r in runs]
    several = tmp_path / "several"
    shutil.copytree(swanlog, several / "swanlog")
    (several / "console.log").write_text("\n".join(rows) + "\n")
    assert len(auditing.audit([str(several)], jobs=1).runs) == 3


def test_a_watch_keeps_reading_its_copy_while_it_keeps_up(tmp_path):
    """Trial 76: a live watch of a run folder re-read it whole at each change and took the
    richest copy each time (a buffered SwanLab log, the console, a checkpoint's state in turn);
    a copy with poorer evidence then cleared what another had raised. The copy read before is
    kept while it is as far on as the richest, and left once it falls behind."""
    from grpo_doctor.importers import importer_named
    from grpo_doctor.importers.base import LoadOptions

    run_dir = sorted((FIXTURES / "swanlab" / "swanlog").iterdir())[0]
    store = load_run(run_dir)
    folder = tmp_path / "out"
    shutil.copytree(run_dir, folder / "swanlog" / run_dir.name)
    (folder / "checkpoint-200").mkdir()
    (folder / "checkpoint-200" / STATE).write_text(json.dumps(_trainer_state_of(store, 200)))
    folder_reader = importer_named("run-folder")
    swanlog = str(folder / "swanlog")
    assert load_run(folder).format == "trainer-state"  # as far on, and preferred
    kept = folder_reader.load(folder, LoadOptions(keep_copy=swanlog))[0]
    assert kept.format == "swanlab" and "the one read before" in kept.notes[0], kept.notes[0]
    # The copy read before falls behind (a checkpoint's state at 100 of 200): the richest.
    (folder / "checkpoint-200" / STATE).unlink()
    (folder / "checkpoint-200").rmdir()
    (folder / "checkpoint-100").mkdir()
    (folder / "checkpoint-100" / STATE).write_text(json.dumps(_trainer_state_of(store, 100)))
    behind = str(folder / "checkpoint-100" / STATE)
    assert folder_reader.load(folder, LoadOptions(keep_copy=behind))[0].format == "swanlab"
