"""Write the text-format importer fixtures under tests/fixtures/<format>/.

Run from the repository root:

    python scripts/make_fixtures_text.py

One synthetic 12-step GRPO run (loss, reward, reward_std, kl, entropy, grad_norm, learning_rate,
completion length and a format-reward component; a NaN kl logged at step 7, grad_norm not
logged at step 3) is written in every format the text importers read, so the tests can check
that each format gives the same canonical frame as the wide CSV:

  csv/wide.csv                          the reference: one row per step
  trainer_state/synthetic-run/checkpoint-{6,12}/trainer_state.json
                                        Hugging Face layout (keys, indent, eval entries, the
                                        closing train_runtime entry) written by this script
  console/verl.log                      verl stdout: ANSI colours, Ray prefixes, hydra command
                                        line, pretty-printed config, `actor/lr(1e-4)` units
  console/trl.log                       HF Trainer / TRL printed dicts between tqdm redraws
  notebook/grpo.ipynb                   an SFT table, then the GRPO progress table (HTML)
  wandb-csv/export.csv                  W&B chart export, two runs, __MIN/__MAX bands
  tensorboard-csv/synthetic/*.csv       TensorBoard CSV downloads, one file per tag
  long-csv/long.csv                     step,metric,value rows
  jsonl/run.jsonl                       nested JSON lines, one broken line
  parquet/run.parquet + run.json        W&B history export layout with run metadata

With transformers and CPU torch installed (``pip install transformers accelerate`` and
``pip install torch==2.13.0``), it also trains a tiny real model with a real ``transformers.
Trainer`` for 12 steps on CPU (a few seconds) and keeps what that Trainer wrote:

  trainer_state/hf-real/checkpoint-12/trainer_state.json
  console/hf-trainer-real.log           its captured stdout and stderr (tqdm bars included)

Without them those two files are left as they are.
"""

from __future__ import annotations

import html
import json
import math
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "tests" / "fixtures"

STEPS = list(range(1, 13))
NAN_STEP = 7  # kl logged as NaN
GAP_STEP = 3  # grad_norm not logged


def _series() -> dict[str, list[float | None]]:
    """The synthetic run under TRL's metric names; None is a value that was not logged."""
    n = len(STEPS)
    data: dict[str, list[float | None]] = {
        "loss": [round(0.02 - 0.001 * i, 3) for i in range(n)],
        "reward": [round(0.1 + 0.05 * i, 3) for i in range(n)],
        "reward_std": [round(0.4 - 0.02 * i, 3) for i in range(n)],
        "kl": [round(0.001 * i * i, 3) for i in range(n)],
        "entropy": [round(1.2 - 0.05 * i, 3) for i in range(n)],
        "grad_norm": [round(0.5 + 0.125 * (i % 4), 3) for i in range(n)],
        "learning_rate": [float(f"{i + 1}e-06") for i in range(n)],
        "completions/mean_length": [float(200 + 8 * i) for i in range(n)],
        "rewards/format_reward/mean": [round(0.25 + 0.05 * i, 3) for i in range(n)],
    }
    data["kl"][STEPS.index(NAN_STEP)] = math.nan
    data["grad_norm"][STEPS.index(GAP_STEP)] = None
    return data


SERIES = _series()
NAMES = list(SERIES)


def _rows() -> list[dict[str, float]]:
    """One dict per step with the values logged at it (no key where nothing was logged)."""
    return [
        {k: SERIES[k][i] for k in NAMES if SERIES[k][i] is not None}  # type: ignore[misc]
        for i in range(len(STEPS))
    ]


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8", newline="")


def _cell(value: float | None) -> str:
    if value is None:
        return ""
    return "nan" if math.isnan(value) else repr(value)


# --- wide CSV (the reference) ------------------------------------------------------------------


def write_wide_csv() -> None:
    lines = [",".join(["step", *NAMES])]
    for i, step in enumerate(STEPS):
        lines.append(",".join([str(step), *(_cell(SERIES[k][i]) for k in NAMES)]))
    _write(OUT / "csv" / "wide.csv", "\n".join(lines) + "\n")


# --- trainer_state.json ------------------------------------------------------------------------


