"""Names fitted into a terminal's room (reporters/fit.py): cut, kept apart, never wrapped."""

from hypothesis import given
from hypothesis import strategies as st

from grpo_doctor.reporters.fit import both_ends, run_labels, shorten_left


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


@given(st.lists(st.text(alphabet="ab_-.1", min_size=1, max_size=60), min_size=2, max_size=6,
                unique=True), st.integers(8, 50))
def test_both_ends_fits_and_tells_names_apart(names, room):
    labels = both_ends(names, room)
    assert all(len(label) <= room for label in labels)
    assert all(label == name for name, label in zip(names, labels) if len(name) <= room)
    assert len(set(labels)) == len(labels)
