"""A notebook's code cells give the run's settings: the GRPOConfig keywords, parsed, never run."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from grpo_doctor.importers import load_runs
from grpo_doctor.importers.notebook_code import code_settings
from tests.helpers import run_cli
from tests.importers.test_notebook import _html_output
from tests.test_sidecar_config import _sharpening

#: The cells of an Unsloth GRPO notebook, as they are written there.
UNSLOTH = [
    "%%capture\n!pip install unsloth vllm\n",
    "from unsloth import FastLanguageModel\nimport torch\n"
    "max_seq_length = 1024 # Can increase for longer reasoning traces\n"
    "lora_rank = 64 # Larger rank = smarter, but slower\n\n"
    "model, tokenizer = FastLanguageModel.from_pretrained(\n"
    "    model_name = 'unsloth/Qwen2.5-3B-Instruct',\n    max_seq_length = max_seq_length,\n"
    "    load_in_4bit = True,\n    max_lora_rank = lora_rank,\n)\n"
    "model = FastLanguageModel.get_peft_model(\n    model,\n    r = lora_rank,\n"
    "    lora_alpha = lora_rank*2,\n)\n",
    "maximum_length = int(np.max(tokenized['L']))\n"
    "max_prompt_length = 256 + 1\n"
    "max_completion_length = max_seq_length - max_prompt_length\n"
    "from vllm import SamplingParams\n"
    "vllm_sampling_params = SamplingParams(\n    min_p = 0.1,\n    top_p = 0.95,\n"
    "    temperature = 0.3,\n    stop = [tokenizer.eos_token],\n)\n"
    "from trl import GRPOConfig, GRPOTrainer\n"
    "training_args = GRPOConfig(\n    vllm_sampling_params = vllm_sampling_params,\n"
    "    learning_rate = 5e-6,\n    lr_scheduler_type = 'cosine',\n"
    "    num_generations = 8, # Decrease if out of memory\n"
    "    max_prompt_length = maximum_length + 1,\n"
    "    max_completion_length = max_completion_length,\n    max_grad_norm = 0.1,\n"
    "    report_to = 'none',\n    **extra,\n)\n",
    "sampling_params = SamplingParams(temperature = 0.8, top_p = 0.95)  # inference after\n",
]


def test_unsloth_notebook_settings_are_read_from_the_code():
    config = code_settings(UNSLOTH)
    assert config["learning_rate"] == 5e-6
    assert config["num_generations"] == 8
    assert config["max_completion_length"] == 1024 - 257  # arithmetic over literal names
    assert config["max_grad_norm"] == 0.1
    # The rollouts' sampling: the SamplingParams handed to the config, not the later one.
    assert config["temperature"] == 0.3 and config["top_p"] == 0.95
    assert config["use_peft"] is True and config["lora_r"] == 64
    assert "max_prompt_length" not in config  # computed from data: not a setting
    assert "vllm_sampling_params" not in config


def test_the_last_grpo_config_wins_and_training_arguments_only_without_one():
    cells = ["args = TrainingArguments(learning_rate = 2e-5, max_grad_norm = 1.0)",
             "args = GRPOConfig(learning_rate = 1e-6, beta = 0.04)",
             "args = GRPOConfig(learning_rate = 3e-6, beta = 0.0)"]
    assert code_settings(cells) == {"learning_rate": 3e-6, "beta": 0.0}
    assert code_settings(cells[:1]) == {"learning_rate": 2e-5, "max_grad_norm": 1.0}
    assert code_settings(["x = 1", "print('no trainer here')"]) == {}


def test_code_is_parsed_never_run(tmp_path):
    marker = tmp_path / "ran"
    cells = [f"import os\nos.system('touch {marker}')\n",
             f"args = GRPOConfig(learning_rate = __import__('os').system('touch {marker}'),\n"
             "                  beta = 0.04, num_generations = 'a' * 10**9)\n",
             "def broken(:\n"]
    assert code_settings(cells) == {"beta": 0.04}
    assert not marker.exists()


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text(max_size=200), max_size=4))
def test_any_cell_text_is_read_or_left_out(cells):
    config = code_settings(cells)
    assert isinstance(config, dict)


def _notebook(tmp_path, code: str):
    frame = _sharpening(120)
    rows = [[str(int(r.step)), "0.0", f"{r.reward:.4f}", f"{r.entropy:.4f}"]
            for r in frame.itertuples()]
    table = _html_output(["Step", "Training Loss", "reward", "entropy"], rows)
    cells = [{"cell_type": "code", "metadata": {}, "source": code.splitlines(keepends=True),
              "outputs": []},
             {"cell_type": "code", "metadata": {}, "source": ["trainer.train()"],
              "outputs": [table]}]
    path = tmp_path / "grpo_run.ipynb"
    path.write_text(json.dumps({"cells": cells, "metadata": {}, "nbformat": 4,
                                "nbformat_minor": 5}))
    return path


def test_a_notebooks_config_is_the_evidence_the_advice_names(tmp_path, capsys):
    path = _notebook(tmp_path, "training_args = GRPOConfig(\n    learning_rate = 3e-3,\n"
                               "    num_generations = 8,\n    beta = 0.04,\n)\n")
    (run,) = load_runs(path)
    assert run.config["learning_rate"] == 3e-3
    assert any("settings read from the notebook's code: beta, learning_rate, num_generations"
               in n for n in run.notes)
    code, out, _ = run_cli(capsys, "diagnose", str(path), "-f", "json")
    report = json.loads(out)
    assert report["root_cause"]["knob"]["name"] == "learning_rate"
    assert report["root_cause"]["first_action"].startswith("learning_rate 0.003 -> 1e-6")


def test_preflight_and_train_config_read_a_training_script(tmp_path, capsys):
    script = tmp_path / "train_grpo.py"
    script.write_text("\n".join(UNSLOTH[1:]) + "\ntrainer.train()\n")
    code, out, err = run_cli(capsys, "preflight", str(script))
    assert "temperature 0.3 -> 1.0" in out, err
    frame = _sharpening(120)
    frame.to_csv(tmp_path / "metrics.csv", index=False)
    script.write_text("args = GRPOConfig(learning_rate = 3e-3, beta = 0.04)\n")
    code, out, err = run_cli(capsys, "diagnose", str(tmp_path / "metrics.csv"),
                             "--train-config", str(script), "-f", "json")
    assert json.loads(out)["root_cause"]["knob"]["name"] == "learning_rate"


def test_a_notebook_of_printed_log_lines_reads_its_code_too(tmp_path):
    lines = "".join(f"{{'loss': 0.01, 'reward': {0.2 + i / 100:.2f}, 'kl': 0.001, "
                    f"'epoch': {i / 100}}}\n" for i in range(1, 31))
    cells = [{"cell_type": "code", "metadata": {}, "outputs": [],
              "source": ["args = GRPOConfig(learning_rate = 2e-6, num_generations = 4)"]},
             {"cell_type": "code", "metadata": {}, "source": ["trainer.train()"],
              "outputs": [{"output_type": "stream", "name": "stdout", "text": lines}]}]
    path = tmp_path / "printed.ipynb"
    path.write_text(json.dumps({"cells": cells, "metadata": {}, "nbformat": 4,
                                "nbformat_minor": 5}))
    (run,) = load_runs(path)
    assert run.n_steps == 30
    assert run.config["learning_rate"] == 2e-6 and run.config["num_generations"] == 4
    assert any("notebook's code" in n for n in run.notes)


def test_preflight_reads_a_notebook_not_yet_run(tmp_path, capsys):
    cells = [{"cell_type": "code", "metadata": {}, "source": [c], "outputs": []}
             for c in UNSLOTH]
    path = tmp_path / "unsloth_grpo.ipynb"
    path.write_text(json.dumps({"cells": cells, "metadata": {}, "nbformat": 4,
                                "nbformat_minor": 5}))
    code, out, err = run_cli(capsys, "preflight", str(path))
    assert "temperature 0.3 -> 1.0" in out, out
    assert "num_generations 8" in out
    cells[3]["source"] = ["args = GRPOConfig(**config_from_yaml)"]
    cells[2]["source"] = []
    path.write_text(json.dumps({"cells": cells, "metadata": {}, "nbformat": 4,
                                "nbformat_minor": 5}))
    code, out, err = run_cli(capsys, "preflight", str(path))
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1
    assert "none of the recipe's settings found" in err  # only the adapter's rank is literal
    cells[1]["source"] = []
    path.write_text(json.dumps({"cells": cells, "metadata": {}, "nbformat": 4,
                                "nbformat_minor": 5}))
    code, out, err = run_cli(capsys, "preflight", str(path))
    assert code == 2 and out == "" and "no GRPOConfig(...)" in err


def test_a_script_python_refuses_is_said_with_its_line(tmp_path, capsys):
    """A keyword given twice parses but does not compile: the config never ran. preflight
    said "OK" (helper-37); a syntax error read as "no GRPOConfig(...)"."""
    assert code_settings(["args = GRPOConfig(learning_rate=1e-3, learning_rate=1e-6, "
                          "beta=0.04)"]) == {"beta": 0.04}
    for text, said in (("args = GRPOConfig(learning_rate=1e-3, learning_rate=1e-6)\n",
                        "line 1: keyword argument repeated: learning_rate"),
                       ("x = 1\nargs = GRPOConfig(learning_rate=1e-3\n", "line 2: ")):
        script = tmp_path / "train.py"
        script.write_text(text)
        code, out, err = run_cli(capsys, "preflight", str(script))
        assert code == 2 and out == "" and len(err.strip().splitlines()) == 1, err
        assert said in err and "Python refuses this script" in err, err


def test_a_setting_the_code_computes_is_not_judged_never_a_default(tmp_path, capsys):
    """learning_rate = 9**9**9 (or a value read from data) read as "within the recipe
    (framework defaults): learning_rate 1e-6" (helper-37): the code sets it, to a value only
    running it would tell."""
    script = tmp_path / "train.py"
    script.write_text("import numpy as np\nlr = float(np.load('lr.npy'))\n"
                      "args = GRPOConfig(learning_rate=lr, num_generations=8, "
                      "max_completion_length=9**9**9)\n")
    code, out, err = run_cli(capsys, "preflight", str(script))
    assert "not judged: learning_rate (computed in the code), max_completion_length" in out, out
    assert "learning_rate 1e-6" not in out
    assert code_settings([script.read_text()]) == {"num_generations": 8}


def test_a_notebooks_config_cell_that_does_not_parse_is_named(tmp_path, capsys):
    cells = [{"cell_type": "code", "metadata": {}, "outputs": [], "source": [source]}
             for source in ("%%capture\n!pip install unsloth\n",
                            "args = GRPOConfig(\n    learning_rate = 5e-6,\n")]
    path = tmp_path / "broken.ipynb"
    path.write_text(json.dumps({"cells": cells, "metadata": {}, "nbformat": 4,
                                "nbformat_minor": 5}))
    code, out, err = run_cli(capsys, "preflight", str(path))
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1, err
    assert "cell 2, line 1: '(' was never closed (the config cell does not parse)" in err, err


def test_preflight_of_a_notebook_that_logged_a_kl_gives_no_default_beta_0(tmp_path, capsys):
    """An Unsloth notebook run on an older TRL (default beta 0.04) logs a KL on every step:
    "beta 0 (framework default) ... TRL then logs no kl" contradicted its own table
    (helper-39)."""
    frame = _sharpening(30)
    rows = [[str(int(r.step)), "0.0", f"{r.reward:.4f}", "0.0012"] for r in frame.itertuples()]
    table = _html_output(["Step", "Training Loss", "reward", "kl"], rows)
    cells = [{"cell_type": "code", "metadata": {}, "outputs": [],
              "source": ["args = GRPOConfig(learning_rate = 5e-6, num_generations = 8)"]},
             {"cell_type": "code", "metadata": {}, "source": ["trainer.train()"],
              "outputs": [table]}]
    path = tmp_path / "old_trl.ipynb"
    path.write_text(json.dumps({"cells": cells, "metadata": {}, "nbformat": 4,
                                "nbformat_minor": 5}))
    code, out, _ = run_cli(capsys, "preflight", str(path))
    assert "beta 0 (framework default)" not in out and "TRL's default beta is 0" not in out
    assert "not judged: beta (not 0: the notebook's log records a KL)" in out, out
