"""A checkpoint's ``training_args.bin`` (the pickled TrainingArguments or GRPOConfig every
Hugging Face checkpoint holds) is read as the run's settings, without importing or running
anything the pickle names."""

from __future__ import annotations

import contextlib
import importlib.util
import io
import json
import os
import pickle
import shutil
import sys
import zipfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from grpo_doctor.errors import FormatError, InputError
from grpo_doctor.importers.pickled_args import read_training_args
from grpo_doctor.sources import load_runs
from tests.helpers import run_cli
from tests.test_sidecar_config import _sharpening

#: Saved by a real trl.GRPOConfig through torch.save (scripts/make_fixture_training_args.py).
GRPO_ARGS = Path(__file__).parent / "fixtures" / "training_args" / "training_args.bin"


def _checkpoint(tmp_path: Path, args: Path | bytes = GRPO_ARGS) -> Path:
    """outputs/checkpoint-250/ as a Trainer leaves it: the trainer state (an entropy collapse
    from the first step while the reward rises) beside the pickled arguments."""
    folder = tmp_path / "outputs" / "checkpoint-250"
    folder.mkdir(parents=True)
    history = [{"step": int(r.step), "epoch": round(r.step / 250, 4),
                "reward": round(float(r.reward), 4), "entropy": round(float(r.entropy), 4)}
               for r in _sharpening().itertuples()]
    (folder / "trainer_state.json").write_text(json.dumps(
        {"global_step": 250, "log_history": history}))
    if isinstance(args, Path):
        shutil.copy(args, folder / "training_args.bin")
    else:
        (folder / "training_args.bin").write_bytes(args)
    return folder


def test_trls_saved_grpo_config_is_read_field_by_field_without_trl():
    fields = read_training_args(GRPO_ARGS)
    assert fields["learning_rate"] == 3e-3
    assert fields["beta"] == 0.0
    assert fields["num_generations"] == 4
    assert fields["temperature"] == 2.0
    assert fields["max_completion_length"] == 64
    assert fields["max_grad_norm"] == 1.0
    assert fields["lr_scheduler_type"] == "linear"  # an enum member, read as its value
    assert fields["bf16"] is False
    assert isinstance(fields["accelerator_config"], dict)  # a nested dataclass, as its fields
    assert "trl" not in sys.modules  # nothing the pickle names was imported


def test_a_checkpoints_training_args_are_the_evidence_the_advice_names(tmp_path, capsys):
    folder = _checkpoint(tmp_path)
    code, out, _ = run_cli(capsys, "diagnose", str(folder / "trainer_state.json"), "-f", "json")
    report = json.loads(out)
    assert report["root_cause"]["knob"]["name"] == "learning_rate"
    assert report["root_cause"]["first_action"].startswith("learning_rate 0.003 -> 1e-6")
    assert any("training_args.bin, beside the log" in n for n in report["notes"])
    (run,) = load_runs(folder)
    assert run.config["temperature"] == 2.0 and run.name == "outputs"
    # Kept elsewhere, it is given with --train-config, as a YAML config would be.
    _sharpening().to_csv(tmp_path / "metrics.csv", index=False)
    code, out, _ = run_cli(capsys, "diagnose", str(tmp_path / "metrics.csv"), "--train-config",
                           str(GRPO_ARGS), "-f", "json")
    assert json.loads(out)["root_cause"]["knob"]["name"] == "learning_rate"


def test_a_console_capture_in_the_output_folder_reads_the_latest_checkpoints_args(tmp_path):
    """``python train.py > outputs/console.log``: the Trainer saved its settings only in
    ``outputs/checkpoint-N/``; the latest checkpoint's are the run's (an earlier one's may be
    a run resumed with other settings)."""
    folder = _checkpoint(tmp_path)
    early = folder.parent / "checkpoint-50"
    early.mkdir()
    (early / "training_args.bin").write_bytes(b"not a pickle")
    rows = [repr({"loss": "0.01", "reward": f"{r.reward:.4g}", "entropy": f"{r.entropy:.4g}",
                  "epoch": f"{r.step / 250:.4g}"}) for r in _sharpening().itertuples()]
    (folder.parent / "console.log").write_text("\n".join(rows) + "\n")
    from grpo_doctor.importers.sidecar import with_sidecar_config
    from grpo_doctor.sources import load_run

    run = with_sidecar_config(load_run(folder.parent / "console.log"))
    assert run.config["learning_rate"] == 3e-3 and run.config["temperature"] == 2.0
    assert any("settings read from checkpoint-250/training_args.bin, beside the log" in n
               for n in run.notes), run.notes


def test_preflight_reads_a_training_args_bin(tmp_path, capsys):
    code, out, err = run_cli(capsys, "preflight", str(GRPO_ARGS))
    assert code == 1, err
    assert "(trl)" in out
    assert "learning_rate 0.003 -> 1e-6" in out
    assert "temperature 2 -> 1.0" in out


def _hostile(marker: Path) -> bytes:
    """A pickle that would run a shell command on load (``os.system``), then build an
    arguments-like object: what a training_args.bin from elsewhere could hold."""
    command = f"touch {marker}".encode()
    return (b"cos\nsystem\n(S'" + command + b"'\ntR"
            b"0ctransformers.training_args\nTrainingArguments\n)\x81}(Vlearning_rate\n"
            b"F0.5\nVmax_grad_norm\nF1.0\nub.")


