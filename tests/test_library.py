"""The package as a Python user meets it: errors in Python's words, and short reprs for a
notebook (a cell ending in a Diagnosis shows its Markdown report)."""

import os
import subprocess
import sys

import pytest

import grpo_doctor
from grpo_doctor.errors import InputError
from tests.helpers import REPO

WIDE = REPO / "tests" / "fixtures" / "csv" / "wide.csv"


def _three_runs(tmp_path):
    rows = ["run_id,step,reward"] + [f"{run},{i},{0.1 * i}" for run in "abc"
                                     for i in range(1, 21)]
    path = tmp_path / "multi.csv"
    path.write_text("\n".join(rows) + "\n")
    return path


def test_load_run_on_several_runs_names_the_keyword_not_the_cli_option(tmp_path):
    path = _three_runs(tmp_path)
    with pytest.raises(InputError) as raised:
        grpo_doctor.load_run(path)
    assert str(raised.value) == (f"{path} holds 3 runs (a, b, c); pick one with "
                                 "load_run(path, run=NAME), or read them all with "
                                 "load_runs(path)")
    assert "--run" not in str(raised.value)
    assert grpo_doctor.load_run(path, run="b").name == "b"  # what it says works
    assert [r.name for r in grpo_doctor.load_runs(path)] == ["a", "b", "c"]


def test_a_diagnosis_and_a_run_show_short_in_a_notebook():
    run = grpo_doctor.load_run(WIDE)
    diagnosis = grpo_doctor.diagnose(run)
    assert repr(run) == "Run(name='wide', format='csv', steps=12 (1..12), metrics=9)"
    assert repr(diagnosis) == ("Diagnosis(run='wide', status='warning', "
                               "findings=[numerical_failure:warning@7])")
    from grpo_doctor.reporters.markdown import render_markdown

    assert diagnosis._repr_markdown_() == render_markdown(diagnosis)
    assert diagnosis._repr_markdown_().startswith("## ")


def test_a_notebook_that_imported_only_the_package_shows_the_markdown_report():
    """Jupyter calls ``_repr_markdown_``; the reporter is registered by the package's top (the
    Diagnosis, low in the layers, does not import it), and imported only when displayed."""
    code = f"""if True:
        import sys
        import grpo_doctor
        diagnosis = grpo_doctor.diagnose(grpo_doctor.load_run({str(WIDE)!r}))
        assert "grpo_doctor.reporters.markdown" not in sys.modules
        shown = diagnosis._repr_markdown_()
        from grpo_doctor.reporters.markdown import render_markdown
        assert shown == render_markdown(diagnosis), shown
        print(shown.splitlines()[0])
    """
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=REPO, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("## ")


def test_the_library_dict_is_the_cli_json(capsys):
    """The README: ``to_dict()`` is exactly the JSON contract; the library's diagnosis said
    ``config: None`` where the CLI said what was applied."""
    import json

    from grpo_doctor import diagnose, load_run
    from grpo_doctor.config import DoctorConfig
    from tests.helpers import REPO, run_cli

    path = str(REPO / "grpo_doctor" / "examples" / "kl-drift.csv")
    _, out, _ = run_cli(capsys, "diagnose", path, "-f", "json")
    assert diagnose(load_run(path)).to_dict() == json.loads(out)
    ignored = diagnose(load_run(path), DoctorConfig(ignore=("kl_drift",))).to_dict()["config"]
    assert ignored == {"file": None, "ignored": ["kl_drift"], "overrides": {}}


def test_a_diagnosis_lists_its_findings_in_the_order_they_began():
    run = grpo_doctor.load_run(REPO / "tests/fixtures/corpus/20_lr_warmup_to_0.3")
    d = grpo_doctor.diagnose(run)
    onsets = [c.onset_step for c in d.findings]
    assert len(onsets) >= 3 and onsets == sorted(onsets)
    assert [c.mode for c in d.checks] == [c.mode for c in sorted(
        d.checks, key=lambda c: [r.id for r in grpo_doctor.rules.RULES].index(c.mode))]


# --- runs already in memory: a notebook's DataFrame, a Trainer's log_history --------------

ENTROPY = REPO / "grpo_doctor" / "examples" / "entropy-collapse.csv"
BONUS_STATE = (REPO / "tests" / "fixtures" / "corpus" / "22_entropy_bonus_0.5" / "checkpoint-200"
               / "trainer_state.json")


def _calls(diagnosis):
    return [(c.mode, c.status, c.onset_step) for c in diagnosis.checks]


