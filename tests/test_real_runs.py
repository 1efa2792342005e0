"""Diagnoses of the shared real runs (skipped when ../shared/real-runs is absent).

The verdicts come from the real-runs README: healthy runs must raise no critical; the runs it
describes as collapsed must be flagged with the mode it names.
"""

from pathlib import Path

import pytest

from grpo_doctor.config import DoctorConfig
from grpo_doctor.engine import diagnose
from grpo_doctor.importers import load_runs
from tests.helpers import REAL_RUNS, names_told_apart

EXAMPLES = Path(__file__).parents[1] / "grpo_doctor" / "examples"

pytestmark = pytest.mark.skipif(not REAL_RUNS.is_dir(), reason="shared real runs not present")

HEALTHY = [
    "verl-console/Qwen2.5-0.5B-bsz256_2-prompt512-resp256-0.538.log",
    "verl-console/gemma-2-2b-it-ppo-bsz512_4-prompt1024-resp-512-0.640.log",
    "csv/qwen3-8b-grpo-dapo-lab_A_grpo_training_metrics.csv",
    "csv/ppo-vs-grpo-math-rlvr_four_run_training_metrics.csv",
    "notebook-tables/Advanced_Llama3_1_(3B)_GRPO_LoRA__2025-03-21_3fcca28d_c3f659.csv",
    "notebook-tables/Llama3.1_(8B)-GRPO__2025-02-06_add7e30a_ad8f0a.csv",
    "notebook-tables/Qwen2.5_(3B)-GRPO__2025-02-06_46169037_de4eba.csv",
    "notebook-tables/Qwen2_5_7B_VL_GRPO__2025-09-18_19455c9f_059b72.csv",
    # Most groups all-correct (frac_reward_zero_std >= 0.8 on 37 of 40 logs), grad norm 0 on
    # most logs: a false-alarm test for zero-variance detectors.
    "trl-console/nips-grpo-dynamics_exp2_vanilla_rho1.0_seed42.log",
    "trl-console/round2_sclr_first_l2.txt",  # one grad-norm spike of 85.9 the run shrugs off
    "trainer-state/UnslothGRPO_checkpoint-250_trainer_state.json",
    "trainer-state/Gemma-3-RL-Finetuning_checkpoint-250_trainer_state.json",
]

#: Runs of a healthy file that no failure mode fired on, but whose reward and task score did
#: not move over a log too short for no_progress: inconclusive, never "healthy" (the README
#: calls all four of that file's runs healthy; this one's pass rate is 0.125 at update 1 and
#: at update 29, its reward 0.245 -> 0.256 over 32 updates).
UNPROVEN = {"ppo_formal_1p5b_seed42_composite_20260720T020928Z"}


def healthy_status(run_name: str) -> str:
    """The status a run of a file in HEALTHY is owed."""
    return "inconclusive" if run_name in UNPROVEN else "healthy"


FAILING = {
    "trl-console/20251022_181457_run_terminal.md": "entropy_collapse",
    "trl-console/20251022_120223_run_terminal.md": "length_hacking",
    "tensorboard/events.out.tfevents.1740427850.declare-a100-0.3275755.0": "advantage_collapse",
    "notebook-tables/gpt-oss-(20B)-GRPO__2025-11-22_b9599a9e_0a2d5f.csv": "reward_hacking",
    "notebook-tables/Llama_FP8_GRPO__2025-11-25_b35307e0_c9fea5.csv": "length_hacking",
    "issue-snippets/verl-721_nan_step59.txt": "numerical_failure",
    "notebook-tables/Qwen3_VL_(8B)-Vision-GRPO__2025-10-14_4480b9c4_4d11ec.csv":
        "advantage_collapse",
    "notebook-tables/Qwen3_5_(4B)_Vision_GRPO__2026-03-17_ed54cb49_2770d8.csv":
        "advantage_collapse",
    "notebook-tables/Qwen3_(4B)-GRPO__2025-05-13_be104f96_067fe1.csv": "advantage_collapse",
    "notebook-tables/gpt_oss_(20B)_Reinforcement_Learning_2048_Game_BF16__2025-10-17_"
    "c2f44ed1_46a6a6.csv": "kl_drift",
    "notebook-tables/OpenEnv_gpt_oss_(20B)_Reinforcement_Learning_2048_Game__2025-11-25_"
    "8a1c943e_2b8cd9.csv": "kl_drift",
    # An incident the run came back from: KL 17.8 at step 71, 0.13 at step 72.
    "trl-console/nips-grpo-dynamics_gate2_rho0.70_seed43.log": "kl_drift",
    # Recurring one-log KL spikes (12-197), each gone at the next log.
    "trainer-state/grpo-verified-reasoner_checkpoint-1134_trainer_state.json": "kl_drift",
    "trl-console/SCU_TSC_docker_run.log": "advantage_collapse",
    "trl-console/round2_sclr_first_l3.txt": "advantage_collapse",
    "trl-console/nips-grpo-dynamics_exp1a_rho1.00_seed42.log": "entropy_blowup",
    # Completions collapse to a few tokens for steps 45-130, then come back.
    "trl-console/nips-grpo-dynamics_exp1a_rho0.50_seed43.log": "length_hacking",
    "trainer-state/IITD_AAIPL_minesweeper_checkpoint-500_trainer_state.json": "length_hacking",
    # Corrected labels (they were "healthy"): the whole gain is format credit. check_answer
    # is -2 on all 100 steps: not one answer was right.
    "notebook-tables/DeepSeek_R1_0528_Qwen3_(8B)_GRPO__2025-06-05_fc0ecd2c_839abc.csv":
        "format_gaming",
    # Reward 0.80 -> 0.68, correctness 0.10 -> 0.02 over 60 steps: not learning.
    "notebook-tables/Qwen2_5_7B_VL_GRPO__2025-09-17_0a49f524_938224.csv": "no_progress",
}

#: Debatable: reward -0.3 -> 0.3 almost all from a partial-tag format term; correctness
#: non-zero on 12 of 250 steps. Never critical, never healthy-with-no-note.
DEBATABLE = ["notebook-tables/Mistral_v0.3_(7B)-GRPO__2025-05-10_c1a161c6_cb9cdd.csv"]


def _present(path: str) -> None:
    if not (REAL_RUNS / path).exists():
        pytest.skip(f"{path} not present")


@pytest.mark.parametrize("path", HEALTHY)
def test_healthy_real_runs_raise_no_alarm(path):
    _present(path)
    for run in load_runs(REAL_RUNS / path):
        d = diagnose(run)
        assert not d.findings, [c.summary for c in d.findings]
        assert d.status == healthy_status(run.name), d.status_reason