def _history(last_step: int) -> list[dict[str, object]]:
    history: list[dict[str, object]] = []
    for step, row in zip(STEPS, _rows(), strict=True):
        if step > last_step:
            break
        history.append({"epoch": round(step / 12, 4), **row, "step": step})
        if step % 4 == 0:
            history.append({
                "epoch": round(step / 12, 4), "eval_loss": round(0.5 - 0.01 * step, 3),
                "eval_runtime": 1.5, "eval_samples_per_second": 10.0,
                "eval_steps_per_second": 1.25, "step": step,
            })
    if last_step == STEPS[-1]:
        history.append({
            "epoch": 1.0, "step": last_step, "total_flos": 0.0, "train_loss": 0.0145,
            "train_runtime": 60.0, "train_samples_per_second": 3.2, "train_steps_per_second": 0.2,
        })
    return history


def write_trainer_state() -> None:
    for last in (6, 12):
        state = {
            "best_global_step": None, "best_metric": None, "best_model_checkpoint": None,
            "epoch": round(last / 12, 4), "eval_steps": 4, "global_step": last,
            "is_hyper_param_search": False, "is_local_process_zero": True,
            "is_world_process_zero": True, "log_history": _history(last), "logging_steps": 1,
            "max_steps": 12, "num_input_tokens_seen": 0, "num_train_epochs": 1,
            "save_steps": 6,
            "stateful_callbacks": {"TrainerControl": {"args": {"should_save": True},
                                                      "attributes": {}}},
            "total_flos": 0.0, "train_batch_size": 8, "trial_name": None, "trial_params": None,
        }
        text = json.dumps(state, indent=2, sort_keys=True) + "\n"
        folder = OUT / "trainer_state" / "synthetic-run" / f"checkpoint-{last}"
        _write(folder / "trainer_state.json", text)


# --- console logs ------------------------------------------------------------------------------

_VERL_KEYS = {
    "loss": "actor/pg_loss", "reward": "critic/score/mean", "reward_std": "reward_std",
    "kl": "actor/kl_loss", "entropy": "actor/entropy", "grad_norm": "actor/grad_norm",
    "completions/mean_length": "response_length/mean",
    "rewards/format_reward/mean": "rewards/format_reward/mean",
}
_DIM, _CYAN, _RESET = "\x1b[2m", "\x1b[36m", "\x1b[0m"


def _ray(text: str, who: str = "main_task pid=4242") -> str:
    return f"{_DIM}{_CYAN}({who}){_RESET} {text}"


def _verl_value(value: float) -> str:
    return "nan" if math.isnan(value) else f"{value:.3f}"


def write_verl_log() -> None:
    lines = [
        "+ python3 -m verl.trainer.main_ppo algorithm.adv_estimator=grpo "
        "data.train_batch_size=64 actor_rollout_ref.actor.optim.lr=1e-6 "
        "actor_rollout_ref.rollout.n=8 'trainer.logger=[console]' trainer.total_epochs=1",
        _ray("{'actor_rollout_ref': {'actor': {'clip_ratio': 0.2,"),
        _ray("                                 'entropy_coeff': 0.0,"),
        _ray("                                 'optim': {'lr': 1e-06}},"),
        _ray("libgomp: Invalid value for environment variable OMP_NUM_THREADS", "pid=4243"),
        _ray("                       'rollout': {'n': 8}},"),
        _ray(" 'algorithm': {'adv_estimator': 'grpo', 'kl_ctrl': {'kl_coef': 0.001}}}"),
        _ray("Total training steps: 12"),
    ]
    for i, step in enumerate(STEPS):
        items = [f"timing_s/gen:{1.5 + 0.1 * i:.3f}"]
        for key, name in _VERL_KEYS.items():
            value = SERIES[key][i]
            if value is not None:
                items.append(f"{name}:{_verl_value(value)}")
        lr = SERIES["learning_rate"][i]
        assert lr is not None
        items.append(f"actor/lr(1e-4):{lr / 1e-4:.3f}")
        if step % 4 == 0:  # validation is printed on a line of its own for the same step
            score = 0.3 + 0.01 * step
            lines.append(_ray(f"step:{step} - val-core/gsm8k/reward/mean@1:{score:.3f}"))
        lines.append(_ray(f"step:{step} - " + " - ".join(items)))
    _write(OUT / "console" / "verl.log", "\n".join(lines) + "\n")


