"""`grpo-doctor compare`: seeds of one recipe do not part, a 30x learning rate does, on real
tiny GRPO runs (tests/fixtures/corpus and tests/fixtures/compare, both made by corpus/)."""

import json
import re
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from grpo_doctor.compare import compare_runs, compare_sources
from grpo_doctor.importers import load_runs
from grpo_doctor.reporters.compare_report import (
    render_compare_html,
    render_compare_json,
    render_compare_markdown,
    render_compare_text,
)
from tests.helpers import REAL_RUNS, make_run, run_cli

FIXTURES = Path(__file__).parent / "fixtures"
HEALTHY_S1 = FIXTURES / "corpus" / "01_healthy_s1"  # TRL names, TensorBoard, seed 1
#: healthy_s1's recipe and pre-trained base with RL seeds 2 and 3.
SEEDS = [FIXTURES / "compare" / "01_healthy_s1_rl2", FIXTURES / "compare" / "02_healthy_s1_rl3"]
LR_30X = FIXTURES / "compare" / "03_lr_too_high_trl"  # healthy_s1 with lr 1e-4 -> 3e-3
LR_30X_VERL = FIXTURES / "corpus" / "08_lr_too_high"  # the same run under verl's names, no config
#: One config and seed run twice (Qwen2.5-7B, GSM8K, logged every 5 steps: 40 points): healthy,
#: then collapsing with an entropy blow-up from step ~140 (see the real runs' README).
NIPS = REAL_RUNS / "trl-console"
NIPS_HEALTHY = NIPS / "nips-grpo-dynamics_exp2_vanilla_rho1.0_seed42.log"
NIPS_BLOWUP = NIPS / "nips-grpo-dynamics_exp1a_rho1.00_seed42.log"
#: Four short runs (32 updates each): PPO and GRPO, seeds 42 and 123 of each.
FOUR_RUNS = REAL_RUNS / "csv" / "ppo-vs-grpo-math-rlvr_four_run_training_metrics.csv"
#: Seeds of the corpus's base recipe whose pre-trained bases are alike (held-out 0.42, 0.48, 0.41).
CORPUS_SEEDS = [FIXTURES / "corpus" / n for n in ("02_healthy_s2", "03_healthy_s3",
                                                  "04_healthy_s4")]

pytestmark = pytest.mark.skipif(not LR_30X.exists(), reason="compare fixtures not present")


@pytest.fixture(scope="module")
def runs():
    paths = [HEALTHY_S1, *SEEDS, LR_30X, LR_30X_VERL, *CORPUS_SEEDS]
    return {p.name: load_runs(p)[0] for p in paths}


@pytest.mark.parametrize("pair", [(HEALTHY_S1, SEEDS[0]), (HEALTHY_S1, SEEDS[1]),
                                  (SEEDS[0], SEEDS[1])], ids=["s1-rl2", "s1-rl3", "rl2-rl3"])
def test_seeds_from_one_checkpoint_do_not_part_on_any_metric(runs, pair):
    c = compare_runs([runs[p.name] for p in pair])
    assert c.metrics["reward_mean"].diverges_at is None
    assert [m for m, x in c.metrics.items() if x.diverges_at is not None] == []
    assert set(c.config_diff) == {"seed", "run_name"}


@pytest.mark.parametrize("i,j", [(0, 1), (0, 2)])
def test_corpus_seeds_of_the_base_recipe_do_not_part_on_reward(runs, i, j):
    c = compare_runs([runs[CORPUS_SEEDS[i].name], runs[CORPUS_SEEDS[j].name]])
    assert c.metrics["reward_mean"].diverges_at is None


def test_a_30x_learning_rate_parts_within_the_first_steps(runs):
    c = compare_runs([runs[HEALTHY_S1.name], runs[LR_30X.name]])
    assert c.config_diff["learning_rate"] == [pytest.approx(1e-4), pytest.approx(3e-3)]
    assert next(iter(c.config_diff)) == "learning_rate"
    reward = c.metrics["reward_mean"]
    assert reward.diverges_at is not None and reward.diverges_at <= 15
    p = reward.partings[1]
    assert p.level_b > p.level_a  # the high lr climbs faster at first
    for fast in ("kl", "entropy"):  # what the lr moves first
        assert c.metrics[fast].diverges_at <= 10
    # The same run under verl's names without a config: the lr comes from its logged value.
    c = compare_runs([runs[HEALTHY_S1.name], runs[LR_30X_VERL.name]])
    assert c.config_diff["learning_rate"] == [pytest.approx(1e-4), pytest.approx(3e-3)]
    assert c.config_origin["learning_rate"] == ["learning_rate", "logged learning_rate (peak)"]
    assert c.metrics["reward_mean"].diverges_at <= 15
    assert c.findings["ratio_instability"].changes == (None, "appears")


def test_json_schema_and_reports(runs, capsys):
    code, out, err = run_cli(capsys, "compare", str(HEALTHY_S1), str(SEEDS[0]), str(LR_30X),
                             "--format", "json")
    assert code == 0 and err == ""
    d = json.loads(out)
    assert set(d) == {"schema_version", "runs", "config_diff", "config_origin", "metrics",
                      "findings", "notes", "suspects", "first_action"}
    assert d["schema_version"] == 1 and [r["name"] for r in d["runs"]] == [
        "01_healthy_s1", "01_healthy_s1_rl2", "03_lr_too_high_trl"]
    assert set(d["runs"][0]) >= {"name", "source", "format", "first_step", "last_step",
                                 "n_steps", "status"}
    reward = d["metrics"]["reward_mean"]
    assert set(reward) == {"diverges_at", "values", "window", "by_run"}
    assert reward["by_run"][0] is None and reward["by_run"][1]["diverges_at"] is None
    assert reward["diverges_at"] == reward["by_run"][2]["diverges_at"] <= 15
    assert len(reward["values"]) == 3 and reward["values"][2] > reward["values"][0]
    assert d["config_diff"]["learning_rate"] == [1e-4, 1e-4, 3e-3]
    assert set(d["findings"]) == {"modes", "root_cause"} and len(d["findings"]["root_cause"]) == 3