def test_a_dataframe_in_a_notebook_gets_the_diagnosis_of_the_same_csv():
    import pandas as pd

    frame = pd.read_csv(ENTROPY)
    from_file = grpo_doctor.diagnose(grpo_doctor.load_run(ENTROPY))
    from_frame = grpo_doctor.diagnose_frame(frame, name="entropy-collapse")
    assert from_frame.status == from_file.status == "critical"
    assert _calls(from_frame) == _calls(from_file)
    assert from_frame.run.name == "entropy-collapse" and from_frame.run.format == "dataframe"
    # the step as the frame's index (df.set_index("train/global_step")) is the step
    indexed = grpo_doctor.diagnose_frame(frame.set_index("train/global_step"))
    assert _calls(indexed) == _calls(from_file)
    # and a frame whose step column has another name is read with step_column=
    renamed = frame.rename(columns={"train/global_step": "it"})
    assert _calls(grpo_doctor.diagnose_frame(renamed, step_column="it")) == _calls(from_file)


def test_a_dataframe_takes_a_column_map_and_refuses_what_it_cannot_read():
    import pandas as pd

    frame = pd.read_csv(ENTROPY).rename(columns={"train/entropy": "my_entropy"})
    unmapped = grpo_doctor.diagnose_frame(frame)
    assert unmapped.check("entropy_collapse").status == "skipped"
    mapped = grpo_doctor.diagnose_frame(frame, column_map={"entropy": "my_entropy"})
    assert mapped.check("entropy_collapse").status == "critical"
    with pytest.raises(InputError, match="expected a pandas DataFrame, got list"):
        grpo_doctor.diagnose_frame([1, 2, 3])  # type: ignore[arg-type]
    with pytest.raises(InputError, match="no metric grpo-doctor knows"):
        grpo_doctor.diagnose_frame(pd.DataFrame({"step": [1, 2], "loss_xyz": [1.0, 2.0]}))


def test_a_trainers_log_history_is_read_as_its_trainer_state_and_its_args_are_evidence():
    import json

    state = json.loads(BONUS_STATE.read_text())
    history = state["log_history"]
    from_file = grpo_doctor.diagnose(grpo_doctor.load_run(BONUS_STATE))
    from_history = grpo_doctor.diagnose_log_history(history)
    assert _calls(from_history) == _calls(from_file)
    # trainer.args.to_dict(): the entropy bonus of 0.5 is the cause the first action names
    args = {"entropy_coef": 0.5, "learning_rate": 3e-4, "beta": 0.04}
    tiny_model = grpo_doctor.DoctorConfig(recipe={"learning_rate": {"high": 5e-4}})
    told = grpo_doctor.diagnose_log_history(history, tiny_model, run_config=args)
    assert told.root_cause is not None and told.root_cause.knob["name"] == "entropy_coef"
    assert "entropy_coef 0.5 -> 0.005" in told.root_cause.first_action
    # entries without a step (a final summary without train_runtime, junk) are noted
    noisy = grpo_doctor.diagnose_log_history([*history, {"note": "x"}, "junk"])
    assert "2 log_history entries without a step were skipped" in noisy.notes
    with pytest.raises(InputError, match="expected a list of logged dicts, got str"):
        grpo_doctor.diagnose_log_history("trainer_state.json")  # type: ignore[arg-type]


def test_a_log_history_of_numpy_scalars_reads_as_one_of_python_numbers():
    """A callback that logs numpy values (np.int64 steps, np.float32 rewards) had read "no
    entry with a step": numpy's scalars are not int or float."""
    import json

    import numpy as np

    history = [e for e in json.loads(BONUS_STATE.read_text())["log_history"]
               if "train_runtime" not in e]
    as_numpy = [{k: (np.int64(v) if k == "step" else np.float32(v))
                 if isinstance(v, (int, float)) and not isinstance(v, bool) else v
                 for k, v in entry.items()} for entry in history]
    assert _calls(grpo_doctor.diagnose_log_history(as_numpy)) == _calls(
        grpo_doctor.diagnose_log_history(history))