@pytest.mark.parametrize("path", DEBATABLE)
def test_debatable_real_runs_are_warnings(path):
    _present(path)
    (run,) = load_runs(REAL_RUNS / path)
    assert diagnose(run).status == "warning"


@pytest.mark.parametrize("path,mode", FAILING.items())
def test_failing_real_runs_are_flagged(path, mode):
    _present(path)
    (run,) = load_runs(REAL_RUNS / path)
    check = diagnose(run).check(mode)
    assert check.fired, check.summary
    assert check.first_alert_step is not None
    # A monitor raises the finding at its first alert: where it began, or an earlier episode
    # that went back before the one the finding dates (an incident starting there).
    assert check.onset_step <= check.first_alert_step or any(
        i.step == check.first_alert_step for i in check.incidents)


def test_the_recovered_kl_blowup_is_an_incident_with_its_recovery():
    path = "trl-console/nips-grpo-dynamics_gate2_rho0.70_seed43.log"
    _present(path)
    kl = diagnose(load_runs(REAL_RUNS / path)[0]).check("kl_drift")
    assert kl.status.value == "warning"  # nothing followed it
    (incident,) = kl.incidents
    assert (incident.step, incident.recovered_step) == (71, 72)
    assert incident.peak == pytest.approx(17.8, rel=0.01)


def test_an_earlier_episode_says_what_it_was():  # and when it was seen so
    """The root cause read "first raised at step 44 by an earlier episode, which had cleared
    by step 50", naming nothing: it says what the rule saw then (its level, its start), and
    the cause is the episode that did not go back. (gpt-oss 2048 BF16 had been the example;
    its KL, read from its first 50 logs, is now one drift from step 27.)"""
    path = "log-history/nips-grpo-dynamics_qwen35_rho0.70_seed44_step_logs.json"
    _present(path)
    d = diagnose(load_runs(REAL_RUNS / path)[0])
    check = d.check("entropy_blowup")
    episode = check.incidents[0]
    assert (episode.step, episode.recovered_step) == (85, 140)
    assert episode.metric == "entropy" and episode.threshold is None
    assert episode.summary.startswith(
        "at step 85, as seen then (warning): entropy blow-up: entropy x")
    assert episode.summary.endswith("mostly receded by step 140")
    assert episode.peak_step == 90 and episode.peak == pytest.approx(0.514, abs=0.001)
    # The run came back from that episode: the cause is the blow-up that did not go back.
    assert d.root_cause.step == check.onset_step > 140


def test_an_entropy_level_is_not_read_as_the_reward():
    """"with reward falling, now 4.42" read as a reward of 4.42; it is the entropy's median
    over the late points (the last logged entropy is 2.47)."""
    path = "log-history/nips-grpo-dynamics_qwen35_rho0.70_seed44_step_logs.json"
    _present(path)
    check = diagnose(load_runs(REAL_RUNS / path)[0]).check("entropy_blowup")
    assert "now 4.42" not in check.summary
    assert check.summary.endswith("; entropy since down to a median 4.42 nats over the last 8 "
                                  "logged points")
    assert check.evidence["now_means"] == "median entropy over the last 8 logged points"


def test_the_collapse_names_its_root_cause():
    path = "trl-console/nips-grpo-dynamics_exp1a_rho1.00_seed42.log"
    _present(path)
    d = diagnose(load_runs(REAL_RUNS / path)[0])
    assert d.root_cause.mode == "entropy_blowup" and 130 <= d.root_cause.step <= 145
    assert d.check("no_learning_signal").fired  # grad norm 0 on the last logs, reward 0


def test_one_catastrophic_update_is_the_root_cause_of_the_length_collapse():
    """rho=0.50: one update at step 35 (grad norm 3.6 against ~0.2) is followed by
    completions collapsing from 110 to 4 tokens and the reward to 0; it never recovers. The
    reward is correctness only: "a length reward the policy learned to game" is wrong. The
    first action rolls back to before step 35 and makes updates smaller."""
    path = "trl-console/nips-grpo-dynamics_exp1a_rho0.50_seed43.log"
    _present(path)
    d = diagnose(load_runs(REAL_RUNS / path)[0])
    assert (d.root_cause.mode, d.root_cause.step) == ("grad_explosion", 35)
    first = d.root_cause.first_action
    assert d.plan[0].action == first and "before step 35" in first
    assert "learning_rate" in first and "length" not in first
    assert d.plan[0].rollback_step == 35 and d.plan[0].treats == "root_cause"
    # The entropy fell from 1.03 right after step 10 (0.11 at 20, below the floor from 30);
    # the cap hit (97% truncated at 20) and the equal groups (58% at 20, 40% at 10) came
    # with it, not before it.
    path = "trl-console/20251022_181457_run_terminal.md"
    _present(path)
    d = diagnose(load_runs(REAL_RUNS / path)[0])
    assert (d.root_cause.mode, d.root_cause.step) == ("entropy_collapse", 10)
    assert d.findings[0].mode == "entropy_collapse"
    assert d.check("advantage_collapse").onset_step == 20
    assert "below the 0.02-nat floor of near-deterministic sampling from step 30" in (
        d.check("entropy_collapse").summary)
    assert d.check("length_hacking").status.value == "critical"
    assert "length_hacking" in {m for item in d.plan for m in item.modes}


def test_two_runs_in_one_log_first_is_nan():
    path = "trl-console/RLDecisionAgent_train_grpo.log"
    _present(path)
    first, second = (diagnose(r) for r in load_runs(REAL_RUNS / path))
    assert first.check("numerical_failure").status.value == "critical"
    assert not second.check("numerical_failure").fired


def test_a_bare_log_history_list_is_read():
    """log-history/: ``json.dump(trainer.state.log_history)``, the last entry the summary."""
    (path,) = sorted((REAL_RUNS / "log-history").glob("*.json"))
    (run,) = load_runs(path)
    assert run.format == "trainer-state"
    assert (run.first_step, run.last_step, run.n_steps) == (5, 200, 40)
    assert "train_runtime" in run.summary
    assert diagnose(run).check("entropy_blowup").fired


@pytest.fixture(scope="module")
def audited():
    """The audit of the whole real-runs folder (once for the tests that read it)."""
    from grpo_doctor import audit as auditing

    return auditing.audit([str(REAL_RUNS)], jobs=1)


