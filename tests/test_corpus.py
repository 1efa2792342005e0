"""The tiny-GRPO corpus (real training runs made here, labeled by written rules, see
corpus/LABELING.md) as a regression test: no alarm on a healthy run, and the labeled failure
modes found. bench/accuracy.py prints the full table."""

import json

import pytest

from grpo_doctor.engine import diagnose
from grpo_doctor.importers import load_run
from tests.helpers import CORPUS, corpus_diagnosis

LABELS = json.loads((CORPUS / "labels.json").read_text()) if CORPUS.is_dir() else []


@pytest.fixture(scope="module")
def diagnoses():
    return {e["run"]: corpus_diagnosis(e["run"]) for e in LABELS}


@pytest.mark.parametrize("entry", [e for e in LABELS if e["healthy"]], ids=lambda e: e["run"])
def test_healthy_runs_raise_no_alarm(diagnoses, entry):
    d = diagnoses[entry["run"]]
    assert not d.findings, [(c.mode, c.status.value, c.summary) for c in d.findings]
    # Called healthy only with evidence: a log too short to judge is inconclusive instead.
    assert d.status == ("inconclusive" if entry.get("too_short") else "healthy")


def test_the_dead_run_and_the_recovered_incident(diagnoses):
    dead = diagnoses["31_dead_after_one_update/checkpoint-150/trainer_state.json"]
    assert dead.root_cause.mode == "no_learning_signal"
    assert "catastrophic update" in dead.root_cause.summary
    burst = diagnoses["30_early_burst_recovers/metrics.csv"]
    (incident,) = burst.check("kl_drift").incidents
    assert incident.step == 1 and incident.recovered_step == 2 and incident.peak > 20
    overshoot = next(d for run, d in diagnoses.items() if run.startswith("32_"))
    assert overshoot.root_cause.summary.startswith("the learning rate: the reward peaked at")
    assert overshoot.root_cause.first_action.startswith("learning_rate 0.02 -> 0.00")


def test_labeled_failures_are_found(diagnoses):
    pairs = [(e["run"], mode) for e in LABELS for mode in e["modes"]]
    found = [(run, mode) for run, mode in pairs if diagnoses[run].check(mode).fired]
    assert len(pairs) >= 40
    # 90% measured when written (91% after issue 12's runs); a regression below 85% fails.
    assert len(found) / len(pairs) >= 0.85, sorted(set(pairs) - set(found))


def test_first_alerts_follow_onsets(diagnoses):
    for d in diagnoses.values():
        for c in d.findings:
            assert c.onset_step is not None and c.first_alert_step is not None
            assert c.onset_step <= c.first_alert_step or any(
                i.step == c.first_alert_step for i in c.incidents)  # an earlier episode


def test_one_update_that_crashed_a_noisy_reward_is_a_gradient_incident(diagnoses):
    """ppo_epochs_noclip: at step 81 the grad norm is 11x its level and KL 15x, and the reward
    falls from about 0.6 to 0.2 for 50 steps. One noisy batch (0.89 at step 80) made the
    reward's raw range so wide that the fall read as small: the update was "recovered"."""
    check = diagnoses["19_ppo_epochs_noclip/metrics.csv"].check("grad_explosion")
    assert check.status.value == "critical" and check.onset_step == 81
    assert "one update at step 81" in check.summary and "then the reward fell" in check.summary
    # KL 5.18 in the same step (the chapter's dangerous band, 14x its level) makes it an alert
    # the moment the step is logged, before the reward can show the harm.
    assert "with KL 5.18 at the same step" in check.summary and check.first_alert_step == 81


def test_a_spike_logged_with_dangerous_kl_is_a_warning_until_harm_shows(diagnoses):
    """The same run cut at step 81: the spike is the last point; only the KL beside it says it
    is no noisy batch. The band's floor is kl_drift's adapt_kl (the chapter's 5)."""
    from grpo_doctor.rules import incidents, rule_named

    assert rule_named("kl_drift").defaults()["adapt_kl"] == incidents.DANGEROUS_KL
    run = load_run(CORPUS / "19_ppo_epochs_noclip/metrics.csv").truncated(81)
    check = diagnose(run, with_first_alert=False).check("grad_explosion")
    assert check.status.value == "warning" and check.onset_step == 81
    assert "then" not in check.summary