def _bar(n: int, total: int) -> str:
    pct = int(100 * n / total)
    filled = "█" * (pct // 10)
    return f"{pct:3d}%|{filled:<10}| {n}/{total} [00:{n:02d}<00:{total - n:02d},  1.00s/it]"


def _py_value(value: float) -> str:
    return "nan" if math.isnan(value) else repr(value)


def write_trl_log() -> None:
    total = len(STEPS)
    parts = ["Map: 100%|██████████| 64/64 [00:00<00:00, 900.00 examples/s]\n"]
    parts.append("\r" + _bar(0, total))
    for step, row in zip(STEPS, _rows(), strict=True):
        parts.append("\r" + _bar(step, total))
        entries = [f"'{k}': {_py_value(v)}" for k, v in row.items()]
        entries.append(f"'epoch': {round(step / 12, 2)}")
        parts.append("\r" + " " * 40 + "\r{" + ", ".join(entries) + "}\n")
        parts.append("\r" + _bar(step, total))
    parts.append(
        "\r{'train_runtime': 60.0, 'train_samples_per_second': 3.2, "
        "'train_steps_per_second': 0.2, 'train_loss': 0.0145, 'epoch': 1.0}\n"
    )
    _write(OUT / "console" / "trl.log", "".join(parts))


# --- notebook ----------------------------------------------------------------------------------

_NB_COLUMNS = {
    "Training Loss": "loss", "reward": "reward", "reward_std": "reward_std",
    "completions / mean_length": "completions/mean_length", "kl": "kl", "entropy": "entropy",
    "grad_norm": "grad_norm", "learning_rate": "learning_rate",
    "rewards / format_reward / mean": "rewards/format_reward/mean",
}


def _html_table(header: list[str], rows: list[list[str]], done: int, total: int) -> str:
    head = "".join(f"      <th>{html.escape(h)}</th>\n" for h in header)
    body = "".join(
        "    <tr>\n" + "".join(f"      <td>{html.escape(c)}</td>\n" for c in row) + "    </tr>\n"
        for row in rows
    )
    bar = (
        f"<progress value='{done}' max='{total}' style='width:300px; height:20px; "
        f"vertical-align: middle;'></progress>\n      [{done}/{total} 00:42, Epoch 0/1]"
    )
    return (
        f"\n    <div>\n      \n      {bar}\n    </div>\n"
        "    <table border=\"1\" class=\"dataframe\">\n  <thead>\n"
        f" <tr style=\"text-align: left;\">\n{head}    </tr>\n  </thead>\n  <tbody>\n{body}"
        "  </tbody>\n</table><p>"
    )


def _nb_value(value: float | None) -> str:
    if value is None:
        return "No Log"
    return "nan" if math.isnan(value) else f"{value:.6f}"


def _output(html_text: str) -> dict[str, object]:
    return {
        "output_type": "display_data", "metadata": {},
        "data": {"text/html": html_text.splitlines(keepends=True),
                 "text/plain": ["<IPython.core.display.HTML object>"]},
    }


def write_notebook() -> None:
    sft_rows = [[str(s), f"{1.2 - 0.05 * s:.6f}"] for s in range(5, 105, 5)]
    grpo_rows = [
        [str(step), *(_nb_value(SERIES[key][i]) for key in _NB_COLUMNS.values())]
        for i, step in enumerate(STEPS)
    ]
    cells = [
        {"cell_type": "markdown", "metadata": {}, "source": ["# GRPO fixture"]},
        {"cell_type": "code", "execution_count": 1, "metadata": {}, "source": ["sft.train()"],
         "outputs": [_output(_html_table(["Step", "Training Loss"], sft_rows, 100, 100))]},
        {"cell_type": "code", "execution_count": 2, "metadata": {}, "source": ["trainer.train()"],
         "outputs": [
             {"output_type": "stream", "name": "stdout", "text": ["Unsloth: training...\n"]},
             _output(_html_table(["Step", *_NB_COLUMNS], grpo_rows, 12, 12)),
         ]},
    ]
    nb = {"cells": cells, "metadata": {"kernelspec": {"name": "python3"}}, "nbformat": 4,
          "nbformat_minor": 0}
    _write(OUT / "notebook" / "grpo.ipynb", json.dumps(nb, indent=1) + "\n")


# --- exports -----------------------------------------------------------------------------------


def _tb_tag(key: str) -> str:
    return f"train/{key}"


def write_wandb_csv() -> None:
    runs = {"grpo - lr 1e-6": 0.0, "baseline": 1.0}  # a run name holding " - " on purpose
    header = ["Step"]
    for run in runs:
        for key in NAMES:
            col = f"{run} - {_tb_tag(key)}"
            header += [col, f"{col}__MIN", f"{col}__MAX"]
    lines = [",".join(f'"{h}"' for h in header)]
    for i, step in enumerate(STEPS):
        cells = [str(step)]
        for shift in runs.values():
            for key in NAMES:
                value = SERIES[key][i]
                shifted = None if value is None else value + shift
                cells += [_cell(shifted)] * 3
        lines.append(",".join(cells))
    _write(OUT / "wandb-csv" / "export.csv", "\n".join(lines) + "\n")


def write_tensorboard_csv() -> None:
    folder = OUT / "tensorboard-csv" / "synthetic"
    for key in NAMES:
        lines = ["Wall time,Step,Value"]
        for i, step in enumerate(STEPS):
            value = SERIES[key][i]
            if value is not None:
                lines.append(f"{1700000000.0 + step},{step},{_cell(value)}")
        name = f"run-synthetic-tag-{_tb_tag(key).replace('/', '_')}.csv"
        _write(folder / name, "\n".join(lines) + "\n")


def write_long_csv() -> None:
    lines = ["step,metric,value"]
    for i, step in enumerate(STEPS):
        for key in NAMES:
            value = SERIES[key][i]
            if value is not None:
                lines.append(f"{step},{key},{_cell(value)}")
    _write(OUT / "long-csv" / "long.csv", "\n".join(lines) + "\n")


def write_jsonl() -> None:
    lines = []
    for step, row in zip(STEPS, _rows(), strict=True):
        nested: dict[str, object] = {"step": step, "train": {}}
        for key, value in row.items():
            head, _, tail = key.partition("/")
            if tail:
                nested.setdefault(head, {})[tail] = value  # type: ignore[index]
            else:
                nested["train"][key] = value  # type: ignore[index]
        lines.append(json.dumps(nested))
        if step == 5:
            lines.append('{"step": 5, "train": {"loss": 0.0')  # a line cut off mid-write
    _write(OUT / "jsonl" / "run.jsonl", "\n".join(lines) + "\n")


def write_parquet() -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    columns: dict[str, object] = {"_step": pa.array(STEPS, pa.int64())}
    for key in NAMES:
        columns[_tb_tag(key)] = pa.array(SERIES[key], pa.float64())  # None -> null, NaN kept
    columns["_runtime"] = pa.array([10.0 * s for s in STEPS], pa.float64())
    folder = OUT / "parquet"
    folder.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.table(columns), folder / "run.parquet")
    meta = {"name": "synthetic-grpo", "config": {"learning_rate": 1e-6, "beta": 0.04},
            "summary": {"train/reward": SERIES["reward"][-1]}}
    _write(folder / "run.json", json.dumps(meta, indent=2) + "\n")