@pytest.mark.slow  # audits the whole real-runs folder
def test_audit_lists_every_log_that_diagnose_reads(audited):
    """Console captures in .md/.txt/.log, bare log_history lists ... every file `diagnose`
    reads is audited, with the runs `diagnose` finds in it, under its own path or the folder
    that holds it as one run (a TensorBoard run folder); a file `diagnose` refuses is an
    error row or passed over, never a run."""
    from pathlib import Path

    from grpo_doctor.api import require_metrics
    from grpo_doctor.errors import GrpoDoctorError

    expected = set()
    refused = set()
    for path in sorted(p for p in REAL_RUNS.rglob("*") if p.is_file()):
        key = path.relative_to(REAL_RUNS).as_posix()
        try:
            runs = load_runs(path)
            for run in runs:
                require_metrics(run)
        except GrpoDoctorError:
            refused.add(key)
            continue
        expected |= {(key, run.name) for run in runs}
    result = audited
    runs = {(r.source, r.name) for r in result.runs}
    # The same logged values read through another format are listed once, the copy said.
    copies = {p.source for p in result.passed_over if p.copy}
    missing = [(key, name) for key, name in expected
               if not any(n == name and (key == s or key.startswith(s + "/"))
                          for s, n in runs) and key not in copies]
    assert not missing
    assert {Path(s).parts[0] for s, _ in expected} >= {"trl-console", "log-history"}
    # Of a notebook and the CSV table exported from it, the notebook is kept: it holds the
    # run's GRPOConfig (the CSV had been kept, "num_generations 2 -> 16" lost; nu33).
    notebook_copies = [s for s in copies if s.startswith("notebooks/")]
    assert not notebook_copies, notebook_copies
    assert any(s.startswith("notebooks/") for s, _ in runs)
    assert {e.source for e in result.errors} <= refused


@pytest.mark.slow  # audits the whole real-runs folder
def test_the_audit_table_of_real_runs_fits_80_columns(cli, monkeypatch):
    """The user's report: at 80 columns ``numerical_failure@83`` and ``entropy_collapse@30,``
    were cut in two and run names wrapped over three lines."""
    from grpo_doctor import audit as auditing

    folders = [str(REAL_RUNS / f) for f in ("trl-console", "issue-snippets")]
    result = auditing.audit(folders, jobs=1)
    tokens = {f"{c['mode']}@{c['onset_step']:,}" for r in result.runs for c in r.findings}
    assert {"numerical_failure@83", "entropy_collapse@10"} <= tokens
    monkeypatch.setenv("COLUMNS", "80")
    _, out, _ = cli("audit", *folders, "-j", "1")
    rows = [line.split(" │ ") for line in out.splitlines() if line.count(" │ ") == 3]
    assert max(len(line) for line in out.splitlines()) <= 80
    assert tokens <= {w.rstrip(",") for row in rows for w in row[2].split()}
    names = [row[0].strip() for row in rows if row[0].strip()]
    assert len(names) == len(set(names)) == len(result.runs) + len(result.errors)


@pytest.mark.slow  # audits the whole real-runs folder
def test_at_80_columns_the_audit_table_gives_the_run_names_the_room(audited):
    """The user's report: at 80 columns the run column was 15 wide (``…260720T035927Z`` for
    four runs whose names tell apart at their start, ``Llama_FP8_GRPO`` and ``…35307e0_c9fea5``
    for one run in two formats) while status and format took 14 each, and findings were in
    rule order under an "onset step" header. Now each shown name is unique and shows its own
    run and no other (tests/helpers.py ``shown_as``: the name, or a start and an end of it
    around ``…``, one of them 8 characters or more), and findings come by onset."""
    from grpo_doctor.reporters.audit_report import render_audit_text

    text = render_audit_text(audited, width=80)
    rows = [line.split(" │ ") for line in text.splitlines() if " │ " in line]
    assert max(len(line) for line in text.splitlines()) <= 80
    labels = [row[0].strip() for row in rows if row[0].strip()]
    assert len(labels) == len(audited.runs) + len(audited.errors)
    assert names_told_apart(labels, [r.label for r in audited.runs]
                            + [e.source for e in audited.errors])
    shown = dict(zip([r.label for r in audited.runs], labels))
    assert shown["ppo_formal_1p5b_seed42_composite_20260720T020928Z"].startswith("ppo_formal")
    # (of the run in two formats, the notebook, which holds its config, is listed; nu33)
    assert shown["Llama_FP8_GRPO"].startswith("Llama_FP8")
    assert min(len(label) for label in labels if "…" in label) >= 24
    onsets: dict[str, list[int]] = {}
    for row in rows:  # a run's findings, wrapped over its lines, then its root cause line
        if row[0].strip():
            run = onsets.setdefault(row[0].strip(), [])
            rooted = False
        rooted = rooted or "→" in row[2]
        run += [int(w.rstrip(",").split("@")[1].replace(",", "")) for w in row[2].split()
                if "@" in w and not rooted]
    assert all(steps == sorted(steps) for steps in onsets.values())
    assert any(len(set(steps)) > 2 for steps in onsets.values())


def test_diagnosing_a_folder_of_separate_logs_names_them(cli, real_runs):
    folder = real_runs / "trainer-state"
    code, _, err = cli("diagnose", str(folder))
    assert code == 2 and err.startswith(f"grpo-doctor: error: {folder} holds 4 training logs (")
    assert "_trainer_state.json, " in err and "diagnose one of them, or audit the folder" in err


def test_an_onset_is_the_step_its_sentence_names_and_an_earlier_episode_is_an_incident():
    """Issue 23, pattern 6: "advantage_collapse critical · onset 40" beside "from step 135".
    The excursion at 40-50 recovered (ADVICE.md); the episode the sentence describes began at
    135: that is the onset everywhere (JSON, terminal, Markdown, the sparkline's mark), and
    the excursion is an incident dated 40."""
    from grpo_doctor.reporters import markdown, terminal

    path = "trl-console/nips-grpo-dynamics_exp1a_rho1.00_seed42.log"
    _present(path)
    d = diagnose(load_runs(REAL_RUNS / path)[0])
    check = d.check("advantage_collapse")
    assert check.onset_step == 135 and "from step 135" in check.summary
    assert [i.step for i in check.incidents] == [check.first_alert_step] == [40]
    text = terminal.render_to_text(d, width=100)
    # This episode's own alert, then the earlier one: "onset 135 · first alert 40" read
    # backwards (helper-50).
    assert check.episode_alert_step is not None and check.episode_alert_step >= 135
    assert (f"advantage_collapse critical · onset 135 · first alert "
            f"{check.episode_alert_step}\n") in text
    assert "first episode" not in text and "incident: at step 40, as seen then" in text
    # What it was raised as then, beside a threshold line that is the finding's own now.
    assert "as seen then (warning): advantage collapse: 54% of groups" in text
    row = next(r for r in markdown.render_markdown(d).splitlines()
               if r.startswith("| advantage_collapse |"))
    # The table's first alert is the same as the finding line's (it had shown 40; nu33).
    assert f"| 135 | {check.episode_alert_step} |" in row, row
    verbose = terminal.render_to_text(d, width=140, verbose=True)
    table_row = next(r for r in verbose.splitlines() if "advantage_collapse" in r
                     and "135" in r and "│" in r)
    assert f"{check.episode_alert_step}" in table_row and " 40 " not in table_row, table_row