def test_terminal_report_fits_80_columns_and_leads_with_the_config(runs):
    c = compare_runs([runs[HEALTHY_S1.name], runs[LR_30X.name]])
    text = render_compare_text(c)
    assert max(len(line) for line in text.splitlines()) <= 80
    assert text.index("Config diff") < text.index("Where they part") < text.index("Findings")
    assert "learning_rate  A 0.0001  B 0.003" in text
    assert "B parts from A at step" in text and "on reward_mean:" in text
    md = render_compare_markdown(c)
    assert "| learning_rate | 0.0001 | 0.003 |" in md
    html = render_compare_html(c, [runs[HEALTHY_S1.name], runs[LR_30X.name]])
    assert html.count('<path class="overlay smooth"') >= 5  # B's curve over A's, per chart
    assert 'class="marker onset"' in html and "B parts at" in html
    assert 'id="metric-reward_mean"' in html


def test_seeds_report_no_parting(runs):
    text = render_compare_text(compare_runs([runs[HEALTHY_S1.name], runs[SEEDS[0].name]]))
    assert "no metric parts: the runs agree within their noise" in text


def test_html_option_and_bad_input(capsys, tmp_path):
    page = tmp_path / "c.html"
    code, out, err = run_cli(capsys, "compare", str(HEALTHY_S1), str(LR_30X), "--html",
                             str(page))
    assert code == 0 and page.read_text().startswith("<!DOCTYPE html>")
    code, out, err = run_cli(capsys, "compare", str(HEALTHY_S1), str(LR_30X), "--html",
                             str(page))
    assert code == 2 and "already exists" in err
    code, out, err = run_cli(capsys, "compare", str(HEALTHY_S1))
    assert code == 2 and err.strip() == ("grpo-doctor: error: compare needs at least two runs "
                                         "(the first is the reference)")
    code, out, err = run_cli(capsys, "compare", str(HEALTHY_S1), str(tmp_path / "nope.csv"))
    assert code == 2 and "no such file or folder" in err and "Traceback" not in err


def _three_runs(tmp_path):
    """One CSV holding runs a, b, c (a run_id column); c's reward is far above a's and b's."""
    rows = ["run_id,step,reward,entropy"]
    for run, lift in (("a", 0.0), ("b", 0.0), ("c", 0.4)):
        rows += [f"{run},{i},{0.4 + lift + 0.01 * ((i * 7) % 5)},{0.5 + 0.01 * (i % 3)}"
                 for i in range(1, 41)]
    path = tmp_path / "three.csv"
    path.write_text("\n".join(rows) + "\n")
    return path


def test_a_source_holding_several_runs_gives_them_all_or_those_picked(tmp_path):
    three = _three_runs(tmp_path)
    c, runs = compare_sources([three])  # alone: all its runs, the first as the reference
    assert [r.name for r in runs] == ["a", "b", "c"]
    assert c.notes == (f"{three} holds 3 runs: all compared, the first as the reference "
                       "(pick some with SOURCE#RUN or --run NAME)",)
    assert c.metrics["reward_mean"].partings[1] is None
    assert c.metrics["reward_mean"].partings[2] is not None
    c, runs = compare_sources([f"{three}#c", f"{three}#b"])  # SOURCE#RUN, in that order
    assert [r.name for r in runs] == ["c", "b"] and c.notes == ()
    c, runs = compare_sources([three], picks=["b", "a"])  # --run, in its order
    assert [r.name for r in runs] == ["b", "a"] and c.notes == ()
    c, runs = compare_sources([HEALTHY_S1, three])  # after a reference: all its runs
    assert [r.name for r in runs] == ["01_healthy_s1", "a", "b", "c"]
    assert c.notes == (f"{three} holds 3 runs: all compared (pick some with SOURCE#RUN or "
                       "--run NAME)",)
    c, runs = compare_sources([three, HEALTHY_S1], picks=["b"])
    assert [r.name for r in runs] == ["b", "01_healthy_s1"]


def test_a_run_name_holding_a_hash_is_picked_by_source_hash_name(tmp_path):
    """A console log's runs are named "NAME#1", "NAME#2": "log#NAME#1" is the log and that
    run, not a file "log#NAME" (helper-67: "no such file or folder"); a file whose name holds
    a "#" is still that file."""
    from grpo_doctor.compare import split_source

    log = tmp_path / "train.log"
    log.write_text("x\n")
    assert split_source(f"{log}#train#1") == (str(log), "train#1")
    assert split_source(f"{log}#1") == (str(log), "1")
    odd = tmp_path / "a#b.csv"
    odd.write_text("x\n")
    assert split_source(str(odd)) == (str(odd), None)
    assert split_source(f"{odd}#r#2") == (str(odd), "r#2")
    assert split_source(str(tmp_path / "nothing#here")) == (str(tmp_path / "nothing#here"), None)
    assert split_source("wandb://e/p/r#x") == ("wandb://e/p/r", "x")


