import numpy as np
import pandas as pd

from grpo_doctor.store import build_run


def run_of(frame, **kw):
    return build_run(pd.DataFrame(frame), name="r", source="r", format="t", **kw)


def test_sorted_and_duplicates_keep_last_value_and_are_counted():
    run = run_of({"step": [1, 2, 3, 2, 3, 4], "kl": [0.1, 0.2, 0.3, 0.25, 0.35, 0.4]})
    assert list(run.steps) == [1, 2, 3, 4]
    assert np.allclose(run.frame["kl"], [0.1, 0.25, 0.35, 0.4])
    assert run.duplicate_steps == 2
    assert run.restarts == 1


def test_an_eval_row_at_a_training_rows_step_is_merged_without_a_note():
    """The Trainer logs its eval row at the global_step of a training row (helper-35: "41 rows
    repeat a step ... the last value logged was kept" on every TRL wandb run, read as lost
    data). Rows that log other metrics only are merged whole; a row that logs a metric again
    (a resumed run writing over old steps) is still said."""
    merged = run_of({"step": [1, 2, 2, 3, 4, 4], "kl": [0.1, 0.2, np.nan, 0.3, 0.4, np.nan],
                     "eval/accuracy": [np.nan, np.nan, 0.5, np.nan, np.nan, 0.6]})
    assert list(merged.frame["heldout_score"].dropna()) == [0.5, 0.6]
    assert list(merged.frame["kl"]) == [0.1, 0.2, 0.3, 0.4]
    assert not any("repeat" in n for n in merged.notes), merged.notes
    again = run_of({"step": [1, 2, 2, 3, 4, 4], "kl": [0.1, 0.2, 0.25, 0.3, 0.4, np.nan],
                    "eval/accuracy": [np.nan, np.nan, 0.5, np.nan, np.nan, 0.6]})
    assert "1 row repeats a step logged before: the last value logged was kept" in again.notes


def test_text_cells_become_gaps_but_logged_nan_is_evidence():
    run = run_of({"Step": [1, 2, 3], "kl": ["No Log", "nan", "0.3"], "loss": ["", "inf", "1"]})
    assert np.isnan(run.frame["kl"].iloc[0]) and np.isnan(run.frame["kl"].iloc[1])
    assert list(run.nan_steps["kl"]) == [2]
    assert np.isinf(run.frame["loss"].iloc[1])
    assert "loss" not in run.nan_steps


def test_different_cadences_align_on_step_with_gaps_not_forward_fill():
    run = run_of({"step": [1, 2, 3, 10, 20], "kl": [0.1, 0.2, 0.3, np.nan, np.nan],
                  "eval/accuracy": [np.nan, np.nan, np.nan, 0.5, 0.6]})
    assert run.frame["kl"].isna().sum() == 2
    assert run.frame["heldout_score"].notna().sum() == 2


def test_row_order_when_no_step_column():
    run = run_of({"kl": [0.1, 0.2]})
    assert list(run.steps) == [0, 1]
    assert run.step_source == "row order"
    assert any("row numbers" in n for n in run.notes)


def test_truncated_is_a_prefix():
    run = run_of({"step": [1, 5, 9], "kl": [0.1, 0.2, 0.3]}, )
    assert list(run.truncated(5).steps) == [1, 5]
    assert list(run.truncated(4).steps) == [1]


def test_a_trackers_rows_of_timings_only_before_and_after_training_are_not_steps(tmp_path):
    """TRL's profiling timings reach wandb, MLflow and Trackio at step 0, before the first
    step is counted, and Trackio's end-of-training summary one step past the last: they read
    as 'steps 0-201 (202 logged)' for a run of 200 steps."""
    run = run_of({"step": [0, 1, 2, 3, 4],
                  "profiling/Time taken: GRPOTrainer.compute_loss": [0.1, 0.1, 0.1, 0.1, None],
                  "train/reward": [None, 0.2, 0.3, 0.4, None],
                  "train/global_step": [None, None, None, None, 4]})
    assert (run.first_step, run.last_step, run.n_steps) == (1, 3, 3)
    # A row with no number at all stays a logged step ("No Log" in a notebook's table).
    kept = run_of({"step": [1, 2, 3], "reward": [None, 0.2, 0.3]})
    assert (kept.first_step, kept.n_steps) == (1, 3)
    # Timings on every step between logged ones (logging_steps 10: 191 rows of timings and
    # 20 of training metrics read "191 logged", trial 57) are no steps either.
    steps = list(range(1, 41))
    sparse = run_of({"step": steps,
                     "profiling/Time taken: GRPOTrainer.compute_loss": [0.1] * 40,
                     "train/reward": [0.2 if s % 10 == 0 else None for s in steps],
                     "train/epoch": [None] * 39 + [1.0]})
    assert list(sparse.steps) == [10, 20, 30, 40], list(sparse.steps)