def test_format_gaming_names_only_the_terms_that_carried_the_gain():
    """The DeepSeek-R1-0528 notebook: match_format_exactly is 0 and match_format_approximately
    -0.5 on all 100 steps; the whole gain is format_and_language_reward_func's. The sentence
    named all three as where the gain came from."""
    path = "notebook-tables/DeepSeek_R1_0528_Qwen3_(8B)_GRPO__2025-06-05_fc0ecd2c_839abc.csv"
    _present(path)
    summary = diagnose(load_runs(REAL_RUNS / path)[0]).check("format_gaming").summary
    gain_from = summary.split("comes from ", 1)[1].split(" while ")[0]
    assert gain_from == "format_and_language_reward_func"
    assert "check_answer never moved" in summary


def test_a_catastrophic_update_is_dated_at_the_gradient_spike():
    """nips rho0.50: grad norm 3.6 (18x its level) at step 35, 0 at step 40; the dead stretch
    was said to follow "a catastrophic update at step 40"."""
    path = "trl-console/nips-grpo-dynamics_exp1a_rho0.50_seed43.log"
    _present(path)
    check = diagnose(load_runs(REAL_RUNS / path)[0]).check("no_learning_signal")
    said = " ".join([check.summary, *(i.summary for i in check.incidents)])
    assert "after a catastrophic update at step 35:" in said
    assert "at step 40:" not in said


def test_a_sparse_correctness_term_is_said_with_its_means_not_0_to_0():
    """correctness_reward_func is 0 on most steps and 0.25 on some: its medians are 0 -> 0,
    which read as "never moved" while it fell 0.10 -> 0.02."""
    path = "notebook-tables/Qwen2_5_7B_VL_GRPO__2025-09-17_0a49f524_938224.csv"
    _present(path)
    summary = diagnose(load_runs(REAL_RUNS / path)[0]).check("no_progress").summary
    assert "correctness_reward_func 0.104 -> 0.0208" in summary


def test_the_audit_line_keeps_the_fix_of_a_collapse_to_the_bare_answer():
    from grpo_doctor.text import without_asides

    path = "trl-console/20251022_120223_run_terminal.md"
    _present(path)
    first = diagnose(load_runs(REAL_RUNS / path)[0]).root_cause.first_action
    assert "make the format/think term count" in without_asides(first)


def test_a_crash_is_dated_where_it_left_its_level():
    """nips rho1.00: reward 0.9 (115), 0.775, 0.8, then 0.675 (130), 0.375 (135) ... 0 (150).
    The crash was dated 120, a point still at its level."""
    path = "trl-console/nips-grpo-dynamics_exp1a_rho1.00_seed42.log"
    _present(path)
    d = diagnose(load_runs(REAL_RUNS / path)[0])
    assert d.check("reward_overfit").onset_step == 130
    # The root cause, the entropy blow-up, is dated 130 too (0.058 there, then 0.12, 0.21,
    # 0.95: a climb by factors); the best reward of the three logs before it is 0.9 at 115.
    # The log saved checkpoint-100 and checkpoint-200: the one at or before 115 is named.
    assert d.root_cause.mode == "entropy_blowup" and d.root_cause.step == 130
    assert d.root_cause.first_action.startswith(
        "roll back to checkpoint-100 (the last saved checkpoint at or before step 115")


def test_a_broken_lora_run_rolls_back_then_halves_its_lr():
    """nips rho1.00 trains 161M of a 7B model's weights (a LoRA adapter, read from the log):
    its lr 1e-4 is 2x the adapter's ceiling, not the full fine-tune's 20x. ADVICE.md: roll
    back to before ~130, then a smaller lr (it said "9.8e-5 -> 2.5e-6, or 2.5e-5 for a LoRA
    adapter"). The lr is the schedule's peak, 1e-4, where its warm-up and decay meet between
    two logs (9.8e-5 is the largest logged value), as configured."""
    path = "trl-console/nips-grpo-dynamics_exp1a_rho1.00_seed42.log"
    _present(path)
    first = diagnose(load_runs(REAL_RUNS / path)[0]).root_cause.first_action
    assert first.startswith("roll back to checkpoint-100")
    assert "learning_rate 1e-4 -> 2.5e-5" in first and "9.8e-5" not in first, first


def test_the_roll_back_is_to_the_best_reward_just_before_the_onset_not_a_point_already_hit():
    """The bundled KL drift, dated 315: 0.538 a few logs before it against 0.471 at 314 is a
    checkpoint worth the reach. qwen35 rho0.70: its blow-up dated 150, 0.975 at 140 against
    0.938 at 145 is noise (within a tenth of the reward's range), and so is rho0.50's 1 at 25
    against 0.95 at 30: no reason to go back further."""
    d = diagnose(load_runs(EXAMPLES / "kl-drift.csv")[0],
                 DoctorConfig(run_config={"beta": 0.0}))
    assert d.root_cause.first_action.startswith(
        "roll back to a checkpoint from step 312 or before (the best reward of the last logged "
        "steps before step 315: 0.538, against 0.471 at step 314)")
    path = "log-history/nips-grpo-dynamics_qwen35_rho0.70_seed44_step_logs.json"
    _present(path)
    first = diagnose(load_runs(REAL_RUNS / path)[0]).root_cause.first_action
    assert first.startswith("roll back to a checkpoint from before step 150 (the last logged "
                            "step before it is 145)")
    # rho0.50's log saved checkpoint-100 and -200 only, both after the cause: nothing to go
    # back to (a roll-back names a checkpoint that exists).
    path = "trl-console/nips-grpo-dynamics_exp1a_rho0.50_seed43.log"
    first = diagnose(load_runs(REAL_RUNS / path)[0]).root_cause.first_action
    assert first.startswith("restart from the initial model (no saved checkpoint from before "
                            "step 35: checkpoint-100, checkpoint-200 come after it)")


def test_one_update_that_zeroed_the_gradient_is_called_when_the_harm_shows():
    """nips rho0.50: after the update at step 35 the grad norm is 0 on most logs, so fewer
    than 8 non-zero norms existed until step 165, and a monitor first called it there."""
    path = "trl-console/nips-grpo-dynamics_exp1a_rho0.50_seed43.log"
    _present(path)
    check = diagnose(load_runs(REAL_RUNS / path)[0]).check("grad_explosion")
    assert check.onset_step == 35 and check.first_alert_step <= 50