def test_which_run_of_several_is_meant_is_never_guessed(tmp_path):
    from grpo_doctor.errors import ConfigError, InputError

    three = _three_runs(tmp_path)
    with pytest.raises(ConfigError, match=r"holds 3 runs \(a, b, c\) and, given first, would be "
                       r"the reference: pick its run with .*three.csv#RUN or --run RUN"):
        compare_sources([three, HEALTHY_S1])
    with pytest.raises(InputError, match="no run named 'd'"):
        compare_sources([f"{three}#d", HEALTHY_S1])
    with pytest.raises(ConfigError, match=r"--run d: no run of that name in .*three\.csv"):
        compare_sources([three], picks=["a", "d"])
    with pytest.raises(ConfigError, match="--run a: no source given holds several runs"):
        compare_sources([HEALTHY_S1, SEEDS[0]], picks=["a"])
    with pytest.raises(ConfigError, match="compare needs at least two runs"):
        compare_sources([f"{three}#a"])


def test_a_hash_in_a_file_name_is_part_of_the_path(tmp_path):
    rows = ["step,reward"] + [f"{i},0.5" for i in range(1, 30)]
    odd = tmp_path / "exp#1.csv"
    odd.write_text("\n".join(rows) + "\n")
    c, runs = compare_sources([odd, HEALTHY_S1])
    assert runs[0].name == "exp#1"


def test_cli_picks_runs_and_says_when_it_compares_them_all(tmp_path, capsys):
    three = _three_runs(tmp_path)
    code, out, err = run_cli(capsys, "compare", str(three), "--format", "json")
    assert code == 0 and err == ""
    d = json.loads(out)
    assert [r["name"] for r in d["runs"]] == ["a", "b", "c"] and len(d["notes"]) == 1
    code, out, err = run_cli(capsys, "compare", str(three), "--run", "c", "--run", "a")
    assert code == 0 and "B parts from A" in out and "note:" not in out
    code, out, err = run_cli(capsys, "compare", str(three))
    assert code == 0 and "note: " in out and "holds 3 runs: all compared" in " ".join(out.split())
    code, out, err = run_cli(capsys, "compare", str(three), str(HEALTHY_S1))
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1
    assert "would be the reference" in err and "Traceback" not in err


@pytest.mark.skipif(not FOUR_RUNS.exists(), reason="real runs not present")
def test_the_four_run_csv_compares_whole_or_by_run(capsys):
    c, runs = compare_sources([FOUR_RUNS])
    assert len(runs) == 4 and [r.name.split("_")[0] for r in runs] == ["ppo", "ppo", "grpo",
                                                                        "grpo"]
    entropy = c.metrics["entropy"]  # PPO's and GRPO's entropies are not comparable: they part
    assert entropy.partings[1] is None and None not in entropy.partings[2:]
    grpo = [r.name for r in runs[2:]]
    code, out, err = run_cli(capsys, "compare", *(f"{FOUR_RUNS}#{name}" for name in grpo),
                             "--format", "json")
    assert code == 0 and [r["name"] for r in json.loads(out)["runs"]] == grpo


def test_findings_diff_and_root_cause_fallback():
    from grpo_doctor.engine import diagnose

    n = 400
    steps = np.arange(1, n + 1)
    healthy = make_run(name="a", entropy=np.full(n, 0.8) + 0.01 * np.sin(steps),
                       reward=np.linspace(0.2, 0.8, n))
    collapsing = make_run(name="b", entropy=0.8 * np.exp(-steps / 60) + 0.01,
                          reward=np.full(n, 0.3) + 0.01 * np.sin(steps))
    diags = [diagnose(healthy), diagnose(collapsing)]
    c = compare_runs([healthy, collapsing], diags)
    f = c.findings["entropy_collapse"]
    assert f.statuses[0] == "ok" and f.statuses[1] in ("warning", "critical")
    assert f.changes == (None, "appears")
    assert c.metrics["entropy"].diverges_at is not None
    # A diagnosis without root_cause (before the verdict's root cause) reads as None.
    assert all(rc is None or hasattr(rc, "to_dict") for rc in c.root_causes)
    assert len(c.to_dict()["findings"]["root_cause"]) == 2


def test_a_short_log_parts_where_a_late_blow_up_begins():
    """40 logged points, every 5 steps: entropy 100x from 70% of the run on parts there."""
    n = 40
    steps = np.arange(5, 5 * n + 1, 5)
    rng = np.random.default_rng(3)
    entropy = [0.1 * (1 + 0.1 * rng.standard_normal(n)) for _ in range(2)]
    entropy[1][28:] *= 100
    reward = [0.8 + 0.05 * rng.standard_normal(n) for _ in range(2)]
    runs = [make_run(steps, name=f"run{i}", entropy=entropy[i], reward=reward[i])
            for i in range(2)]
    c = compare_runs(runs)
    assert c.metrics["entropy"].diverges_at == 145
    assert c.metrics["reward_mean"].diverges_at is None
    text = render_compare_text(c)
    assert "B parts from A at step 145 on entropy" in text and "no metric parts" not in text


@pytest.mark.skipif(not NIPS_BLOWUP.exists(), reason="real runs not present")
def test_one_config_run_twice_parts_where_the_second_run_blew_up():
    c, _ = compare_sources([NIPS_HEALTHY, NIPS_BLOWUP])
    blow_up = ("entropy", "truncation_ratio", "response_length_mean")
    for metric in blow_up:  # entropy 0.05 -> 5, completions pinned at the cap from ~140
        assert 120 <= c.metrics[metric].diverges_at <= 160, metric
    p = c.metrics["entropy"].partings[1]
    assert p.level_b > 10 * p.level_a
    # The three-log excursion at steps 40-50 that recovered is not where they part.
    assert all(m.diverges_at is None or m.diverges_at >= 120
               for name, m in c.metrics.items() if name in (*blow_up, "reward_mean"))


