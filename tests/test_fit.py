"""Names fitted into a terminal's room (reporters/fit.py): cut, kept apart, never wrapped."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from grpo_doctor.reporters.fit import (
    both_ends,
    fit_words,
    key_labels,
    pack,
    run_labels,
    shorten_left,
)


def test_keep_end_keeps_the_end_that_tells_runs_apart():
    seeds = ["nips-grpo-dynamics_exp1a_rho0.50_seed43", "nips-grpo-dynamics_exp1a_rho1.00_seed42",
             "short"]
    assert run_labels(seeds, 15, keep_end=True) == ["…rho0.50_seed43", "…rho1.00_seed42",
                                                    "short"]
    # the same end: told apart where they differ; a name told apart by its end keeps it
    states = ["Gemma-3-RL_checkpoint-250_trainer_state", "Unsloth_checkpoint-250_trainer_state",
              "agent-r1-30_nan_step83"]
    labels = run_labels(states, 15, keep_end=True)
    assert labels[2] == "…-30_nan_step83" and len(set(labels)) == 3
    assert all(len(label) <= 15 for label in labels)


def test_shorten_left_counts_terminal_cells():
    assert shorten_left("/runs/exp/events.out", 100) == "/runs/exp/events.out"
    assert shorten_left("/runs/exp/events.out", 11) == "…events.out"
    assert shorten_left("/runs/実験/ab", 5) == "…/ab"  # 実 and 験 take two cells each
    assert shorten_left("/runs/実験/ab", 6) == "…験/ab"


@given(st.lists(st.text(alphabet="ab_-.1", min_size=1, max_size=60), min_size=2, max_size=6,
                unique=True), st.integers(8, 50), st.booleans())
def test_labels_fit_and_keep_different_names_apart(names, room, keep_end):
    labels = run_labels(names, room, keep_end=keep_end)
    assert all(len(label) <= room for label in labels)
    assert all(label == name for name, label in zip(names, labels) if len(name) <= room)
    if len(names) == 2:
        assert labels[0] != labels[1]


def test_both_ends_keeps_the_start_and_the_end_that_tell_runs_apart():
    runs = ["ppo_formal_1p5b_seed42_composite_20260720T020928Z",
            "ppo_formal_1p5b_seed123_20260720T043732Z", "Llama_FP8_GRPO",
            "Llama_FP8_GRPO__2025-11-25_b35307e0_c9fea5"]
    assert both_ends(runs, 32) == ["ppo_formal_1p5b…20260720T020928Z",
                                   "ppo_formal_1p5b…20260720T043732Z", "Llama_FP8_GRPO",
                                   "Llama_FP8…11-25_b35307e0_c9fea5"]


@pytest.mark.parametrize("labels_of", [both_ends, key_labels], ids=["names", "keys"])
@given(names=st.lists(st.text(alphabet="ab_-.1", min_size=1, max_size=60), min_size=2,
                      max_size=6, unique=True), room=st.integers(8, 50))
def test_labels_fit_keep_what_fits_and_tell_names_apart(labels_of, names, room):
    labels = labels_of(names, room)
    assert all(len(label) <= room for label in labels)
    assert all(label == name for name, label in zip(names, labels) if len(name) <= room)
    assert len(set(labels)) == len(labels)


VERL_KEYS = ["actor_rollout_ref.actor.ppo_micro_batch_size",
             "actor_rollout_ref.actor.ppo_mini_batch_size", "actor_rollout_ref.model.path",
             "actor_rollout_ref.rollout.prompt_length",
             "actor_rollout_ref.rollout.response_length",
             "actor_rollout_ref.rollout.tensor_model_parallel_size", "critic.model.path",
             "critic.ppo_micro_batch_size", "data.max_prompt_length"]


def test_key_labels_keep_the_last_component_and_tell_keys_apart():
    assert key_labels(VERL_KEYS, 32) == [
        "actor…actor.ppo_micro_batch_size", "actor…actor.ppo_mini_batch_size",
        "actor_rollout_ref.model.path", "actor…rollout.prompt_length",
        "actor…rollout.response_length", "actor…tensor_model_parallel_size",
        "critic.model.path", "critic.ppo_micro_batch_size", "data.max_prompt_length"]


def test_pack_keeps_cells_whole():
    cells = ["A warning@10", "B critical@45 (escalates)", "C ok (disappears)"]
    assert pack(cells, 38) == ["A warning@10", "B critical@45 (escalates)",
                               "C ok (disappears)"]
    assert pack(cells, 80) == ["  ".join(cells)]
    assert pack(["a", "b", "c"], 3, sep=" ") == ["a b", "c"]


def test_fit_words_shortens_only_a_word_too_long_for_the_line():
    text = "/runs/exp/some/long/folder/metrics.csv holds 4 runs"
    assert fit_words(text, 20) == "…/folder/metrics.csv holds 4 runs"
    assert fit_words(text, 80) == text
