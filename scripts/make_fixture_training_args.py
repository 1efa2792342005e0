"""Write tests/fixtures/training_args/: a checkpoint's ``training_args.bin`` saved by TRL, and
the same config as ``print(training_args)`` shows it in a console log.

Run from the repository root, in an environment with trl and torch (neither is a dependency
of grpo-doctor or of its tests):

    pip install torch==2.13.0 trl   # trl 1.16.0, transformers 5.25.0 when this was made
    python scripts/make_fixture_training_args.py

How it is made: a real ``trl.GRPOConfig`` with four settings outside the chapter's recipe
(learning_rate 3e-3, beta 0, num_generations 4, temperature 2.0) and a completion budget of
64, saved with ``torch.save(args, "training_args.bin")``: the call ``transformers.Trainer``
makes for every checkpoint. ``use_cpu`` and ``bf16=False`` only let the config build on a
machine without a GPU. ``printed_grpo_config.txt`` is ``print(args)`` of the same object
(TrainingArguments.__str__: one ``key=value,`` per line), as scripts print it to the console
before training. The pickle names trl's, transformers', accelerate's and torch's
classes; grpo-doctor reads it without importing any of them (grpo_doctor/importers/
pickled_args.py), and tests/test_pickled_args.py checks what it reads.
"""

from __future__ import annotations

from pathlib import Path

OUT = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "training_args"


def main() -> None:
    import torch
    import trl

    args = trl.GRPOConfig(output_dir="outputs", learning_rate=3e-3, beta=0.0,
                          num_generations=4, temperature=2.0, max_completion_length=64,
                          per_device_train_batch_size=4, report_to=[], bf16=False,
                          use_cpu=True)
    OUT.mkdir(parents=True, exist_ok=True)
    torch.save(args, OUT / "training_args.bin")
    (OUT / "printed_grpo_config.txt").write_text(f"{args}\n")
    print(f"wrote {OUT / 'training_args.bin'} (trl {trl.__version__}, torch {torch.__version__})")


if __name__ == "__main__":
    main()
