"""A training config beside a log is read as the run's settings (the config is evidence): a
CSV, TensorBoard events or a trainer state hold none, the run's folder often does."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pandas as pd

from grpo_doctor.sources import load_runs
from tests.helpers import run_cli
from tests.test_properties import _write_events

WANDB_RUN = (Path(__file__).parent / "fixtures" / "wandb" / "wandb"
             / "offline-run-20250101_000000-grpofix1")


def _sharpening(n: int = 250, seed: int = 31) -> pd.DataFrame:
    """Entropy 0.65 -> 0.04 from the first step while the reward rises 0.6 -> 1.2."""
    rng = np.random.default_rng(seed)
    s = np.arange(1, n + 1)
    return pd.DataFrame({
        "step": s,
        "reward": 0.6 + 0.6 * (1 - np.exp(-s / 40)) + rng.normal(0, 0.02, n),
        "entropy": 0.04 + 0.61 * np.exp(-s / 30) + rng.normal(0, 0.003, n),
    })


PENALTY = "entropy_coef: -0.05\nlearning_rate: 1.0e-6\nbeta: 0.04\nnum_generations: 16\n"


def test_a_config_beside_a_csv_is_the_evidence_the_advice_names(tmp_path, capsys):
    _sharpening().to_csv(tmp_path / "metrics.csv", index=False)
    (tmp_path / "grpo_config.yaml").write_text(PENALTY)
    code, out, err = run_cli(capsys, "diagnose", str(tmp_path / "metrics.csv"), "-f", "json")
    report = json.loads(out)
    assert report["root_cause"]["knob"]["name"] == "entropy_coef"
    assert report["root_cause"]["first_action"].startswith("entropy_coef -0.05 -> 0.005")
    assert any("grpo_config.yaml, beside the log" in n for n in report["notes"])


def test_a_folder_of_a_log_and_its_config_is_one_run(tmp_path, capsys):
    """``diagnose FOLDER`` on a CSV and the grpo_config.yaml beside it: one run, read with its
    config, not "holds 2 training logs" (helper-37)."""
    _sharpening().to_csv(tmp_path / "metrics.csv", index=False)
    (tmp_path / "grpo_config.yaml").write_text(PENALTY)
    code, out, err = run_cli(capsys, "diagnose", str(tmp_path), "-f", "json")
    assert code in (0, 1), err
    assert json.loads(out)["root_cause"]["knob"]["name"] == "entropy_coef"


def test_hydra_config_above_tensorboard_events_in_runs_is_read(tmp_path):
    """verl under Hydra: outputs/<date>/<time>/.hydra/config.yaml, the events two folders
    down in runs/<date_host>/ (written by a real writer)."""
    run_dir = tmp_path / "outputs"
    events = run_dir / "runs" / "Dec05_12-00-00_host"
    events.mkdir(parents=True)
    frame = _sharpening(60)
    _write_events(events, frame["step"].to_numpy(),
                  {"train/reward": frame["reward"].to_numpy(),
                   "train/entropy": frame["entropy"].to_numpy()})
    (run_dir / ".hydra").mkdir()
    (run_dir / ".hydra" / "config.yaml").write_text(
        "actor_rollout_ref:\n  actor:\n    optim:\n      lr: 1.0e-6\n"
        "    entropy_coeff: -0.05\n  rollout:\n    n: 8\n")
    (run,) = load_runs(events)
    assert run.config["actor_rollout_ref"]["actor"]["entropy_coeff"] == -0.05
    assert any(".hydra" in n for n in run.notes)


def test_a_model_config_or_a_config_of_another_folder_is_not_read(tmp_path):
    (tmp_path / "config.yaml").write_text(PENALTY)  # a folder above the run's: not its own
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    _sharpening(60).to_csv(run_dir / "metrics.csv", index=False)
    (run_dir / "config.json").write_text(json.dumps(
        {"architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "learning_rate": 1,
         "temperature": 0.7, "max_grad_norm": 1}))
    (run,) = load_runs(run_dir / "metrics.csv")
    assert "entropy_coef" not in (run.config or {})
    assert "temperature" not in (run.config or {})
    assert not any("beside the log" in n for n in run.notes)


def test_the_logs_own_config_wins_where_both_set_a_key(tmp_path):
    """A wandb offline run (the real package's files) holds its config; a sidecar adds only
    what it does not set."""
    run_dir = tmp_path / "job"
    shutil.copytree(WANDB_RUN, run_dir / "wandb" / WANDB_RUN.name)
    (run,) = load_runs(run_dir / "wandb" / WANDB_RUN.name)
    own = dict(run.config)
    assert own, "the fixture's run logs a config"
    key = next(k for k in own if not isinstance(own[k], dict))
    (run_dir / "grpo_config.yaml").write_text(
        f"{key}: sidecar-value\nmax_grad_norm: 0.5\nnum_generations: 4\n")
    (again,) = load_runs(run_dir / "wandb" / WANDB_RUN.name)
    assert again.config[key] == own[key]
    assert again.config["max_grad_norm"] == 0.5


def test_train_config_names_the_cause_and_bad_files_are_one_line(tmp_path, capsys):
    """``--train-config FILE``: the run's config kept elsewhere, read as preflight reads it
    (YAML, JSON, a launch script); a missing or broken file is one line and exit 2."""
    _sharpening().to_csv(tmp_path / "metrics.csv", index=False)
    elsewhere = tmp_path / "configs"
    elsewhere.mkdir()
    (elsewhere / "run.yaml").write_text(PENALTY)
    log = str(tmp_path / "metrics.csv")
    code, out, _ = run_cli(capsys, "diagnose", log, "--train-config",
                           str(elsewhere / "run.yaml"), "-f", "json")
    report = json.loads(out)
    assert report["root_cause"]["first_action"].startswith("entropy_coef -0.05 -> 0.005")
    assert any("--train-config" in n for n in report["notes"])
    (elsewhere / "launch.sh").write_text("python train.py --entropy_coef -0.05 --beta 0.04\n")
    code, out, _ = run_cli(capsys, "diagnose", log, "--train-config",
                           str(elsewhere / "launch.sh"), "-f", "json")
    assert json.loads(out)["root_cause"]["knob"]["name"] == "entropy_coef"
    (elsewhere / "broken.yaml").write_text("a: [\n")
    for bad in ("broken.yaml", "missing.yaml"):
        code, out, err = run_cli(capsys, "diagnose", log, "--train-config",
                                 str(elsewhere / bad))
        assert code == 2 and out == "" and len(err.strip().splitlines()) == 1, err


def test_watch_reads_the_config_beside_a_live_log(tmp_path):
    """The monitor sees the settings a live CSV holds none of, so its findings' remedies name
    the values ("learning_rate 2e-4 -> 1e-4", not "x0.5")."""
    from grpo_doctor.watch import Watcher

    _sharpening().to_csv(tmp_path / "metrics.csv", index=False)
    (tmp_path / "grpo_config.yaml").write_text(
        "learning_rate: 2.0e-4\nbeta: 0.04\nnum_generations: 16\n")
    watcher = Watcher(tmp_path / "metrics.csv")
    watcher.poll()
    assert watcher.monitor.run is not None
    assert watcher.monitor.run.config["learning_rate"] == 2e-4
    remedies = [str(r) for c in watcher.monitor.checks if c.mode == "entropy_collapse"
                for r in c.remedies]
    assert "learning_rate 2e-4 -> 1e-4 (slows the sharpening)" in remedies


def test_the_note_names_every_setting_the_config_added(tmp_path):
    _sharpening(60).to_csv(tmp_path / "metrics.csv", index=False)
    (tmp_path / "grpo_config.yaml").write_text("learning_rate: 1.0e-6\nbeta: 0.0\n"
                                                "temperature: 0.3\n")
    (run,) = load_runs(tmp_path / "metrics.csv")
    assert any(n.endswith("beside the log: beta, learning_rate, temperature")
               for n in run.notes), run.notes


PPO_HYDRA = ("algorithm:\n  adv_estimator: gae\n  kl_ctrl:\n    kl_coef: 0.02\n"
             "actor_rollout_ref:\n  actor:\n    optim:\n      lr: 1.0e-6\n"
             "    entropy_coeff: 0.005\n  rollout:\n    n: 1\n    temperature: 1.0\n"
             "critic:\n  optim:\n    lr: 1.0e-5\ndata:\n  train_batch_size: 256\n")


def _expanded(text: str) -> list[str]:
    """The names of a settings note, keys of one section given once ("a.b.{c, d}") spelt out."""
    import re

    out = []
    for part in re.findall(r"[^,{]+\{[^}]*\}|[^,]+", text):
        part = part.strip()
        if "{" in part:
            section, lasts = part.split("{", 1)
            out += [section + last.strip() for last in lasts.rstrip("}").split(",")]
        else:
            out.append(part)
    return out


def test_settings_of_one_section_are_said_once():
    from grpo_doctor.importers.sidecar import settings_text

    names = ["actor_rollout_ref.rollout.n", "actor_rollout_ref.actor.optim.lr",
             "actor_rollout_ref.rollout.temperature", "beta", "learning_rate"]
    text = settings_text(names)
    assert text == ("actor_rollout_ref.actor.optim.lr, actor_rollout_ref.rollout.{n, "
                    "temperature}, beta, learning_rate")
    assert _expanded(text) == sorted(names)


def test_a_hydra_config_note_names_the_settings_not_the_sections(tmp_path):
    """verl's .hydra/config.yaml: the note names each recipe setting read from it by the
    file's own key, not its sections (actor_rollout_ref, algorithm, data)."""
    _sharpening(60).to_csv(tmp_path / "metrics.csv", index=False)
    (tmp_path / ".hydra").mkdir()
    (tmp_path / ".hydra" / "config.yaml").write_text(PPO_HYDRA)
    (run,) = load_runs(tmp_path / "metrics.csv")
    (note,) = [n for n in run.notes if "beside the log" in n]
    named = _expanded(note.split("beside the log: ", 1)[1])
    assert named == sorted(named)
    assert {"actor_rollout_ref.actor.optim.lr", "actor_rollout_ref.rollout.n",
            "actor_rollout_ref.rollout.temperature", "actor_rollout_ref.actor.entropy_coeff",
            "algorithm.kl_ctrl.kl_coef"} <= set(named), note
    assert not {"actor_rollout_ref", "algorithm", "data", "critic"} & set(named), note
    assert "critic.optim.lr" not in named  # the critic's lr is no recipe setting


def test_a_ppo_config_beside_a_healthy_log_is_no_setup_note(tmp_path, capsys):
    """PPO with a critic (adv_estimator gae) samples one completion per prompt: n 1 beside a
    healthy PPO log is not 'setup far outside the recipe'."""
    n = 200
    s = np.arange(1, n + 1)
    rng = np.random.default_rng(3)
    pd.DataFrame({"step": s, "reward": 0.2 + 0.5 * (1 - np.exp(-s / 60)) + rng.normal(0, 0.02, n),
                  "entropy": 0.6 - 0.1 * (1 - np.exp(-s / 100)) + rng.normal(0, 0.005, n),
                  "kl": 0.001 + rng.normal(0, 0.0002, n)}).to_csv(tmp_path / "metrics.csv",
                                                                  index=False)
    (tmp_path / ".hydra").mkdir()
    (tmp_path / ".hydra" / "config.yaml").write_text(PPO_HYDRA)
    code, out, _ = run_cli(capsys, "diagnose", str(tmp_path / "metrics.csv"), "-f", "json")
    report = json.loads(out)
    assert not any("outside the recipe" in note for note in report["notes"]), report["notes"]
    group = next(k for k in report["setup"] if k["name"] == "num_generations")
    assert group["verdict"] == "not applicable"


def test_a_given_setting_the_log_logs_as_a_metric_is_not_said_absent(tmp_path, capsys):
    """--train-config with a learning rate, on a log whose learning rate is a logged curve:
    the note says what is true (the log's own config names none of them), not that the log
    holds none of them."""
    frame = _sharpening()
    frame["learning_rate"] = 1e-6
    frame.to_csv(tmp_path / "metrics.csv", index=False)
    (tmp_path / "elsewhere.yaml").write_text(PENALTY)
    code, out, _ = run_cli(capsys, "diagnose", str(tmp_path / "metrics.csv"), "--train-config",
                           str(tmp_path / "elsewhere.yaml"), "-f", "json")
    (note,) = [n for n in json.loads(out)["notes"] if "--train-config" in n]
    assert "the log holds none" not in note
    assert "the log's own config names none of them" in note and "learning_rate" in note


def test_the_sidecars_recipe_names_are_the_recipes():
    """The importer names the settings a file supplied by the recipe's keys, kept as a copy
    (importers sit below the recipe): a knob or name added to the recipe is added there."""
    from grpo_doctor import recipe
    from grpo_doctor.importers.sidecar import RECIPE_NAMES

    assert tuple(s.names for s in recipe.SETTINGS) == RECIPE_NAMES


def test_a_given_setting_the_log_contradicts_is_said_and_a_proven_value_kept():
    """A config giving learning_rate 7.9e-6 beside a log whose lr curve reaches 9.8e-5: the
    run provably ran at 9.8e-5, and the config was silently taken over it. A given value
    above the logged peak stands, with a note, only where the schedule may have decayed
    before the log began (a log that starts mid-run)."""
    import numpy as np

    from grpo_doctor.run_settings import with_given_config
    from tests.helpers import make_run

    n = 50
    run = make_run(reward=np.linspace(0.2, 0.6, n), learning_rate=np.full(n, 9.8e-5))
    low = with_given_config(run, {"learning_rate": 7.9e-6, "temperature": 0.5})
    assert "learning_rate" not in low.config and low.config["temperature"] == 0.5
    assert any("learning_rate 7.9e-6 given, but the log's own learning_rate reaches 9.8e-5"
               in n for n in low.notes), low.notes
    # A log that starts mid-run (a resumed job's): its schedule may have decayed before it.
    resumed = make_run(steps=np.arange(200, 200 + n), reward=np.linspace(0.2, 0.6, n),
                       learning_rate=np.linspace(9.8e-5, 5e-5, n))
    high = with_given_config(resumed, {"learning_rate": 2e-4})
    assert high.config["learning_rate"] == 2e-4
    assert any("the given value is used" in n for n in high.notes), high.notes
    # One that starts with the run shows the schedule's peak: 2e-4 given is contradicted.
    seen = with_given_config(run, {"learning_rate": 2e-4})
    assert "learning_rate" not in seen.config
    assert any("learning_rate 2e-4 given, but the log's own learning_rate peaks at 9.8e-5"
               in n for n in seen.notes), seen.notes
    same = with_given_config(run, {"learning_rate": 1e-4})
    assert same.config["learning_rate"] == 1e-4 and not any("given," in n or "given;" in n
                                                             for n in same.notes)


def test_a_given_lr_the_log_held_before_it_jumped_is_the_runs():
    """learning_rate 1e-6 given beside a log that held 1e-6 for 299 steps, then jumped to
    1e-5: "given, but the log's own learning_rate reaches 1e-5 ... (is the config this
    run's?)" doubted the one setting the log confirms. The given value stands; the note
    says where the log held it."""
    import numpy as np

    from grpo_doctor.run_settings import with_given_config
    from tests.helpers import make_run

    n = 400
    run = make_run(reward=np.linspace(0.2, 0.6, n),
                   learning_rate=np.where(np.arange(n) < 299, 1e-6, 1e-5))
    given = with_given_config(run, {"learning_rate": 1e-6})
    assert given.config["learning_rate"] == 1e-6
    assert any("learning_rate 1e-6 given, as the log's own learning_rate held until step 299"
               in n for n in given.notes), given.notes
    assert not any("is the config this run's" in n for n in given.notes)


def test_a_peft_adapter_config_beside_a_trainer_state_makes_it_an_adapters_run(tmp_path):
    """PEFT saves adapter_config.json in every checkpoint of a LoRA run: an lr of 4e-5, 8x a
    full fine-tune's ceiling, is within an adapter's; the same log alone is judged as a full
    fine-tune's."""
    from grpo_doctor import recipe

    frame = _sharpening(60)
    state = {"global_step": 60, "log_history": [
        {"step": int(s), "reward": float(r), "entropy": float(e), "learning_rate": 4e-5}
        for s, r, e in zip(frame["step"], frame["reward"], frame["entropy"])]}
    ckpt = tmp_path / "out" / "checkpoint-60"
    ckpt.mkdir(parents=True)
    (ckpt / "trainer_state.json").write_text(json.dumps(state))
    bare = tmp_path / "bare"
    bare.mkdir()
    shutil.copy(ckpt / "trainer_state.json", bare / "trainer_state.json")
    (ckpt / "adapter_config.json").write_text(json.dumps(
        {"peft_type": "LORA", "r": 16, "lora_alpha": 32, "target_modules": ["q_proj"]}))
    (run,) = load_runs(ckpt / "trainer_state.json")
    assert run.config.get("use_peft") is True
    assert any("a LoRA adapter of rank 16" in n and "adapter_config.json" in n
               for n in run.notes), run.notes
    assert recipe.read_run(run).lora
    assert recipe.read_run(run).get("learning_rate").verdict != recipe.HIGH
    (alone,) = load_runs(bare / "trainer_state.json")
    assert not recipe.read_run(alone).lora
    assert recipe.read_run(alone).get("learning_rate").verdict == recipe.HIGH


def test_a_checkpoints_model_config_names_the_dtype_the_weights_trained_in(tmp_path):
    """save_pretrained writes the dtype the parameters had: float16 in a full fine-tune's
    checkpoint is pure fp16 weights (unsafe), float32 the master weights of mixed precision.
    A LoRA checkpoint's base-model dtype says nothing of the adapter."""
    from grpo_doctor import recipe

    frame = _sharpening(60)
    state = {"global_step": 60, "log_history": [
        {"step": int(s), "reward": float(r), "entropy": float(e)}
        for s, r, e in zip(frame["step"], frame["reward"], frame["entropy"])]}
    model = {"architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2"}
    readings = {}
    for name, dtype, adapter in (("fp16", "float16", False), ("fp32", "float32", False),
                                 ("lora", "float16", True)):
        ckpt = tmp_path / name / "checkpoint-60"
        ckpt.mkdir(parents=True)
        (ckpt / "trainer_state.json").write_text(json.dumps(state))
        (ckpt / "config.json").write_text(json.dumps({**model, "torch_dtype": dtype}))
        if adapter:
            (ckpt / "adapter_config.json").write_text(json.dumps({"peft_type": "LORA", "r": 8}))
        (run,) = load_runs(ckpt / "trainer_state.json")
        readings[name] = (recipe.read_run(run).get("dtype").verdict, run.notes)
    assert readings["fp16"][0] == recipe.UNSAFE
    assert any("the weights were saved as float16" in n for n in readings["fp16"][1])
    assert readings["fp32"][0] == recipe.OK
    assert readings["lora"][0] == recipe.NOT_SET


def test_given_settings_the_logs_own_config_sets_otherwise_and_misspelt_keys_are_said():
    """--train-config beside a log with its own config (TensorBoard hparams, a console's
    config dump): the log's values are used, and each given value dropped is said; a key that
    is a misspelling of one the advice reads changes nothing, and says so."""
    import numpy as np

    from grpo_doctor.run_settings import with_given_config
    from tests.helpers import make_run

    run = make_run(reward=np.linspace(0.2, 0.6, 30))
    run.config.update({"num_generations": 2, "temperature": 0.9})
    real = {"policy.optimizer.kwargs.betas": [0.9, 0.999], "checkpointing.enabled": True,
            "adam_beta1": 0.85,  # adam_beta2's twin, no typo of it (helper-95)
            "policy.megatron_cfg.optimizer.params_dtype": "float32",
            "actor_rollout_ref.actor.clip_ratio_c": 3.0,
            "actor_rollout_ref.rollout.multi_turn.max_tool_response_length": 256}
    out = with_given_config(run, {"num_generations": 64, "temperature": 0.9,
                                  "temprature": 0.5, "beta1": 0.9, "num_train_epochs": 3,
                                  "learning_rte": 1e-6, **real})
    assert out.config["num_generations"] == 2 and "temprature" not in out.config
    notes = " | ".join(out.notes)
    assert ("num_generations 64 given, but the log's own config has num_generations 2: the "
            "log's value is used") in notes
    assert "temperature 0.9 given" not in notes  # the same value: nothing to say
    assert "temprature given: not a setting grpo-doctor reads (did you mean temperature?)" \
        in notes
    assert "beta1" not in notes.split("settings given")[0]
    assert "num_train_epochs given" not in notes
    assert "learning_rte given: not a setting grpo-doctor reads (did you mean learning_rate?)" \
        in notes
    # Real keys of NeMo-RL and verl beside a knob's name are no typo of it (trial 39).
    assert not any(f"{k} given" in notes for k in real), notes


def test_a_train_config_value_no_trainer_takes_is_one_line_and_exit_2(tmp_path, capsys):
    (tmp_path / "hot.yaml").write_text("temperature: hot\n")
    _sharpening(60).to_csv(tmp_path / "metrics.csv", index=False)
    code, out, err = run_cli(capsys, "diagnose", str(tmp_path / "metrics.csv"),
                             "--train-config", str(tmp_path / "hot.yaml"))
    assert code == 2 and out == ""
    assert err.strip().endswith("temperature: 'hot' is not a number") and len(
        err.strip().splitlines()) == 1, err


def _lr_run(tmp_path):
    """metrics.csv of an entropy collapse logged with its learning rate, 9.8e-5 throughout."""
    frame = _sharpening()
    frame["learning_rate"] = 9.8e-5
    frame.to_csv(tmp_path / "metrics.csv", index=False)
    return tmp_path / "metrics.csv"


def test_a_config_beside_the_log_is_checked_against_it_as_a_given_one_is(tmp_path, capsys):
    """A config beside the log may be another run's: its learning rate of 1e-3 against a log
    whose own lr is 9.8e-5 throughout is said, and the log's value used, as for
    --train-config; it had silently become the root cause's setting (helper-37)."""
    log = _lr_run(tmp_path)
    (tmp_path / "grpo_config.yaml").write_text(
        "learning_rate: 1.0e-3\nnum_generations: 16\ntemperature: 0.3\n")
    code, out, _ = run_cli(capsys, "diagnose", str(log), "-f", "json")
    report = json.loads(out)
    assert any(n.startswith("learning_rate 0.001 in grpo_config.yaml beside the log, but the "
                            "log's own learning_rate peaks at 9.8e-5: the log's value is used")
               for n in report["notes"]), report["notes"]
    assert "0.001" not in report["root_cause"]["first_action"], report["root_cause"]
    # A config given for the run wins over the one beside the log, knob by knob.
    (tmp_path / "given.yaml").write_text("temperature: 1.0\nlearning_rate: 9.8e-5\n")
    code, out, _ = run_cli(capsys, "diagnose", str(log), "--train-config",
                           str(tmp_path / "given.yaml"), "-f", "json")
    setup = {s["name"]: s for s in json.loads(out)["setup"]}
    assert setup["temperature"]["value"] == 1.0 and setup["num_generations"]["value"] == 16


def test_a_value_no_trainer_takes_beside_a_log_is_left_out_and_said(tmp_path, capsys):
    log = _lr_run(tmp_path)
    (tmp_path / "grpo_config.yaml").write_text(
        "learning_rate: 9.8e-5\nnum_generations: 16.5\nbeta: 0.04\n")
    code, out, _ = run_cli(capsys, "diagnose", str(log), "-f", "json")
    report = json.loads(out)
    assert any("num_generations: 16.5 is not a whole number (in grpo_config.yaml beside the "
               "log): left out" in n for n in report["notes"]), report["notes"]
    assert "16.5" not in json.dumps(report["plan"]) + json.dumps(report["setup"])


def test_a_completion_budget_the_logs_completions_outran_is_not_the_runs(tmp_path):
    """Completions of 1849 tokens, 75% cut at that cap, beside a config saying 256: the
    advice said "max_completion_length 256 -> 512", less than the run had (helper-37)."""
    import numpy as np

    from grpo_doctor.engine import diagnose

    n = 60
    frame = pd.DataFrame({"step": np.arange(1, n + 1),
                          "reward": np.full(n, -5.5) + np.random.default_rng(3).normal(0, .1, n),
                          "completions/max_length": np.full(n, 1849.0),
                          "completions/mean_length": np.full(n, 1700.0),
                          "completions/clipped_ratio": np.full(n, 0.75)})
    frame.to_csv(tmp_path / "metrics.csv", index=False)
    (tmp_path / "grpo_config.yaml").write_text(
        "max_completion_length: 256\nlearning_rate: 5.0e-6\nnum_generations: 8\n")
    (run,) = load_runs(tmp_path / "metrics.csv")
    d = diagnose(run)
    assert any(n.startswith("max_completion_length 256 in grpo_config.yaml beside the log, but "
                            "the log's completions reach 1,849 tokens") for n in d.notes), d.notes
    assert "1,849" in d.root_cause.first_action and "256" not in d.root_cause.first_action


def test_a_schedule_decaying_through_the_given_lr_did_not_hold_it():
    """A linear decay 5e-6 -> 0 over 250 steps passes within a quarter of 1e-6 for 25 steps:
    "learning_rate 1e-6 given, as the log's own learning_rate held from step 176" kept a
    value the run only passed through (helper-37). Held means within 5% for 8 logs."""
    import numpy as np

    from grpo_doctor.run_settings import with_given_config
    from tests.helpers import make_run

    n = 250
    decay = make_run(reward=np.linspace(0.2, 0.6, n), learning_rate=np.linspace(5e-6, 0, n))
    read = with_given_config(decay, {"learning_rate": 1e-6})
    assert "learning_rate" not in read.config
    assert any("but the log's own learning_rate reaches 5e-6" in n for n in read.notes)
    held = make_run(reward=np.linspace(0.2, 0.6, n),
                    learning_rate=np.r_[np.full(20, 5e-6), np.full(n - 20, 1e-6)])
    kept = with_given_config(held, {"learning_rate": 1e-6})
    assert kept.config["learning_rate"] == 1e-6


def test_a_mean_completion_length_above_the_budget_contradicts_it(tmp_path):
    import numpy as np

    from grpo_doctor.engine import diagnose

    n = 60
    pd.DataFrame({"step": np.arange(1, n + 1), "reward": np.linspace(0.1, 0.9, n),
                  "completion_length": np.full(n, 200.0)}).to_csv(tmp_path / "metrics.csv",
                                                                 index=False)
    (tmp_path / "grpo_config.yaml").write_text(
        "max_completion_length: 32\nlearning_rate: 5.0e-6\nnum_generations: 8\n")
    (run,) = load_runs(tmp_path / "metrics.csv")
    assert any(n.startswith("max_completion_length 32 in grpo_config.yaml beside the log, but "
                            "the log's mean completion length reaches 200 tokens")
               for n in diagnose(run).notes)


def test_a_budget_far_above_the_cap_the_log_shows_is_not_the_runs(tmp_path):
    """1,024 configured while 92% of completions were cut at about 128 tokens: the raise
    was "1,024 -> 4,096" (helper-38)."""
    import numpy as np

    from grpo_doctor.engine import diagnose

    n = 60
    pd.DataFrame({"step": np.arange(1, n + 1), "reward": np.linspace(0.1, 0.3, n),
                  "completions/max_length": np.full(n, 128.0),
                  "completions/mean_length": np.full(n, 126.0),
                  "completions/clipped_ratio": np.full(n, 0.92)}).to_csv(
        tmp_path / "metrics.csv", index=False)
    (tmp_path / "grpo_config.yaml").write_text(
        "max_completion_length: 1024\nlearning_rate: 5.0e-6\nnum_generations: 8\n")
    (run,) = load_runs(tmp_path / "metrics.csv")
    d = diagnose(run)
    assert any(n.startswith("max_completion_length 1024 in grpo_config.yaml beside the log, "
                            "but the log's completions are cut at about 128 tokens")
               for n in d.notes), d.notes
    assert "1,024 ->" not in d.root_cause.first_action, d.root_cause


def test_a_given_config_said_to_win_over_the_file_beside_the_log(tmp_path, capsys):
    log = _lr_run(tmp_path)
    (tmp_path / "grpo_config.yaml").write_text(
        "learning_rate: 2.0e-4\nnum_generations: 16\ntemperature: 0.3\n")
    (tmp_path / "given.yaml").write_text("learning_rate: 9.8e-5\ntemperature: 0.3\n")
    code, out, _ = run_cli(capsys, "diagnose", str(log), "--train-config",
                           str(tmp_path / "given.yaml"), "-f", "json")
    notes = json.loads(out)["notes"]
    assert ("the settings given ([config] or --train-config) are used over grpo_config.yaml "
            "beside the log for learning_rate (0.0002 there)") in notes, notes


def test_a_learning_rate_logged_as_0_everywhere_is_no_setting():
    """verl prints ``actor/lr:0.000`` for 1e-6: "learning_rate 0 -> 1e-6 (learning_rate 0 is
    no step at all)" on a real run's snippet (helper-38)."""
    import numpy as np

    from grpo_doctor.recipe import read_run
    from tests.helpers import make_run

    run = make_run(reward=np.linspace(0.2, 0.4, 30), learning_rate=np.zeros(30))
    assert read_run(run).get("learning_rate").value is None


def test_a_file_the_log_contradicts_gives_no_setting(tmp_path):
    """A training_args.bin whose learning rate the log contradicts is likely another run's:
    its temperature of 2, which the log cannot check, drove "temperature 2 -> 1.0" on a
    healthy run (helper-39)."""
    from grpo_doctor.engine import diagnose

    log = _lr_run(tmp_path)
    (tmp_path / "grpo_config.yaml").write_text(
        "learning_rate: 1.0e-3\nnum_generations: 16\ntemperature: 2.0\n")
    (run,) = load_runs(log)
    d = diagnose(run)
    assert any(n.startswith("grpo_config.yaml beside the log is contradicted by the log "
                            "(learning_rate): none of its settings is used") for n in d.notes)
    assert not any("temperature 2" in n for n in d.notes), d.notes
    assert {s["name"]: s for s in d.setup}.get("temperature", {}).get("value") is None


#: verl's saved ``.hydra/config.yaml`` is unresolved: the entropy bonus is set once under
#: ``algorithm`` and referenced from the actor, as a user's launcher often does.
HYDRA_REFS = """\
algorithm:
  adv_estimator: grpo
  entropy_bonus: -0.05
actor_rollout_ref:
  actor:
    optim:
      lr: 1.0e-6
    entropy_coeff: ${algorithm.entropy_bonus}
    ppo_micro_batch_size: ${oc.select:actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu,4}
  rollout:
    n: 16
    val_kwargs:
      n: ${actor_rollout_ref.rollout.n}
"""


def test_hydra_references_in_a_config_are_read_as_the_trainer_resolved_them(tmp_path, capsys):
    """Beside the log and given with ``--train-config``: ``entropy_coeff:
    ${algorithm.entropy_bonus}`` is -0.05, the cause named first; a resolver (``oc.select``)
    is left as written, never a number."""
    events = tmp_path / "outputs" / "runs" / "Dec05_12-00-00_host"
    events.mkdir(parents=True)
    frame = _sharpening()
    _write_events(events, frame["step"].to_numpy(),
                  {"train/reward": frame["reward"].to_numpy(),
                   "train/entropy": frame["entropy"].to_numpy()})
    (tmp_path / "outputs" / ".hydra").mkdir()
    (tmp_path / "outputs" / ".hydra" / "config.yaml").write_text(HYDRA_REFS)
    (run,) = load_runs(events)
    actor = run.config["actor_rollout_ref"]["actor"]
    assert actor["entropy_coeff"] == -0.05
    assert actor["ppo_micro_batch_size"].startswith("${oc.select:")
    assert run.config["actor_rollout_ref"]["rollout"]["val_kwargs"]["n"] == 16
    code, out, err = run_cli(capsys, "diagnose", str(events), "-f", "json")
    assert json.loads(out)["root_cause"]["first_action"].startswith(
        "actor_rollout_ref.actor.entropy_coeff -0.05 -> 0.005"), out
    frame.to_csv(tmp_path / "metrics.csv", index=False)
    (tmp_path / "verl.yaml").write_text(HYDRA_REFS)
    code, out, err = run_cli(capsys, "diagnose", str(tmp_path / "metrics.csv"),
                             "--train-config", str(tmp_path / "verl.yaml"), "-f", "json")
    assert json.loads(out)["root_cause"]["first_action"].startswith(
        "actor_rollout_ref.actor.entropy_coeff -0.05 -> 0.005"), out


def test_hostile_references_resolve_bounded_and_cycles_stay_as_written():
    """Keys that each hold two references to the one before double at every level: 40 levels
    would be 2^40 characters and as many steps. Each key is resolved once and text past
    MAX_RESOLVED_CHARS is kept as written, whatever the keys' order; a cycle stays a reference,
    a chain deeper than 32 stops, and neither raises."""
    from grpo_doctor.importers.interpolation import MAX_RESOLVED_CHARS, resolve_interpolations

    for order in (range(1, 41), range(40, 0, -1)):
        laughs = {f"x{i}": f"${{x{i - 1}}}${{x{i - 1}}}" for i in order}
        laughs["x0"] = "ab"
        out = resolve_interpolations(laughs)
        assert out["x3"] == "ab" * 8
        assert all(len(v) <= MAX_RESOLVED_CHARS for v in out.values())
    cyclic = resolve_interpolations({"a": "${b}", "b": "${a}", "lr": "${opt.lr}",
                                     "opt": {"lr": 1e-6}})
    assert cyclic["a"].startswith("${") and cyclic["b"].startswith("${")
    assert cyclic["lr"] == 1e-6
    chain = {f"k{i}": f"${{k{i + 1}}}" for i in range(5000)}
    chain["k5000"] = 7
    out = resolve_interpolations(chain)
    assert out["k4999"] == 7 and str(out["k0"]).startswith("${")


def test_a_launch_script_or_console_capture_beside_the_log_gives_its_settings(tmp_path):
    """OpenRLHF saves no config file: its settings are in the launch script and in what the
    launch printed (the command under ``set -x``, argparse's Namespace). Beside TensorBoard
    events two folders down they are the run's; a script wins over a capture, and a file
    holding fewer than two training knobs (a README, a pip log) gives nothing."""
    events = tmp_path / "logs" / "tensorboard" / "run1"
    events.mkdir(parents=True)
    frame = _sharpening(60)
    _write_events(events, frame["step"].to_numpy(),
                  {"train/reward": frame["reward"].to_numpy(),
                   "train/entropy": frame["entropy"].to_numpy()})
    (tmp_path / "notes.txt").write_text("pip install openrlhf --upgrade\nlr looked fine\n")
    (run,) = load_runs(events)
    assert not any("beside the log" in n for n in run.notes)
    (tmp_path / "train.log").write_text(
        "+ python3 -m openrlhf.cli.train_ppo_ray --actor_learning_rate 5e-5 "
        "--n_samples_per_prompt 2 --temperature 2.0\n"
        "(pid=1) Namespace(actor_learning_rate=5e-05, init_kl_coef=0.02, "
        "n_samples_per_prompt=2, temperature=2.0)\n")
    (run,) = load_runs(events)
    assert run.config["n_samples_per_prompt"] == 2 and run.config["init_kl_coef"] == 0.02
    assert any("train.log, beside the log" in n for n in run.notes), run.notes
    (tmp_path / "train_grpo.sh").write_text(
        "set -x\nray job submit -- python3 -m openrlhf.cli.train_ppo_ray \\\n"
        "   --actor_learning_rate 1e-6 \\\n   --n_samples_per_prompt 16 \\\n"
        "   --temperature 1.0\n")
    (run,) = load_runs(events)
    assert run.config["n_samples_per_prompt"] == 16 and run.config["temperature"] == 1.0
    assert any("train_grpo.sh, beside the log" in n for n in run.notes), run.notes


def test_a_launch_script_beside_the_log_reads_the_config_it_names(tmp_path):
    """`trl grpo --config grpo.yaml --num_generations 2` beside the log: the file's settings
    under the flags are the run's (found beside a log, the script had held one knob and was
    passed over, so the file's beta and lr went unread; h117)."""
    events = tmp_path / "runs" / "Dec07_10-00-00"  # TRL's output_dir/runs/<time>/
    events.mkdir(parents=True)
    frame = _sharpening(60)
    _write_events(events, frame["step"].to_numpy(),
                  {"train/reward": frame["reward"].to_numpy(),
                   "train/entropy": frame["entropy"].to_numpy()})
    (tmp_path / "launch.sh").write_text("trl grpo --config grpo.yaml --num_generations 2\n")
    (run,) = load_runs(events)
    assert "beta" not in run.config  # the file is not there: one knob is no config
    (tmp_path / "grpo.yaml").write_text("learning_rate: 3.0e-6\nbeta: 0.0\nnum_generations: 8\n")
    (run,) = load_runs(events)
    assert run.config["beta"] == 0.0 and run.config["learning_rate"] == 3e-6
    assert run.config["num_generations"] == 2  # the flag wins, as the launcher applies it
    assert any("launch.sh, beside the log" in n for n in run.notes), run.notes


def test_another_runs_log_beside_a_log_gives_it_no_settings(tmp_path):
    """A capture holding metric lines is a run's own log. Beside a console log it is another
    run's: its printed temperature is not this run's (helper-84). Alone beside a log of
    another format it is that run's console (TRL's console.log beside its events); two of
    them are two runs, and neither speaks for it."""
    dicts = "".join(f"{{'loss': 0.01, 'reward': {0.2 + 0.01 * i:.2f}, 'kl': 0.001, "
                    f"'epoch': {i / 40:.3f}}}\n" for i in range(40))
    (tmp_path / "a_run.log").write_text(dicts)
    (tmp_path / "b_run.log").write_text(
        "Settings: learning_rate=1e-6 beta=0.04 temperature=3.0 num_generations=2\n" + dicts)
    (run,) = load_runs(tmp_path / "a_run.log")
    assert "temperature" not in run.config, run.config
    assert not any("beside the log" in n for n in run.notes), run.notes
    (b_run,) = load_runs(tmp_path / "b_run.log")
    assert b_run.config["temperature"] == 3.0  # its own settings still read
    # A sibling whose metric lines are a progress bar's postfix (OpenRLHF) is a run's too.
    (tmp_path / "b_run.log").write_text(
        "Settings: learning_rate=1e-6 beta=0.04 temperature=3.0 num_generations=2\n" + "".join(
            f"Episode [1/1]: {i}%|##| {i}/40 [00:0{i % 10}<00:00, policy_loss=0.1, "
            f"reward=0.{i:02d}, kl=0.001]\n" for i in range(1, 41)))
    (run,) = load_runs(tmp_path / "a_run.log")
    assert "temperature" not in run.config, run.config

    events = tmp_path / "runs" / "Dec07"
    events.mkdir(parents=True)
    frame = _sharpening(60)
    _write_events(events, frame["step"].to_numpy(),
                  {"train/reward": frame["reward"].to_numpy()})
    (run,) = load_runs(events)
    assert "temperature" not in run.config  # a_run.log and b_run.log: two runs, whose?
    (tmp_path / "a_run.log").unlink()
    (run,) = load_runs(events)
    assert run.config["temperature"] == 3.0  # the one console beside its events
    assert any("b_run.log, beside the log" in n for n in run.notes), run.notes


def test_the_settings_read_leave_out_a_reference_sync_that_is_off():
    """TRL's ref_model_sync_steps (512 by default) is read only under sync_ref_model: with it
    off, the note of settings read does not list it (the advice does not read it either)."""
    from grpo_doctor.importers.sidecar import supplied_settings

    config = {"learning_rate": 1e-6, "beta": 0.04, "ref_model_sync_steps": 512}
    off = supplied_settings({**config, "sync_ref_model": False}, config)
    on = supplied_settings({**config, "sync_ref_model": True}, config)
    assert "ref_model_sync_steps" not in off and "learning_rate" in off
    assert "ref_model_sync_steps" in on


def _hparams_run(folder: Path, *, args_text: dict | None = None) -> None:
    """A run written by torch's real SummaryWriter: scalars in ``folder``, and
    ``add_hparams``'s session in the sub-folder it makes for it (``<folder>/<time.time()>``)."""
    import pytest

    pytest.importorskip("torch")
    from torch.utils.tensorboard import SummaryWriter

    writer = SummaryWriter(str(folder))
    if args_text is not None:  # as Hugging Face's TensorBoardCallback writes TrainingArguments
        writer.add_text("args", json.dumps(args_text))
    for step in range(1, 41):
        writer.add_scalar("train/reward", 0.2 + step / 100, step)
        writer.add_scalar("train/kl", 0.001 * step, step)
    writer.add_hparams({"learning_rate": 3e-4, "beta": 0.0, "num_generations": 8,
                        "loss_type": "grpo", "use_vllm": False}, {})
    writer.close()


def test_the_hparams_a_summary_writer_keeps_in_its_own_sub_folder_are_the_runs_config(
        tmp_path, capsys):
    """``SummaryWriter.add_hparams`` writes its session to a sub-folder of the log: its
    settings are the run's config (ints as the script had them), named in a note, and the run
    is one run, not two."""
    _hparams_run(tmp_path / "exp")
    assert [p for p in (tmp_path / "exp").iterdir() if p.is_dir()]
    runs = load_runs(tmp_path / "exp")
    assert len(runs) == 1
    config = runs[0].config
    assert config["learning_rate"] == 3e-4 and config["num_generations"] == 8
    assert isinstance(config["num_generations"], int) and config["loss_type"] == "grpo"
    assert any("hparams" in n and "learning_rate" in n for n in runs[0].notes)
    code, out, _ = run_cli(capsys, "diagnose", str(tmp_path / "exp"))
    # (Read and said: as "keep it" here, where the short log's reward rose at it.)
    assert code == 0 and "learning_rate 3e-4 is 60x" in " ".join(out.split())


def test_the_args_text_wins_over_the_hparams_and_watch_reads_them_too(tmp_path):
    """A log with both (the full ``args`` JSON and a sanitised hparams copy): the args win;
    ``watch`` builds the same config from the growing log as the importer does."""
    from grpo_doctor.watch import Watcher

    _hparams_run(tmp_path / "exp", args_text={"learning_rate": 1e-6, "beta": 0.04})
    config = load_runs(tmp_path / "exp")[0].config
    assert config["learning_rate"] == 1e-6 and config["beta"] == 0.04
    assert config["num_generations"] == 8  # only the hparams name it
    watcher = Watcher(tmp_path / "exp")
    watcher.poll(final=True)
    assert watcher.run is not None
    assert watcher.run.config["learning_rate"] == 1e-6
    assert watcher.run.config["num_generations"] == 8


def test_a_tensorboard_folder_named_generically_is_named_by_the_run_it_sits_in(tmp_path):
    """``w11/tensorboard/`` is the run "w11" (a report had been headed "tensorboard"); under a
    sweep each keeps its own name; two generic folders of one run keep their paths apart."""
    steps = np.arange(1, 21)
    cols = {"train/reward": np.linspace(0.1, 0.5, 20)}
    _write_events(tmp_path / "w11" / "tensorboard", steps, cols)
    assert [r.name for r in load_runs(tmp_path / "w11")] == ["w11"]
    for name in ("a", "b"):
        _write_events(tmp_path / "sweep" / name / "tb", steps, cols)
    assert sorted(r.name for r in load_runs(tmp_path / "sweep")) == ["a", "b"]
    for sub in ("train", "logs"):
        _write_events(tmp_path / "x" / sub, steps, cols)
    assert sorted(r.name for r in load_runs(tmp_path / "x")) == ["logs", "train"]


def test_hparams_written_after_a_watch_began_are_read_at_the_next_poll(tmp_path):
    """A script that calls add_hparams at the end (or mid-run): the watch, started before,
    reads the settings once their sub-folder appears (helper-46: the watch had ended on
    "learning_rate x0.5" where --once said "learning_rate 3e-4 -> ...")."""
    import pytest

    pytest.importorskip("torch")
    from torch.utils.tensorboard import SummaryWriter

    from grpo_doctor.watch import Watcher

    folder = tmp_path / "exp"
    writer = SummaryWriter(str(folder))
    for step in range(1, 31):
        writer.add_scalar("train/reward", 0.2 + step / 100, step)
    writer.flush()
    watcher = Watcher(folder)
    watcher.poll()
    assert watcher.run is not None and "learning_rate" not in (watcher.run.config or {})
    writer.add_hparams({"learning_rate": 3e-4, "num_generations": 8}, {})
    writer.close()
    watcher.poll()
    assert watcher.run.config["learning_rate"] == 3e-4


def test_a_setting_given_under_another_spelling_wins_over_the_file_beside_the_log():
    """c77: a NeMo-RL run given loss_fn.reference_policy_kl_penalty 1.0 read a verl script's
    actor_rollout_ref.actor.kl_loss_coef 0.001 found beside its log, since the verl name comes
    first among beta's: the user's setting won only when spelled the same way."""
    import dataclasses

    import numpy as np

    from grpo_doctor import recipe
    from grpo_doctor.run_settings import with_run_settings
    from tests.helpers import make_run

    run = make_run(name="nemo", reward=np.linspace(0.2, 0.4, 60))
    beside = {"actor_rollout_ref.actor.kl_loss_coef": 0.001, "actor_rollout_ref.rollout.n": 8}
    run = dataclasses.replace(run, config=dict(beside),
                              config_beside={k: "run.sh beside the log" for k in beside})
    out = with_run_settings(run, {"loss_fn.reference_policy_kl_penalty": 1.0})
    beta = recipe.read_run(out).get("beta")
    assert beta is not None and beta.value == 1.0, beta
    assert "actor_rollout_ref.actor.kl_loss_coef (0.001 there)" in " ".join(out.notes)
    assert recipe.read_run(out).get("num_generations").value == 8  # not given: still read


def test_a_given_setting_drops_only_its_own_knob_from_the_file_beside_the_log():
    """h111: given suppress_tokens [] dropped the beside file's begin_suppress_tokens [42]
    (another list of one setting), and a given use_kl_loss true dropped its beta 0.5 (a switch
    is no value of beta)."""
    import dataclasses

    import numpy as np

    from grpo_doctor import recipe
    from grpo_doctor.run_settings import with_run_settings
    from tests.helpers import make_run

    run = make_run(name="r", reward=np.linspace(0.2, 0.4, 60))
    beside = {"generation_kwargs.begin_suppress_tokens": [42], "beta": 0.5}
    run = dataclasses.replace(run, config=dict(beside),
                              config_beside={k: "training_args.json beside the log"
                                             for k in beside})
    out = with_run_settings(run, {"generation_kwargs.suppress_tokens": [],
                                  "use_kl_loss": True})
    setup = recipe.read_run(out)
    assert setup.get("banned_tokens").outside, setup.get("banned_tokens")
    assert setup.get("beta").value == 0.5, setup.get("beta")


def test_a_setting_the_log_leaves_unset_does_not_mask_the_checkpoints(tmp_path):
    """Trial 82: MLflow's params, logged at the first launch, held min_p None; a resume set
    min_p 0.5, saved in the checkpoint's training_args.bin: the log's None had masked it, and
    a sampler-only difference was not merged at all."""
    from dataclasses import replace

    from grpo_doctor.importers.sidecar import with_sidecar_config

    (tmp_path / "metrics.csv").write_text("step,reward\n1,0.1\n2,0.2\n")
    (tmp_path / "config.json").write_text(
        '{"min_p": 0.5, "temperature": 1.0, "learning_rate": 1e-4, "num_generations": 8}')
    run = replace(load_runs(tmp_path / "metrics.csv")[0],
                  config={"min_p": None, "learning_rate": 1e-4, "temperature": 0.9})
    merged = with_sidecar_config(run).config
    assert merged["min_p"] == 0.5 and merged["temperature"] == 0.9, merged