def test_a_reward_that_held_until_a_crash_is_a_crash_not_over_fitting_from_an_early_peak():
    """qwen35 rho0.70: the reward holds 0.8-0.98 until step 150 and crashes to 0 at 155; its
    smoothed peak (0.912 at 55) is a hair above the later plateau, and the finding read
    "over-fitting ... from step 55; reward crashed ... between steps 150 and 165"."""
    path = "log-history/nips-grpo-dynamics_qwen35_rho0.70_seed44_step_logs.json"
    _present(path)
    check = diagnose(load_runs(REAL_RUNS / path)[0]).check("reward_overfit")
    assert check.onset_step == 155 and check.summary.startswith("reward crash: ")
    assert "over-fitting" not in check.summary


def test_findings_of_one_report_say_the_same_reward_now():
    """OpenEnv 2048: kl_drift said "reward not improving (4 -> 4)" and advantage_collapse
    "(4 -> 2.25)" in the same report: each took "now" from its own stretch's last fifth."""
    import re

    path = ("notebook-tables/OpenEnv_gpt_oss_(20B)_Reinforcement_Learning_2048_Game__2025-11-25_"
            "8a1c943e_2b8cd9.csv")
    _present(path)
    d = diagnose(load_runs(REAL_RUNS / path)[0])
    nows = {m.group(1) for c in d.findings
            for m in re.finditer(r"reward not improving \([^)]* -> ([^;)]*)", c.summary)}
    assert nows == {"4"}
    # ... with its swing said: "4 -> 4" beside "0.5 -> 4" over the whole log had read as a
    # contradiction (nu33).
    assert all("4 -> 4; it swings ±3.67" in c.summary for c in d.findings
               if "reward not improving (4 -> 4" in c.summary)


def test_a_root_cause_never_names_itself_as_its_first_sign():
    """"root cause: entropy_blowup at step 140: the setting learning_rate ...; first sign:
    entropy_blowup at step 140" said nothing twice (qwen35's log names no adapter, so its lr
    9.8e-5 is 20x the full fine-tune's ceiling there)."""
    path = "log-history/nips-grpo-dynamics_qwen35_rho0.70_seed44_step_logs.json"
    _present(path)
    cause = diagnose(load_runs(REAL_RUNS / path)[0]).root_cause
    assert cause.knob["name"] == "learning_rate"
    assert f"{cause.mode} at step {cause.step}" not in cause.summary


def test_a_dead_stretch_begins_where_its_sentence_says_and_its_fall_is_dated():
    """nips rho1.00: the reward 0.8 (125) -> 0.675, 0.375, 0.25, 0.1 -> 0 from 150 with the
    grad norm 0. It read "onset 145 ... since step 150 ... fell from 0.8 to 0 by step 145"
    (0.1 there)."""
    path = "trl-console/nips-grpo-dynamics_exp1a_rho1.00_seed42.log"
    _present(path)
    check = diagnose(load_runs(REAL_RUNS / path)[0]).check("no_learning_signal")
    assert check.onset_step == 150 and "since step 150" in check.summary
    # The fall in the words and numbers of the reward crash beside it, the values logged at
    # the steps named (0.8 at step 125; a 3-point median's 0.775 read as the log's, helper-50).
    assert "the reward fell from 0.8 at step 125 to 0 at step 150" in check.summary
    crash = diagnose(load_runs(REAL_RUNS / path)[0]).check("reward_overfit").summary
    assert "from 0.8 to 0 between steps 125 and 150" in crash
    assert any(str(r).startswith("roll back to a checkpoint from step 125 or before")
               for r in check.remedies)


def test_a_notebook_and_the_table_exported_from_it_are_one_run_in_an_audit(tmp_path):
    """The Llama FP8 notebook and its CSV table hold the same 100 logged steps: an audit
    listed them as two critical runs. The notebook is kept: its GRPOConfig is the run's
    (the CSV had been kept, and "num_generations 4 -> 16" lost; nu33)."""
    import shutil

    from grpo_doctor import audit as auditing

    pair = ("notebooks/Llama_FP8_GRPO.ipynb",
            "notebook-tables/Llama_FP8_GRPO__2025-11-25_b35307e0_c9fea5.csv")
    for path in pair:
        _present(path)
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(REAL_RUNS / path, tmp_path / path)
    result = auditing.audit([str(tmp_path)], jobs=1)
    assert [r.source for r in result.runs] == [pair[0]]
    (copy,) = result.passed_over
    assert copy.copy and copy.source == pair[1] and pair[0] in copy.why
    assert any("num_generations 4 -> 16" in n for n in result.runs[0].record["notes"])


def test_what_did_not_improve_is_said_with_numbers_a_reader_can_check():
    """Mistral: the correctness term is 0 on 238 of 250 steps; its means went 0.0067 ->
    0.067, which "did not improve" alone seemed to deny. IITD: a reward swinging -9.7 to 10.9
    whose medians went -1.23 -> 0.425 is up only within its noise, and the swing is said."""
    path = "notebook-tables/Mistral_v0.3_(7B)-GRPO__2025-05-10_c1a161c6_cb9cdd.csv"
    _present(path)
    summary = diagnose(load_runs(REAL_RUNS / path)[0]).check("format_gaming").summary
    assert ("correctness_reward_func did not improve (0 on all but 12 of 250 logged steps; "
            "mean 0.00667 over the first fifth, 0.0667 over the last)") in summary
    path = "trainer-state/IITD_AAIPL_minesweeper_checkpoint-500_trainer_state.json"
    _present(path)
    summary = diagnose(load_runs(REAL_RUNS / path)[0]).check("advantage_collapse").summary
    assert ("reward up only within its noise (-1.23 -> 0.425; it swings ±5.54 from step to "
            "step)") in summary


def test_a_fall_in_stages_is_dated_at_its_plunge():
    """nips rho0.50: the length halved 234 -> 118 by step 20, held ~110 to step 35, then
    plunged to 4 tokens after the update at 35. The crash was "from 234 between steps 5 and
    95", dated 15, before the update that caused it, and its remedies came before the
    consequences'."""
    path = "trl-console/nips-grpo-dynamics_exp1a_rho0.50_seed43.log"
    _present(path)
    d = diagnose(load_runs(REAL_RUNS / path)[0])
    length = d.check("length_hacking")
    # The value logged at step 45 (4.25; 2.65 came only at step 100).
    assert length.onset_step == 40 and "crashed from 110 to 4.25 between steps 35 and 45" in (
        length.summary)
    assert all(item.treats == "consequence" for item in d.plan if item.modes == (
        "length_hacking",))


def test_a_rollout_engine_that_no_longer_holds_the_trainers_policy_is_ratio_instability():
    """nips rho1.00: the largest train/inference importance ratio of a batch fell from 1.36
    (step 135) to 0.2 (140), 0.006 (155): every sampled token got a small share of the
    sampler's probability from the trainer. ratio_instability passed it."""
    path = "trl-console/nips-grpo-dynamics_exp1a_rho1.00_seed42.log"
    _present(path)
    check = diagnose(load_runs(REAL_RUNS / path)[0]).check("ratio_instability")
    assert check.fired and check.onset_step == 145
    assert "train-inference IS ratio max < 1/5" in check.summary