def test_a_hostile_pickle_runs_nothing(tmp_path, capsys):
    marker = tmp_path / "ran"
    payload = _hostile(marker)
    proof = tmp_path / "proof"
    with contextlib.suppress(Exception):  # without transformers it fails after the command
        pickle.loads(_hostile(proof))
    assert proof.exists()  # the payload is real: the standard unpickler runs it
    bin_path = tmp_path / "training_args.bin"
    bin_path.write_bytes(payload)
    fields = read_training_args(bin_path)
    assert fields == {"learning_rate": 0.5, "max_grad_norm": 1.0}
    folder = _checkpoint(tmp_path / "run", payload)
    load_runs(folder)
    code, out, err = run_cli(capsys, "preflight", str(bin_path))
    assert not marker.exists()


def test_a_bin_that_holds_no_arguments_is_one_line_and_exit_2(tmp_path, capsys):
    cases = {
        "random.bin": os.urandom(3000),
        "dict.bin": pickle.dumps({"learning_rate": 1e-6}),  # no arguments object
        "weights.bin": _zip({"archive/data.pkl": pickle.dumps(3), "archive/data/0": b"x" * 64}),
        "no_data.bin": _zip({"archive/version": b"3"}),
        "bomb.bin": _zip({"archive/data.pkl": b"\x80\x02N." + b"\0" * (5 << 20)}),
        "cut.bin": GRPO_ARGS.read_bytes()[:2000],
        "empty.bin": b"",
    }
    for name, data in cases.items():
        path = tmp_path / name
        path.write_bytes(data)
        with pytest.raises(FormatError):
            read_training_args(path)
        code, out, err = run_cli(capsys, "preflight", str(path))
        assert code == 2 and out == "" and len(err.strip().splitlines()) == 1, (name, err)
    # Beside a log, such a file is passed over: the log is read as if it were absent.
    folder = _checkpoint(tmp_path / "run", cases["random.bin"])
    (run,) = load_runs(folder)
    assert "learning_rate" not in (run.config or {})
    assert not any("training_args.bin" in n for n in run.notes)


def _zip(members: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return buffer.getvalue()


@settings(max_examples=200, deadline=None)
@given(cut=st.integers(0, 8000), flips=st.lists(st.tuples(st.integers(0, 7999),
                                                        st.integers(0, 255)), max_size=6))
def test_damaged_training_args_read_or_fail_as_format_errors(tmp_path_factory, cut, flips):
    data = bytearray(GRPO_ARGS.read_bytes())
    for at, byte in flips:
        if at < len(data):
            data[at] = byte
    path = tmp_path_factory.mktemp("bin") / "training_args.bin"
    path.write_bytes(bytes(data[:cut]))
    try:
        fields = read_training_args(path)
    except (FormatError, InputError):
        return
    assert isinstance(fields, dict) and all(isinstance(k, str) for k in fields)


HAVE_TRAINER = all(importlib.util.find_spec(m) is not None for m in ("torch", "transformers"))


@pytest.mark.slow  # imports transformers and torch (seconds)
@pytest.mark.skipif(not HAVE_TRAINER and os.environ.get("GRPO_DOCTOR_REQUIRE_TRAINER") != "1",
                    reason="needs transformers and torch (pip install '.[trl]' and a torch build)")
@pytest.mark.parametrize("zip_format", [True, False])
def test_the_trainers_own_save_is_read(tmp_path, zip_format):
    """transformers.Trainer saves ``torch.save(self.args, "training_args.bin")``: the same
    call, in torch's zip format and in its older stream of pickles."""
    import torch
    import transformers

    args = transformers.TrainingArguments(output_dir=str(tmp_path / "out"), learning_rate=2e-5,
                                          max_grad_norm=100.0, warmup_steps=5, report_to=[],
                                          use_cpu=True)
    path = tmp_path / "training_args.bin"
    torch.save(args, path, _use_new_zipfile_serialization=zip_format)
    fields = read_training_args(path)
    assert fields["learning_rate"] == 2e-5
    assert fields["max_grad_norm"] == 100.0
    assert fields["warmup_steps"] == 5
    assert fields["lr_scheduler_type"] == "linear"


def test_a_saved_beta_0_beside_a_log_that_records_a_kl_is_left_unknown(tmp_path):
    """TRL logs the KL only when beta is not 0: a training_args.bin saying beta 0 (today's
    TRL default) beside a log with a KL of up to 9 is another run's config for that knob, and
    "beta 0 -> 0.01-0.05" was put first (helper-37). A beta 0 the user gives is trusted."""
    import numpy as np

    from grpo_doctor.engine import diagnose

    folder = tmp_path / "outputs" / "checkpoint-400"
    folder.mkdir(parents=True)
    rng = np.random.default_rng(7)
    s = np.arange(1, 401)
    kl = np.abs(0.05 + 9 * np.clip((s - 150) / 250, 0, 1) + rng.normal(0, 0.02, 400))
    history = [{"step": int(i), "reward": float(0.5 + 0.01 * rng.normal()), "kl": float(k),
                "learning_rate": 3e-3} for i, k in zip(s, kl, strict=True)]
    (folder / "trainer_state.json").write_text(json.dumps({"log_history": history}))
    shutil.copy(GRPO_ARGS, folder / "training_args.bin")
    (run,) = load_runs(folder)
    d = diagnose(run)
    assert any(n.startswith("beta 0 in training_args.bin beside the log, but the log records "
                            "a KL to the reference") for n in d.notes), d.notes
    assert "beta 0 ->" not in d.root_cause.first_action, d.root_cause