def test_a_log_history_of_one_value_arrays_and_decimals_reads_as_numbers():
    """0-d arrays (np.asarray(x), tensor.cpu().numpy()), one-value arrays and Decimals had
    been dropped, then "the metrics are not logged"; a step of True or inf is no step
    (True had collapsed every entry into step 1; helper-84)."""
    import json
    from decimal import Decimal

    import numpy as np
    import pytest

    from grpo_doctor.errors import FormatError

    history = [e for e in json.loads(BONUS_STATE.read_text())["log_history"]
               if "train_runtime" not in e]
    wrapped = [{k: (np.asarray(v) if k == "reward" else np.array([v]) if k == "loss"
                    else Decimal(str(v)) if k == "grad_norm" else v)
                if isinstance(v, float) else v for k, v in entry.items()}
               for entry in history]
    assert _calls(grpo_doctor.diagnose_log_history(wrapped)) == _calls(
        grpo_doctor.diagnose_log_history(history))
    for bad in (True, float("inf")):
        with pytest.raises(FormatError, match="no entry with a step"):
            grpo_doctor.diagnose_log_history([{**e, "step": bad} for e in history])


def test_no_diagnosis_needs_scipy():
    """scipy is not a dependency (a plain install has none): pandas' Spearman correlation
    needs it, and a check using it crashed on a real run. Every rule case, every bundled
    example and the library's frame and log_history paths, with scipy unimportable."""
    import subprocess
    import sys

    code = """
import sys
sys.modules["scipy"] = None  # as in a plain `pip install .`
import pandas as pd
import grpo_doctor
from grpo_doctor.api import example_names, example_path
from grpo_doctor.engine import diagnose
from tests.rules.cases import CASES
for case in CASES:
    diagnose(case.build())
for name in example_names():
    grpo_doctor.diagnose_frame(pd.read_csv(example_path(name)))
"""
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]


def test_a_frame_holding_several_runs_names_them_and_picks_one(tmp_path):
    """Stacked, four runs' steps went backwards and overwrote one another into one 'healthy'
    run; a frame holding several is read as the CSV holding them is."""
    import pandas as pd

    path = _three_runs(tmp_path)
    frame = pd.read_csv(path)
    with pytest.raises(InputError, match=r"holds 3 runs \(column 'run_id': a, b, c\); pick "
                                         r"one with run=NAME"):
        grpo_doctor.diagnose_frame(frame)
    picked = grpo_doctor.run_from_frame(frame, run="b")
    from_file = grpo_doctor.load_run(path, run="b")
    assert picked.name == "b" and list(picked.steps) == list(from_file.steps)
    assert picked.frame.equals(from_file.frame)
    with pytest.raises(InputError, match="no run 'z'"):
        grpo_doctor.run_from_frame(frame, run="z")


def test_the_library_refuses_odd_arguments_with_its_own_errors(tmp_path):
    """helper-73: a path, a DataFrame or None given where a Run was expected, a rule's name as
    the config, a list as a column map had raised AttributeError, TypeError or ValueError."""
    import pandas as pd

    import grpo_doctor
    from grpo_doctor.api import example_path
    from grpo_doctor.compare import compare_runs
    from grpo_doctor.errors import ConfigError, InputError
    from grpo_doctor.watch import Watcher

    path = example_path("kl-drift")
    frame = pd.read_csv(path)
    # What a notebook user means is read: a log's path, a DataFrame (as diagnose_frame).
    assert grpo_doctor.diagnose(str(path)).status == "critical"
    assert grpo_doctor.diagnose(frame).status == "critical"
    assert grpo_doctor.load_run(os.fsencode(path)).n_steps == 800
    # A log of several runs, one picked as load_run picks it (helper-75: a TypeError).
    assert grpo_doctor.diagnose(_three_runs(tmp_path), run="b").run.name == "b"
    for call, error in (
        (lambda: grpo_doctor.diagnose(None), InputError),
        (lambda: grpo_doctor.diagnose(grpo_doctor.load_run(path), "kl_drift"), ConfigError),
        (lambda: grpo_doctor.diagnose_frame(frame, "kl_drift"), ConfigError),
        (lambda: grpo_doctor.diagnose_frame(frame, column_map=["a"]), ConfigError),
        (lambda: grpo_doctor.diagnose_log_history(
            [{"step": i, "reward": i / 20} for i in range(1, 21)], run_config="x"), ConfigError),
        (lambda: grpo_doctor.load_run(path, run=123), ConfigError),
        (lambda: grpo_doctor.load_run(None), InputError),
        (lambda: compare_runs([None, None]), ConfigError),
        (lambda: grpo_doctor.diagnose(grpo_doctor.load_run(path), run="b"), ConfigError),
        (lambda: Watcher(None), InputError),
    ):
        with pytest.raises(error):
            call()