@pytest.mark.skipif(not FOUR_RUNS.exists(), reason="real runs not present")
def test_real_seeds_of_32_updates_do_not_part():
    runs = {r.name.split("_")[0] + r.name.split("_")[3]: r for r in load_runs(FOUR_RUNS)}
    for algo in ("ppo", "grpo"):
        c = compare_runs([runs[algo + "seed42"], runs[algo + "seed123"]])
        assert [m for m, x in c.metrics.items() if x.diverges_at is not None] == [], algo


#: Two real run names (Unsloth notebooks) alike for their first 47 characters.
ALIKE = ["gpt_oss_(20B)_Reinforcement_Learning_2048_Game_BF16__2025-10-17_c2f44ed1_46a6a6",
         "gpt_oss_(20B)_Reinforcement_Learning_2048_Game__2025-10-05_a8e47adc_d43132"]


def _alike_runs(tmp_path):
    """Two CSV logs named ``ALIKE`` deep in a folder; the second's entropy collapses, so its
    diagnosis has a root cause with a long summary."""
    n = 300
    steps = np.arange(1, n + 1)
    folder = tmp_path / "experiments" / "unsloth-notebooks" / "reinforcement-learning-2048"
    folder.mkdir(parents=True)
    entropy = [np.full(n, 0.8) + 0.01 * np.sin(steps), 0.8 * np.exp(-steps / 60) + 0.01]
    reward = [np.linspace(0.2, 0.8, n), np.full(n, 0.3) + 0.01 * np.sin(steps)]
    paths = []
    for name, e, r in zip(ALIKE, entropy, reward):
        path = folder / f"{name}.csv"
        rows = ["step,entropy,reward"] + [f"{s},{x},{y}" for s, x, y in zip(steps, e, r)]
        path.write_text("\n".join(rows) + "\n")
        paths.append(path)
    return paths


def _run_label(text, letter):
    """The run's name as the report shows it: beside its facts, or on the next line when it
    would not fit there."""
    lines = text.splitlines()
    i = next(k for k, line in enumerate(lines) if line.startswith(f"  {letter}  "))
    last = lines[i].split()[-1]
    return lines[i + 1].strip() if re.fullmatch(r"[\d,]+–[\d,]+", last) else last


@pytest.mark.parametrize("width", [80, 200])
def test_runs_named_alike_stay_apart_and_nothing_is_cut_or_too_wide(tmp_path, width):
    paths = _alike_runs(tmp_path)
    c, _ = compare_sources(paths)
    text = render_compare_text(c, width)
    assert max(len(line) for line in text.splitlines()) <= width
    a, b = _run_label(text, "A"), _run_label(text, "B")
    assert a != b
    if width == 200:
        assert [a, b] == ALIKE
    else:  # shortened around where they differ
        assert len(a) < len(ALIKE[0]) and "BF16" in a and "2025-10-05" in b
    # each path on a line of its own, whole or (too long for it) its end: the file name, or
    # as much of its end as the line holds
    lines = [line.strip() for line in text.splitlines()]
    for path in paths:
        assert any(line == str(path) or (line.startswith("…") and str(path).endswith(line[1:])
                   and (path.name in line or len(line) == width - 5)) for line in lines), path
    flat = "".join(text.split())  # wrapped lines joined: the root cause
    cause = c.root_causes[1]
    assert cause is not None and "".join(cause.summary.split()) in flat


def test_run_labels():
    from grpo_doctor.reporters.compare_report import run_labels

    assert run_labels(["short", "other"], 20) == ["short", "other"]
    assert run_labels(["a_long_name_one_x", "b_long_name_two_y"], 10) == ["a_long_na…",
                                                                          "b_long_na…"]
    seeds = ["qwen2.5-7b-grpo-lr1e-6-seed1", "qwen2.5-7b-grpo-lr1e-6-seed2"]
    assert run_labels(seeds, 20) == ["qwen2.…-lr1e-6-seed1", "qwen2.…-lr1e-6-seed2"]
    assert run_labels(["x" * 40 + "1", "x" * 40 + "2"], 12) == ["xxxx…xxxxxx1", "xxxx…xxxxxx2"]


@given(st.lists(st.text(alphabet="ab_-.1", min_size=1, max_size=60), min_size=2, max_size=4,
                unique=True), st.integers(8, 50))
def test_run_labels_fit_and_keep_two_names_apart(names, room):
    from grpo_doctor.reporters.compare_report import run_labels

    labels = run_labels(names, room)
    assert all(len(label) <= room for label in labels)
    assert all(label == name for name, label in zip(names, labels) if len(name) <= room)
    if len(names) == 2:
        assert labels[0] != labels[1]


@pytest.mark.parametrize("columns", ["80", "200"])
def test_the_terminal_report_is_as_wide_as_the_console(tmp_path, capsys, monkeypatch, columns):
    paths = _alike_runs(tmp_path)
    monkeypatch.setenv("COLUMNS", columns)
    code, out, err = run_cli(capsys, "compare", *map(str, paths))
    assert code == 0 and err == ""
    assert max(len(line) for line in out.splitlines()) <= int(columns)
    assert _run_label(out, "A") != _run_label(out, "B")
    assert (_run_label(out, "A") == ALIKE[0]) == (columns == "200")


def test_names_from_logs_are_shown_literally_in_the_terminal_report():
    n = 60
    steps = np.arange(1, n + 1)
    runs = [make_run(steps, name=name, entropy=np.full(n, 0.5) + 0.01 * np.sin(steps * k),
                     reward=np.linspace(0.2, 0.6, n)) for k, name in
            enumerate(["base\x1b[2J\nrun", "##[error]other\u202erun"], 1)]
    text = render_compare_text(compare_runs(runs), 80)
    assert "\x1b" not in text and "\u202e" not in text and "##[" not in text
    assert "base\\x1b[2J\\nrun" in text and "\\u202erun" in text


