"""Write the config files `preflight` is tested on, under tests/fixtures/preflight/.

Run from the repository root (needs `pip install trl` for the TRL files):

    python scripts/make_fixtures_preflight.py

How they are made:

  trl_defaults.yaml   TRL's own ``GRPOConfig(output_dir="out", use_cpu=True, bf16=False)``,
                      every field of ``to_dict()`` dumped as YAML: the file `trl grpo --config`
                      takes, with TRL's current defaults (lr 1e-6, beta 0, G 8, ...).
  trl_bad.json        the same class with learning_rate 3e-3, temperature 0.6, beta 0,
                      num_generations 2 and fp16 weights (``model_init_kwargs``), as JSON.
  verl_recipe.yaml    the failure-modes chapter's safe recipe (section 8) written in verl's
                      config layout (``actor_rollout_ref``/``algorithm`` trees, as verl's
                      ``ppo_trainer.yaml`` names them); written by hand here, not copied.
  openrlhf_launch.sh  an OpenRLHF ``train_ppo_ray`` launch command with GRPO's advantage
                      estimator, written by hand with OpenRLHF's flag names.

Deterministic: running it again writes the same bytes.
"""

from __future__ import annotations

import json
from pathlib import Path

import yaml

OUT = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "preflight"

VERL_RECIPE = {
    "data": {"max_prompt_length": 1024, "max_response_length": 4096},
    "actor_rollout_ref": {
        "model": {"path": "Qwen/Qwen2.5-7B-Instruct"},
        "actor": {
            "optim": {"lr": 1e-6},
            "clip_ratio_low": 0.2, "clip_ratio_high": 0.28,
            "entropy_coeff": 0.005, "use_kl_loss": True, "kl_loss_coef": 0.01,
            "loss_agg_mode": "token-mean", "ppo_epochs": 1, "grad_clip": 1.0,
            "fsdp_config": {"param_dtype": "bf16"},
        },
        "rollout": {"n": 16, "temperature": 1.0, "response_length": 4096},
        "ref": {"update_steps": 5000},
    },
    "algorithm": {"adv_estimator": "grpo", "kl_ctrl": {"type": "adaptive", "target_kl": 1.0},
                  "filter_groups": {"enable": True}},
    "reward_model": {"overlong_buffer": {"enable": True, "len": 512}},
    "trainer": {"total_training_steps": 3000, "logger": ["console", "wandb"]},
}

OPENRLHF = """\
# OpenRLHF GRPO launch (flag names as in openrlhf.cli.train_ppo_ray)
python3 -m openrlhf.cli.train_ppo_ray \\
   --pretrain Qwen/Qwen2.5-7B-Instruct \\
   --advantage_estimator group_norm \\
   --n_samples_per_prompt 4 \\
   --actor_learning_rate 5e-7 \\
   --init_kl_coef 0.01 \\
   --use_kl_loss \\
   --eps_clip 0.2 \\
   --generate_max_len 1024 \\
   --max_epochs 1 \\
   --temperature 1.0 \\
   --bf16
"""


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    from trl import GRPOConfig

    defaults = GRPOConfig(output_dir="out", use_cpu=True, bf16=False).to_dict()
    (OUT / "trl_defaults.yaml").write_text(
        "# trl.GRPOConfig(output_dir='out', use_cpu=True, bf16=False).to_dict(), TRL "
        f"{__import__('trl').__version__}\n" + yaml.safe_dump(defaults, sort_keys=True))
    bad = GRPOConfig(output_dir="out", use_cpu=True, bf16=False, learning_rate=3e-3,
                     temperature=0.6, beta=0.0, num_generations=2,
                     model_init_kwargs={"dtype": "float16"}).to_dict()
    (OUT / "trl_bad.json").write_text(json.dumps(bad, indent=1, sort_keys=True, default=str)
                                      + "\n")
    (OUT / "verl_recipe.yaml").write_text(
        "# The chapter's safe recipe (section 8) in verl's config layout; hand-written.\n"
        + yaml.safe_dump(VERL_RECIPE, sort_keys=False))
    (OUT / "openrlhf_launch.sh").write_text(OPENRLHF)


if __name__ == "__main__":
    main()