# --- a tiny real transformers.Trainer ----------------------------------------------------------

_REAL_TRAINER = r'''
import torch
from transformers import Trainer, TrainingArguments

class Tiny(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 1)

    def forward(self, x, labels):
        pred = self.lin(x).squeeze(-1)
        return {"loss": torch.nn.functional.mse_loss(pred, labels)}

torch.manual_seed(0)
g = torch.Generator().manual_seed(0)
X = torch.randn(64, 4, generator=g)
data = [{"x": X[i], "labels": X[i].sum()} for i in range(64)]
args = TrainingArguments(
    output_dir="out", max_steps=12, logging_steps=2, eval_strategy="steps", eval_steps=4,
    save_steps=12, per_device_train_batch_size=8, learning_rate=1e-2, report_to=[],
    use_cpu=True, seed=0, disable_tqdm=False,
)
Trainer(model=Tiny(), args=args, train_dataset=data, eval_dataset=data[:16]).train()
'''


def write_real_trainer() -> bool:
    try:
        import torch  # noqa: F401
        import transformers  # noqa: F401
    except ImportError:
        print("transformers/torch not installed: real Trainer fixtures left as they are")
        return False
    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "console.log"
        with log.open("w") as fh:
            subprocess.run([sys.executable, "-c", _REAL_TRAINER], cwd=tmp, stdout=fh,
                           stderr=subprocess.STDOUT, check=True, timeout=600)
        state = Path(tmp) / "out" / "checkpoint-12" / "trainer_state.json"
        target = OUT / "trainer_state" / "hf-real" / "checkpoint-12" / "trainer_state.json"
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(state, target)
        text = log.read_bytes().decode("utf-8")  # keeps tqdm's carriage returns
        lines = [ln for ln in text.split("\n") if "Warning" not in ln and "warn(" not in ln]
        _write(OUT / "console" / "hf-trainer-real.log", "\n".join(lines))
    return True


def main() -> None:
    write_wide_csv()
    write_trainer_state()
    write_verl_log()
    write_trl_log()
    write_notebook()
    write_wandb_csv()
    write_tensorboard_csv()
    write_long_csv()
    write_jsonl()
    write_parquet()
    write_real_trainer()
    print(f"fixtures written under {OUT.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