def test_runs_without_any_config_say_so_not_no_difference(capsys):
    """Two CSVs hold no config: "no difference in the configs read" claimed a comparison that
    never happened."""
    from tests.helpers import REPO, run_cli

    examples = REPO / "grpo_doctor" / "examples"
    code, out, _ = run_cli(capsys, "compare", str(examples / "healthy.csv"),
                           str(examples / "kl-drift.csv"))
    assert "no config in any run's log (settings the logs record" in " ".join(out.split())
    assert "no difference in the configs read" not in out
    _, out, _ = run_cli(capsys, "compare", str(examples / "healthy.csv"),
                        str(examples / "kl-drift.csv"), "-f", "json")
    assert [r["config_keys"] for r in json.loads(out)["runs"]] == [0, 0]


def test_findings_are_compared_in_the_order_they_began():
    """compare listed no_learning_signal@145 before advantage_collapse@40 (the order the
    diagnosis' checks run in), unlike diagnose, which lists findings by onset."""
    path = REAL_RUNS / "trl-console" / "nips-grpo-dynamics_exp1a_rho1.00_seed42.log"
    if not path.is_file():
        pytest.skip("shared real runs not present")
    comparison, _ = compare_sources([str(path), str(path)])
    onsets = [min(o for o in f.onsets if o is not None) for f in comparison.findings.values()]
    assert len(onsets) >= 3 and onsets == sorted(onsets)


def test_runs_of_one_file_name_its_path_once():
    """The four runs of one CSV repeated its path under every run."""
    path = REAL_RUNS / "csv" / "ppo-vs-grpo-math-rlvr_four_run_training_metrics.csv"
    if not path.is_file():
        pytest.skip("shared real runs not present")
    comparison, _ = compare_sources([str(path)])
    text = render_compare_text(comparison, 200)
    path_lines = [line for line in text.splitlines() if line.strip() == str(path)]
    assert len(comparison.runs) == 4 and len(path_lines) == 1


def _config_rows(text: str) -> list[str]:
    """The config diff's rows that start with a key: the key as shown (before "  A ")."""
    section = text.split("Config diff\n", 1)[1].split("\n\n", 1)[0]
    return [line[2:].split("  A ", 1)[0].strip() for line in section.splitlines()
            if line.startswith("  ") and not line.startswith("   ") and "  A " in line]


def _path_token_whole(text: str, path: str) -> bool:
    """``path`` is on one line: whole, or its end after ``…`` (never split across lines)."""
    return any(token == path or (token.startswith("…") and path.endswith(token[1:]))
               for line in text.splitlines() for token in line.split())


@pytest.mark.parametrize("width", [60, 80, 120])
def test_verl_config_keys_stay_told_apart_and_paths_whole(real_runs, width):
    """At 80 columns `actor_rollout_ref.actor.p…  A 2  B 4` and `…  A 64  B 128` looked like
    one key; values were cut with "..." and the paths broken mid-token onto a new line."""
    paths = sorted(str(p) for p in (real_runs / "verl-console").glob("*.log"))
    comparison, _ = compare_sources(paths)
    text = render_compare_text(comparison, width)
    assert max(len(line) for line in text.splitlines()) <= width
    rows = _config_rows(text)
    assert len(rows) == 12 and len(set(rows)) == len(rows), rows
    # a dotted key keeps its last component, the knob a user looks for
    assert any(row.endswith("ppo_micro_batch_size") and row.startswith("act") for row in rows)
    assert any(row.endswith("tensor_model_parallel_size") or row.endswith("parallel_size")
               for row in rows)
    assert "..." not in text and "..." not in render_compare_markdown(comparison)
    assert all(_path_token_whole(text, path) for path in paths)
    assert "sft_model_path/global_step_58" in text  # values fit whole where they can


@pytest.mark.parametrize("width", [60, 80])
def test_a_note_naming_a_path_keeps_it_on_one_line(width):
    """The note "PATH holds 4 runs" broke the path mid-token at 60 and 80 columns."""
    if not FOUR_RUNS.is_file():
        pytest.skip("shared real runs not present")
    comparison, _ = compare_sources([str(FOUR_RUNS)])
    text = render_compare_text(comparison, width)
    assert max(len(line) for line in text.splitlines()) <= width
    assert "holds 4 runs" in text and _path_token_whole(text, str(FOUR_RUNS))


def test_cells_of_the_findings_table_are_never_split(real_runs):
    """At 60 columns `B critical@45` ended a line and `(escalates)` began the next."""
    paths = sorted(str(p) for p in (real_runs / "trl-console").glob("nips-grpo-dynamics_*"))
    comparison, _ = compare_sources(paths)
    text = render_compare_text(comparison, 60)
    assert max(len(line) for line in text.splitlines()) <= 60
    findings = text.split("\nFindings\n", 1)[1].split("\n\n", 1)[0]
    # Some cell has a status change beside it, and no cell is split across lines.
    assert re.search(r"\b[A-D] \w+@\d+ \((escalates|appears|improves)\)", findings), findings
    assert not any(line.strip().startswith("(") for line in findings.splitlines())
    for line in text.splitlines():  # "205 vs 408" together
        assert not line.rstrip().endswith(" vs") and not line.lstrip().startswith("vs ")


def test_values_that_differ_never_look_alike():
    """nips runs' learning rates 9.79e-05 and 0.0001 both showed as 0.0001."""
    from grpo_doctor.reporters.compare_report import values_text

    assert values_text([9.789473684210527e-05, 1e-4]) == ["9.8e-05", "0.0001"]
    assert values_text([1e-4, 1e-4, 3e-3]) == ["0.0001", "0.0001", "0.003"]
    paths = ["/home/tiger/data/gsm8k/train.parquet", "data/gsm8k/train.parquet"]
    short = values_text(paths, 20)
    assert short[0] != short[1] and all(len(s) <= 20 for s in short)
    assert all("…" in s for s in short)


