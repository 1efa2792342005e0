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