def test_a_log_cut_in_the_middle_of_the_crash_is_not_healthy_and_names_the_lr():
    """nips rho1.00 as a monitor saw it at step 145: reward 0.9 -> 0.375 -> 0.25 -> 0.1 over
    the last three logs, entropy 0.05 -> 0.95. It was HEALTHY (a crash with its bottom at the
    last point was 'too soon to say'), and at 150 the first action was dynamic sampling."""
    path = "trl-console/nips-grpo-dynamics_exp1a_rho1.00_seed42.log"
    _present(path)
    run = load_runs(REAL_RUNS / path)[0]
    for cut in (145, 150):
        d = diagnose(run.truncated(cut))
        assert d.status == "critical", cut
        first = d.root_cause.first_action
        assert first.startswith("roll back") and "learning_rate 1e-4 ->" in first, cut


def test_equal_groups_whose_task_term_rarely_scores_put_the_reward_first():
    """Qwen3.5-4B Vision: correctness_reward_func scored on 5 of 60 logged steps, the reward
    std 0 on 67% of steps; no single reward value on half the steps. The first action was
    dynamic sampling, which would drop most of the batch."""
    path = "notebook-tables/Qwen3_5_(4B)_Vision_GRPO__2026-03-17_ed54cb49_2770d8.csv"
    _present(path)
    first = diagnose(load_runs(REAL_RUNS / path)[0]).root_cause.first_action
    assert first.startswith("check the task's reward function, correctness_reward_func")
    assert "only 5 of 60 logged steps" in first


def test_prompts_are_not_out_of_reach_when_the_policy_solved_them_before_it_broke():
    """nips rho1.00: the reward was 0.8-0.95 until step 125; "the prompts are out of reach:
    easier prompts" was its advice for the all-wrong groups after the collapse."""
    path = "trl-console/nips-grpo-dynamics_exp1a_rho1.00_seed42.log"
    _present(path)
    d = diagnose(load_runs(REAL_RUNS / path)[0])
    said = " ".join(str(r) for r in d.check("advantage_collapse").remedies)
    assert "out of reach" not in said and "since the policy broke" in said


def test_a_format_gain_larger_than_the_total_is_all_of_it_with_the_medians_named():
    """DeepSeek-R1-0528: '105% of the reward gain (6.19)' could not be checked (by fifths'
    means the total rose ~3.9) and read oddly over 100%."""
    path = "notebook-tables/DeepSeek_R1_0528_Qwen3_(8B)_GRPO__2025-06-05_fc0ecd2c_839abc.csv"
    _present(path)
    summary = diagnose(load_runs(REAL_RUNS / path)[0]).check("format_gaming").summary
    assert summary.startswith("format gaming: all of the reward gain (+6.19, the median of the "
                              "last fifth of the log against the first)")


def test_a_blow_up_still_climbing_at_the_end_of_the_log_is_not_since_down():
    """qwen35 as a monitor saw it at step 160: entropy 0.17, 0.32, 0.51, 0.9, 1.71 over the
    last five logs; the finding said "entropy since down to a median 0.419 nats"."""
    path = "log-history/nips-grpo-dynamics_qwen35_rho0.70_seed44_step_logs.json"
    _present(path)
    run = load_runs(REAL_RUNS / path)[0].truncated(160)
    summary = diagnose(run).check("entropy_blowup").summary
    assert "to 1.71" in summary and "since down" not in summary


def test_a_length_finding_says_what_the_reward_did_with_its_numbers():
    """qwen35: 'reward not improving' beside a truncation the reward rose 0.2 -> 0.975 under
    before it crashed; with the numbers the words can be checked."""
    path = "log-history/nips-grpo-dynamics_qwen35_rho0.70_seed44_step_logs.json"
    _present(path)
    summary = diagnose(load_runs(REAL_RUNS / path)[0]).check("length_hacking").summary
    # Not "reward falling (0.713 -> 0.00625)" from step 5: it rose under the truncation and
    # crashed at 150 (helper-50).
    assert "reward rose to 0.912 by step 55, then fell to 0.00625" in summary


def test_a_blow_up_still_climbing_at_the_cut_is_called_and_dated_where_it_began():
    """Live cuts of the nips blow-ups. rho1.00 at step 150: entropy 0.21 -> 0.95 -> 1.64 with
    the reward 0.1 -> 0; it read "no blow-up" (five points at the top were wanted). qwen35 at
    step 160: entropy 0.51 -> 0.90 -> 1.71, the reward 0.975 -> 0.025; the blow-up was a
    warning dated 85 (a bump that had gone back to 0.17 by step 140: ADVICE.md's "wrong
    first"), and the first action was the truncation setup problem."""
    path = "trl-console/nips-grpo-dynamics_exp1a_rho1.00_seed42.log"
    _present(path)
    check = diagnose(load_runs(REAL_RUNS / path)[0].truncated(150)).check("entropy_blowup")
    assert check.status.value == "critical"
    path = "log-history/nips-grpo-dynamics_qwen35_rho0.70_seed44_step_logs.json"
    d = diagnose(load_runs(REAL_RUNS / path)[0].truncated(160))
    check = d.check("entropy_blowup")
    assert check.status.value == "critical" and check.onset_step == 140
    assert "reward down to 0.025" in check.summary
    assert d.root_cause.mode == "entropy_blowup"
    assert d.root_cause.first_action.startswith("roll back to a checkpoint from before step 140")


def test_two_low_batches_at_the_cut_of_a_reward_swinging_by_chance_are_no_crash():
    """The healthy Qwen2.5 (3B) notebook scores one group per step: from step 75 its reward
    swings 0.1 <-> 2.75 by chance. Cut at step 195 its last two points (0.59, 0.2) read
    "reward crashed from 2.42 to 0.203; it never came back" (critical) against the quiet
    first half's noise. rho1.00 cut at 145 (0.8 -> 0.1 from a quiet level) stays a crash."""
    path = "notebook-tables/Qwen2.5_(3B)-GRPO__2025-02-06_46169037_de4eba.csv"
    _present(path)
    check = diagnose(load_runs(REAL_RUNS / path)[0].truncated(195)).check("reward_overfit")
    assert "crash" not in check.summary
    path = "trl-console/nips-grpo-dynamics_exp1a_rho1.00_seed42.log"
    check = diagnose(load_runs(REAL_RUNS / path)[0].truncated(145)).check("reward_overfit")
    assert check.status.value == "critical" and "crashed" in check.summary