def test_a_name_too_long_to_sit_beside_its_facts_gets_a_line_of_its_own_whole():
    names = ["UnslothGRPO_checkpoint-250_trainer_state", "Gemma-3-RL-Finetuning_checkpoint-250"]
    runs = [make_run(name=n, reward=np.linspace(0, 1, 30) + i) for i, n in enumerate(names)]
    text = render_compare_text(compare_runs(runs), 80)
    assert [_run_label(text, "A"), _run_label(text, "B")] == names
    assert max(len(line) for line in text.splitlines()) <= 80


def _collapsing_and_steady(n: int = 200, offset: int = 0):
    steps = np.arange(1, n + 1)
    a = make_run(steps, name="a", entropy=0.8 * np.exp(-steps / 40) + 0.01,
                 reward=np.linspace(0.2, 0.8, n))
    b = make_run(steps + offset, name="b", entropy=np.full(n, 0.8) + 0.01 * np.sin(steps),
                 reward=np.linspace(0.2, 0.8, n))
    return a, b


def test_runs_sharing_no_steps_are_not_compared_not_said_to_agree():
    """Runs at steps 1-200 and 1,001-1,200 were "no metric parts: the runs agree within their
    noise": no test ran, so they agreed on nothing."""
    a, b = _collapsing_and_steady(offset=1000)
    c = compare_runs([a, b])
    assert all(m.compared == (False, False) for m in c.metrics.values())
    text = render_compare_text(c)
    assert "not compared: the runs share no logged steps" in text
    assert "agree" not in text and "no metric parts" not in text
    md = render_compare_markdown(c)
    assert "Not compared: the runs share no logged steps." in md and "agree" not in md
    html = render_compare_html(c, [a, b])
    assert "Not compared: the runs share no logged steps." in html and "agree" not in html
    by_run = json.loads(render_compare_json(c))["metrics"]["entropy"]["by_run"]
    assert by_run[1] == {"logged": True, "compared": False, "shared_points": 0,
                         "diverges_at": None}


def test_a_run_sharing_too_few_steps_is_named_beside_runs_that_were_compared():
    """Three runs: C overlaps A by 5 steps. C is said not compared (5 shared, 12 needed), not
    folded into "the runs agree"; B, whole, is compared."""
    a, b = _collapsing_and_steady()
    steps = np.arange(196, 396)
    c_run = make_run(steps, name="c", entropy=0.8 * np.exp(-steps / 40) + 0.01,
                     reward=np.linspace(0.2, 0.8, 200))
    c = compare_runs([a, a, c_run])
    assert c.metrics["entropy"].compared == (False, True, False)
    assert c.metrics["entropy"].shared[2] == 5
    text = render_compare_text(c, 100)
    assert "no metric parts where compared: the runs agree within their noise" in text
    assert "C shares at most 5 logged steps with A (12 needed): not compared" in text
    md = render_compare_markdown(c)
    assert "- C shares at most 5 logged steps with A (12 needed): not compared" in md
    # B parts on entropy from A: listed, and C is still said not compared.
    c2 = compare_runs([a, b, c_run])
    text = render_compare_text(c2, 100)
    assert "B parts from A" in text and "C shares at most 5 logged steps" in text


def test_a_check_skipped_in_one_run_is_not_compared_not_disappears():
    """A's entropy collapses; B logs no entropy, so its entropy_collapse check is skipped: it
    was "B skipped (disappears)", a change nobody measured."""
    a, _ = _collapsing_and_steady()
    b = make_run(name="b", reward=np.linspace(0.2, 0.8, 200))
    c = compare_runs([a, b])
    f = c.findings["entropy_collapse"]
    assert f.statuses == ("critical", "skipped")
    assert f.changes == (None, "not_compared")
    assert "B skipped (not compared)" in render_compare_text(c)
    assert "disappears" not in render_compare_markdown(c)
    # The other way round: skipped in the reference, raised in B is not "appears".
    c = compare_runs([b, a])
    assert c.findings["entropy_collapse"].changes == (None, "not_compared")
    assert "appears" not in render_compare_text(c)


_ONSETS = st.one_of(st.integers(0, 999), st.integers(0, 10**6), st.integers(0, 10**18))


@pytest.fixture(scope="module")
def three_examples():
    from grpo_doctor.api import example_path

    runs = [load_runs(str(example_path(n)))[0] for n in ("likelihood-displacement",
                                                        "entropy-collapse", "grad-explosion")]
    return compare_runs(runs)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(width=st.integers(40, 80), data=st.data())
def test_no_onset_or_step_is_cut_at_narrow_widths(three_examples, width, data):
    """Below 60 columns a findings cell `B critical@868,616,383` was broken mid-number beside
    a long mode name: at every width each onset appears whole and no line is too wide."""
    from dataclasses import replace

    findings = {mode: replace(f, onsets=tuple(None if o is None else data.draw(_ONSETS)
                                              for o in f.onsets))
                for mode, f in three_examples.findings.items()}
    step = data.draw(_ONSETS)
    runs = tuple(dict(r, first_step=step, last_step=step + 10**6)
                 for r in three_examples.runs)
    c = replace(three_examples, findings=findings, runs=runs)
    text = render_compare_text(c, width)
    assert max(len(line) for line in text.splitlines()) <= width, text
    numbers = set(re.findall(r"\d[\d,]*\d|\d", text))
    for f in findings.values():
        for onset, status in zip(f.onsets, f.statuses):
            if onset is not None and status in ("warning", "critical"):
                assert f"{onset:,}" in numbers, (onset, text)
    assert f"{step:,}" in numbers and f"{step + 10**6:,}" in numbers, text


def test_what_a_log_says_of_its_model_is_no_config_to_compare():
    """Two console logs that name their model (7B, 161M trainable) and their saved
    checkpoints, and no setting: "no difference in the configs read" (helper-42) claimed a
    comparison of settings that never happened."""
    from grpo_doctor.reporters.compare_report import _no_config_diff

    runs = [make_run(reward=np.linspace(0.1, 0.5 + d, 30)) for d in (0.0, 0.2)]
    for run in runs:
        run.config.update({"model_params": 7e9, "trainable_params": 161480704,
                           "saved_checkpoints": [100, 200]})
    assert _no_config_diff(compare_runs(runs)).startswith("no config in any run's log (")


def test_one_mode_in_another_form_is_not_said_to_ease_or_escalate():
    """length_hacking as answers cut at the budget (critical) against answers shortened
    (warning): another form, not "eases"; the same form at a lower status still eases."""
    from grpo_doctor.compare import _change
    from grpo_doctor.findings import Check, Status

    cut = Check("length_hacking", Status.CRITICAL, "truncated", 10,
                key_metric="truncation_ratio")
    shortened = Check("length_hacking", Status.WARNING, "collapse", 10,
                      key_metric="response_length_mean")
    assert _change(cut, shortened) == "other_form"
    assert _change(cut, Check("length_hacking", Status.WARNING, "truncated", 10,
                              key_metric="truncation_ratio")) == "eases"


def test_the_setting_that_differs_from_a_healthy_reference_is_named_with_its_value(runs):
    """The config is evidence, and a healthy reference that differs in one setting is the
    best there is: compare names the setting whose difference the chapter links to what the
    other run has (lr 1e-4 -> 3e-3: KL drift, entropy collapse), and the reference's value
    beside the first action; a seed of the same recipe has none."""
    c = compare_runs([runs[HEALTHY_S1.name], runs[SEEDS[0].name], runs[LR_30X.name]])
    assert c.suspects[0] == () and c.suspects[1] == ()
    (lr,) = c.suspects[2]
    assert lr.setting == "learning_rate" and lr.direction == "higher" and lr.primary
    assert lr.values == (pytest.approx(1e-4), pytest.approx(3e-3))
    assert set(lr.modes) <= {"kl_drift", "entropy_collapse", "ratio_instability"} and lr.modes
    first = c.first_actions[2]
    assert first.startswith("learning_rate 0.003 -> ") and first.endswith(
        "the reference ran healthy at learning_rate 1e-4"), first
    d = c.to_dict()
    assert d["suspects"][2][0]["setting"] == "learning_rate" and d["first_action"][0] is None
    text = render_compare_text(c, width=100)
    assert "differs from the reference and can explain it: learning_rate" in text


def test_a_setting_the_healthy_reference_shares_is_not_the_first_action(runs):
    """B's diagnosis blames an lr the healthy reference ran at too (trial 75: the control's own
    lr, 20x the chapter's ceiling for a larger model): compare says so and points at what
    else differs, and a differing sampler setting linked to B's findings comes first."""
    import dataclasses

    from grpo_doctor.engine import diagnose

    n = 200
    steps = np.arange(1, n + 1)
    cfg = {"learning_rate": 1e-4, "temperature": 1.0}
    healthy = make_run(name="a", entropy=np.full(n, 0.8) + 0.01 * np.sin(steps),
                       reward=np.linspace(0.2, 0.8, n))
    healthy = dataclasses.replace(healthy, config=dict(cfg))
    sharp = make_run(name="b", entropy=0.8 * np.exp(-steps / 30) + 0.005,
                     reward=np.full(n, 0.3) + 0.01 * np.sin(steps))
    sharp = dataclasses.replace(sharp, config={**cfg, "temperature": 0.3})
    c = compare_runs([healthy, sharp], [diagnose(healthy), diagnose(sharp)])
    assert c.runs[0]["status"] == "healthy"
    (temp,) = c.suspects[1]
    assert temp.setting == "temperature" and temp.direction == "lower", temp
    first = c.first_actions[1]
    assert "temperature 0.3 -> 1" in first and first.endswith(
        "the reference ran healthy at temperature 1"), first
    same = dataclasses.replace(sharp, config=dict(cfg))
    c = compare_runs([healthy, same], [diagnose(healthy), diagnose(same)])
    assert c.suspects[1] == ()
    first = c.first_actions[1] or ""
    assert first.startswith("look first at what else differs from the reference"), first
    assert "the reference ran healthy at learning_rate 1e-4 too" in first, first


def test_the_reference_is_never_said_to_share_a_value_it_did_not_have(tmp_path, capsys):
    """h109: a reference at lr 1e-5 (its config beside it) and a run whose lr 0.02 is read from
    its log: compare had said "the reference ran healthy at learning_rate 0.02 too", the
    reference's config taken for the run's. The value compared is the one the run's
    diagnosis blamed."""
    import shutil

    trial = Path(__file__).parent / "fixtures" / "trial"
    shutil.copy(trial / "lr_1e-5.csv", tmp_path / "ref.csv")
    shutil.copy(trial / "lr_1e-5.config.json", tmp_path / "ref.config.json")
    shutil.copy(trial / "lr_2e-2_noclip.csv", tmp_path / "run.csv")
    code, out, err = run_cli(capsys, "compare", str(tmp_path / "ref.csv"),
                             str(tmp_path / "run.csv"))
    assert "ran healthy at learning_rate 0.02" not in out, out