def test_healthy_runs_polled_live_do_not_go_critical_on_noise_or_a_sparse_reward_yet_to_fire():
    """Two healthy runs as a monitor polled them. nips vanilla at step 130: a reward flat at
    0.8-1.0 whose last fifth sat at 0.85 read "reward falling", and entropy down 43% with it
    was a critical collapse. Advanced Llama 3.1 at step 44: check_answer had not fired yet
    (it first does at step 97): critical, as if it never would."""
    path = "trl-console/nips-grpo-dynamics_exp2_vanilla_rho1.0_seed42.log"
    _present(path)
    d = diagnose(load_runs(REAL_RUNS / path)[0].truncated(130))
    assert d.check("entropy_collapse").status.value != "critical"
    path = "notebook-tables/Advanced_Llama3_1_(3B)_GRPO_LoRA__2025-03-21_3fcca28d_c3f659.csv"
    check = diagnose(load_runs(REAL_RUNS / path)[0].truncated(44)).check("advantage_collapse")
    assert check.status.value == "warning"
    assert "the task's own reward has not fired yet" in check.summary


def test_findings_dated_from_the_same_step_quote_the_same_reward():
    """Llama FP8: kl_drift (an offset from step 1) said "reward not improving (-4.12 -> -5.75)"
    and length_hacking, also from step 1, "(-5.5 -> -5.75)": the KL offset judged the reward
    from its trend's knot, not from the step its sentence names."""
    import re

    path = "notebook-tables/Llama_FP8_GRPO__2025-11-25_b35307e0_c9fea5.csv"
    _present(path)
    d = diagnose(load_runs(REAL_RUNS / path)[0])
    quotes = {c.mode: m.group(1) for c in d.findings if c.onset_step == 1
              for m in [re.search(r"reward [a-z ]+ \(([^)]* -> [^)]*)\)", c.summary)] if m}
    assert {"kl_drift", "length_hacking"} <= set(quotes)
    assert len(set(quotes.values())) == 1


def test_one_fall_is_quoted_with_the_same_numbers_by_every_finding():
    """nips rho0.50: one update at 35, the reward 0.95, 0.875 -> 0.225, 0 by 45. The burst
    said "fell from 0.9 to 0.025" (medians of 10 points either side), the crash "0.875 to
    0", the dead stretch "1 at step 25 to 0 at step 45" (the window's top)."""
    import re

    path = "trl-console/nips-grpo-dynamics_exp1a_rho0.50_seed43.log"
    _present(path)
    d = diagnose(load_runs(REAL_RUNS / path)[0])
    texts = [c.summary for c in d.findings] + [i.summary for c in d.findings
                                               for i in c.incidents]
    pairs = {(m.group(1), m.group(2)) for t in texts for m in re.finditer(
        r"reward (?:fell|crashed) from ([\d.]+)(?: at step \d+)? to ([\d.]+)", t)}
    assert pairs == {("0.875", "0")}, texts


def test_the_reward_now_is_one_number_across_a_report():
    """qwen35 rho0.70: the length finding said "reward falling (0.713 -> 0.00625)" and the
    equal-groups remedy "the reward 0.0125 of 1 late in the run" (a mean of the last fifth
    against the median of the last tenth every other finding quotes)."""
    import re

    path = "log-history/nips-grpo-dynamics_qwen35_rho0.70_seed44_step_logs.json"
    _present(path)
    d = diagnose(load_runs(REAL_RUNS / path)[0])
    falling = re.search(r"then fell to ([\d.]+)", d.check("length_hacking").summary)
    late = [m.group(1) for p in d.plan for m in re.finditer(
        r"the reward ([\d.]+) of 1 late in the run", p.action)]
    assert falling is not None and late == [falling.group(1)], (falling, late)


def test_equal_groups_flickering_about_the_line_begin_where_the_window_read_begins():
    """gpt-oss 2048 (BF16): the reward std is 0 on a per-step 0/1 flag, about 50% over the
    last 50 logged points of its later prefixes. The onset was the last step (the last run of
    flags at 1 to the end) beside "over the last 86 logged points ... from step 432"; then
    step 69, where the share stepped up to ~45% (below the line) early in the run."""
    path = ("notebook-tables/gpt_oss_(20B)_Reinforcement_Learning_2048_Game_BF16__2025-10-17_"
            "c2f44ed1_46a6a6.csv")
    _present(path)
    run = load_runs(REAL_RUNS / path)[0]
    fired = 0
    for step in range(396, 429, 8):
        check = diagnose(run.truncated(step), with_first_alert=False).check("advantage_collapse")
        if check.fired:
            fired += 1
            k = check.evidence["late_points"]
            assert check.onset_step == step - k + 1, (step, check.summary)
            assert f"from step {check.onset_step}" in check.summary
    assert fired >= 3


def test_audit_says_what_inconclusive_means_now(capsys):
    """The PPO run of the four-run CSV is inconclusive because nothing shows it learns (its
    pass rate 0.125 at updates 1 and 29), not for being short: the audit's headline had
    said "inconclusive (too little to judge)"."""
    from tests.helpers import run_cli

    path = "csv/ppo-vs-grpo-math-rlvr_four_run_training_metrics.csv"
    _present(path)
    _, out, _ = run_cli(capsys, "audit", str(REAL_RUNS / path))
    assert "1 inconclusive (no failure and no sign of learning)" in " ".join(out.split())


def test_a_fall_on_the_last_two_logs_of_a_live_log_is_not_back_yet_not_never():
    """SCU as a monitor saw it at step 210: the reward 0.5 -> 0.36 over its last two logs
    read "it never came back" (critical), and the next log was back at 0.5 (trial 42). Two
    points down is "not back yet", a warning; three (rho1.00 at 145) stays a crash."""
    path = "trl-console/SCU_TSC_docker_run.log"
    _present(path)
    check = diagnose(load_runs(REAL_RUNS / path)[0].truncated(210)).check("reward_overfit")
    assert check.status.value == "warning"
    assert "not back yet (2 logged points so far)" in check.summary
    assert "never came back" not in check.summary


def test_completions_at_the_cap_that_never_grew_there_ask_for_the_budget_first():
    """OpenEnv's 2048 game as a monitor saw it (3, 10, 20 logs): half the completions cut at
    a 586-token cap from its second log, the length never growing (432-586). Overlong shaping
    first (trial 42) would penalise answers that do not fit; the budget comes first, as
    ADVICE.md's expert says and diagnose says of the whole log."""
    path = ("notebook-tables/OpenEnv_gpt_oss_(20B)_Reinforcement_Learning_2048_Game__"
            "2025-11-25_8a1c943e_2b8cd9.csv")
    _present(path)
    run = load_runs(REAL_RUNS / path)[0]
    for cut in (3, 10, 20):
        first = diagnose(run.truncated(cut)).root_cause.first_action
        assert first.startswith("max response length x2"), (cut, first)