def test_a_trackers_text_values_are_the_same_settings_as_typed_ones():
    """Trial 80: MLflow stores every param as text. "True" against True, "0.90000000000000002"
    against 0.9, "[]" against [] had listed 212 keys as differing between two runs logged to
    two trackers, the three real differences lost among them."""
    from grpo_doctor.compare import config_diff

    a = make_run(reward=np.linspace(0.1, 0.5, 30))
    b = make_run(reward=np.linspace(0.1, 0.5, 30))
    a.config.update({"gradient_checkpointing": True, "adam_beta1": 0.9, "debug": [],
                     "warmup_steps": 5, "scale_rewards": "group", "seed": 1})
    b.config.update({"gradient_checkpointing": "True", "adam_beta1": "0.90000000000000002",
                     "debug": "[]", "warmup_steps": "5", "scale_rewards": "batch", "seed": "7"})
    diff, _ = config_diff([a, b])
    assert set(diff) == {"scale_rewards", "seed"}, diff


def test_a_set_or_a_complex_stored_as_text_is_compared_and_shown(tmp_path, capsys):
    """h120: PEFT's target_modules is a set, and MLflow stores its repr ("{'q_proj',
    'v_proj'}"): read back as a set, it crashed compare's report (a set is no JSON). A set is
    a sorted list; what JSON cannot hold (a complex) stays the text it was."""
    import shutil

    from grpo_doctor.importers._common import typed_text

    assert typed_text("{'v_proj', 'q_proj'}") == ["q_proj", "v_proj"]
    assert typed_text("('a', {1, 2})") == ["a", [1, 2]]
    assert typed_text("(1+2j)") == "(1+2j)" and typed_text("{b'x'}") == "{b'x'}"
    mlruns = tmp_path / "mlruns"
    shutil.copytree(Path(__file__).parent / "fixtures" / "mlflow" / "mlruns", mlruns)
    experiment = mlruns / "202207262755632855"
    runs = [experiment / "86976fc650744069a5bf470f8c057e41",
            experiment / "d92a7abcddf64eb7b917c2e432968f44"]  # the two compare lists
    for run in runs:
        (run / "params").mkdir(exist_ok=True)
    (runs[0] / "params" / "target_modules").write_text("{'q_proj', 'v_proj'}")
    (runs[1] / "params" / "target_modules").write_text("{'k_proj', 'q_proj'}")
    (runs[1] / "params" / "odd").write_text("(1+2j)")
    for fmt in ("terminal", "markdown", "json"):
        code, out, err = run_cli(capsys, "compare", str(mlruns), "--format", fmt)
        assert code in (0, 1) and "internal error" not in err, (fmt, err)
        assert "target_modules" in out, (fmt, out)
    diff = json.loads(out)["config_diff"]
    assert sorted(map(json.dumps, diff["target_modules"])) == sorted(
        ['["k_proj", "q_proj"]', '["q_proj", "v_proj"]']), diff


def test_two_levels_a_parting_names_never_read_the_same():
    """Trial 81: "B parts from A at step 2 on learning_rate: A 0.0001, B 0.0001", two linear
    decays over 200 and 320 steps: the digits it takes to tell them apart are shown."""
    from grpo_doctor.reporters.compare_report import parting_line
    from grpo_doctor.text import fmt_apart

    assert fmt_apart(1e-4, 9.94e-5) == ("0.0001", "9.9e-05")
    assert fmt_apart(0.663, 0.757) == ("0.663", "0.757")
    assert fmt_apart(0.5, 0.5) == ("0.5", "0.5")
    steps = np.arange(1, 201)
    a = make_run(reward=np.linspace(0.1, 0.5, 200), learning_rate=1e-4 * (1 - steps / 200))
    b = make_run(reward=np.linspace(0.1, 0.5, 200), learning_rate=1e-4 * (1 - steps / 320))
    comparison = compare_runs([a, b])
    lines = [parting_line(comparison, metric, 1) for metric, m in comparison.metrics.items()
             if m.partings[1] is not None]
    lr = next(line for line in lines if " on learning_rate: " in line)
    said = re.search(r": A (\S+), B (\S+)$", lr)
    assert said is not None and said.group(1) != said.group(2), lr


def test_keys_only_one_tracker_logs_are_not_said_to_differ():
    """Trial 82: a wandb run's config holds the model's config (63 keys) and a TensorBoard
    run's does not: "63 more keys differ or are only in some runs' configs" buried the real
    differences. Keys both hold and that differ are said as differing; keys only some hold
    are said apart, a few named."""
    a = make_run(reward=np.linspace(0.1, 0.5, 30))
    b = make_run(reward=np.linspace(0.1, 0.5, 30))
    a.config.update({"seed": 1, **{f"model_config.key_{k}": k for k in range(40)}})
    b.config.update({"seed": 7})
    text = render_compare_text(compare_runs([a, b]), width=100)
    flat = " ".join(text.split())
    assert "40 keys are in only some runs' configs" in flat, text
    assert "and 28 more" in flat and "differ or are only" not in flat, text
    assert "seed A 1 B 7" in flat, text


def test_a_knob_only_one_run_sets_is_in_the_diff():
    """h121: a beta of 1.0, an entropy_coef of 0.5 or a temperature of 1.8 that only one run's
    config held was left out of the diff, the JSON's too, while seed and bf16 were listed."""
    from grpo_doctor.compare import config_diff

    a = make_run(reward=np.linspace(0.1, 0.5, 30))
    b = make_run(reward=np.linspace(0.1, 0.5, 30))
    a.config.update({"beta": 1.0, "temperature": 1.8, "seed": 1})
    b.config.update({"seed": 7})
    diff, _ = config_diff([a, b])
    assert {"kl_coef", "temperature", "seed"} <= set(diff), diff  # (beta, by its knob)
    text = " ".join(render_compare_text(compare_runs([a, b]), width=100).split())
    assert "kl_coef" in text and "temperature" in text, text