def test_an_entropy_fall_judged_in_a_window_says_the_window_fall_it_was_judged_on():
    """rho1.00 as a monitor saw it at step 120: "entropy fell 47%" under "threshold: drop >
    50%" read as under its own line (trial 42); the fall within the window is said too. (It
    is no longer raised there: its zero-std groups are solved ones. The words stand.)"""
    import re

    path = "trl-console/nips-grpo-dynamics_exp1a_rho1.00_seed42.log"
    _present(path)
    check = diagnose(load_runs(REAL_RUNS / path)[0].truncated(120)).check("entropy_collapse")
    assert "entropy fell" in check.summary
    fell = int(re.search(r"entropy fell (\d+)%", check.summary).group(1))
    steepest = re.search(r"\((\d+)% within [\d,]+ steps at its steepest\)", check.summary)
    assert fell >= 50 or (steepest and int(steepest.group(1)) >= 50), check.summary


def test_a_per_step_cut_is_not_said_as_a_share_of_the_batch():
    """Qwen3 (4B): the mean length at the cap (every completion cut) on 47% of logged steps
    read "dropping truncated samples now would drop 57% of the batch": a share of steps said
    as one of completions, and another number than the line before it (helper-50)."""
    path = "notebook-tables/Qwen3_(4B)-GRPO__2025-05-13_be104f96_067fe1.csv"
    _present(path)
    d = diagnose(load_runs(REAL_RUNS / path)[0])
    said = next(p.action for p in d.plan if "dropping truncated samples" in p.action)
    assert said.endswith("would drop the whole batch on 47% of logged steps"), said
    assert "47% of logged steps" in d.root_cause.first_action


def test_zero_std_groups_a_solved_task_leaves_are_no_sign_of_an_entropy_collapse():
    """nips rho1.00 as it stood at step 120 (what `watch` saw): a 0/1 reward of 0.8-0.9 and
    80% zero-std groups, at least 79% of them all-correct by the reward's own arithmetic. It
    read critical "entropy collapsing ... by the end, zero-std groups at 80%", where the
    points either side of it read convergence: the groups it counted are solved ones."""
    path = "trl-console/nips-grpo-dynamics_exp1a_rho1.00_seed42.log"
    _present(path)
    run = load_runs(REAL_RUNS / path)[0]
    for last in (115, 120, 125):
        check = diagnose(run.truncated(last)).check("entropy_collapse")
        assert check.status.value == "ok", (last, check.summary)
        assert "zero-std" not in check.summary


def test_the_verbose_evidence_of_a_burst_and_of_a_crash_is_the_episode_the_summary_tells():
    """helper-67: under "one update at step 35: grad norm 3.6, 18x the non-zero norms before
    it (0.202 ...)" -v listed "baseline: 17.3, inflation: 0.037x", the steady level's numbers;
    under "crashed from 0.8 to 0 between steps 125 and 150" it listed "reward peak: 0.887,
    peak step: 5", the rise-then-fall's."""
    from grpo_doctor.text import fmt

    burst_path = "trl-console/nips-grpo-dynamics_exp1a_rho0.50_seed43.log"
    crash_path = "trl-console/nips-grpo-dynamics_exp1a_rho1.00_seed42.log"
    _present(burst_path)
    _present(crash_path)
    burst = diagnose(load_runs(REAL_RUNS / burst_path)[0]).check("grad_explosion")
    assert burst.evidence.get("episodes_only")
    assert not {"baseline", "inflation", "late_median"} & set(burst.evidence), burst.evidence
    assert burst.evidence["peak_step"] == burst.onset_step == 35
    assert f"grad norm {fmt(burst.evidence['peak'])}," in burst.summary
    assert burst.evidence["burst_line"] < burst.evidence["peak"]
    crash = diagnose(load_runs(REAL_RUNS / crash_path)[0]).check("reward_overfit")
    assert not {"reward_peak", "peak_step"} & set(crash.evidence), crash.evidence
    assert crash.evidence["crash_step"] == crash.onset_step == 130
    assert f"to {fmt(crash.evidence['lowest'])} between" in crash.summary
    assert f"and {crash.evidence['lowest_step']}" in crash.summary


def test_a_short_log_that_learned_keeps_its_learning_rate():
    """Gemma-3, 25 logs every 10 steps (too few for no_progress): reward 0.43 -> 1.51,
    correctness 0.23 -> 0.95, healthy. It read "for the next run: learning_rate 1e-5 ->
    2.5e-6", where runs logging 50+ points that learned at their rate read "keep it"."""
    path = "trainer-state/Gemma-3-RL-Finetuning_checkpoint-250_trainer_state.json"
    _present(path)
    d = diagnose(load_runs(REAL_RUNS / path)[0])
    assert d.status == "healthy"
    assert any("yet this run learned at it: keep it" in n for n in d.notes), d.notes
    assert not any("for the next run: learning_rate" in n for n in d.notes), d.notes


def test_markdown_tags_a_consequences_plan_item_as_the_terminal_does():
    """helper-70: the terminal says "[length_hacking; follows from the root cause]", the
    markdown only "(length_hacking)": in a PR comment the item read as an independent
    action."""
    from grpo_doctor.reporters import markdown

    path = "trl-console/nips-grpo-dynamics_exp1a_rho0.50_seed43.log"
    _present(path)
    d = diagnose(load_runs(REAL_RUNS / path)[0])
    consequences = [p for p in d.plan if p.treats == "consequence"]
    assert consequences
    text = markdown.render_markdown(d)
    for item in consequences:
        line = next(x for x in text.splitlines() if item.action[:60] in x)
        assert line.endswith("; follows from the root cause)"), line


def test_a_critical_run_whose_root_cause_is_a_warning_says_which_finding_is_critical():
    """gpt-oss 2025-11-22: CRITICAL above a root cause that is a warning (reward_hacking),
    the critical finding a budget too small from step 1, with nothing saying why (nu33). The
    order is the expert's (ADVICE.md: inspect the penalised completions, then the budget)."""
    from grpo_doctor.reporters import markdown, terminal

    path = "notebook-tables/gpt-oss-(20B)-GRPO__2025-11-22_b9599a9e_0a2d5f.csv"
    _present(path)
    d = diagnose(load_runs(REAL_RUNS / path)[0])
    assert d.status == "critical" and d.root_cause.mode == "reward_hacking"
    text = " ".join(terminal.render_to_text(d, width=100).split())
    assert "also critical: length_hacking from step 1, apart from the root cause" in text, text
    assert "**Also critical**: length_hacking from step 1" in markdown.render_markdown(d)
