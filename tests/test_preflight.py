"""`preflight`: a config judged against the recipe before a run, on files written by TRL's own
GRPOConfig and in verl's and OpenRLHF's layouts (tests/fixtures/preflight, made by
scripts/make_fixtures_preflight.py)."""

import json
from pathlib import Path

import pytest

from grpo_doctor import recipe
from grpo_doctor.preflight import (
    framework_of,
    parse_command_line,
    preflight,
    read_preflight_source,
)
from tests.helpers import run_cli

FIX = Path(__file__).parent / "fixtures" / "preflight"


def _pre(name: str, *overrides: str):
    config, framework = read_preflight_source(FIX / name, overrides)
    return preflight(config, framework, source=name)


def test_the_chapters_recipe_passes():
    pre = _pre("verl_recipe.yaml")
    assert pre.framework == "verl" and pre.status == "ok"
    assert not pre.setup.outside
    assert {r.id for r in pre.setup.known} >= {
        "learning_rate", "beta", "num_generations", "temperature", "entropy_coef", "epsilon",
        "epsilon_high", "max_grad_norm", "dynamic_sampling", "overlong_shaping", "adaptive_kl"}


def test_hydra_overrides_apply_and_are_judged():
    pre = _pre("verl_recipe.yaml", "actor_rollout_ref.actor.entropy_coeff=0.5",
               "actor_rollout_ref.actor.optim.lr=3e-5")
    entropy, lr = pre.setup.get("entropy_coef"), pre.setup.get("learning_rate")
    assert entropy.verdict == recipe.HIGH and entropy.far
    assert entropy.fix() == "actor_rollout_ref.actor.entropy_coeff 0.5 -> 0.005 (or remove it)"
    assert lr.verdict == recipe.HIGH and not lr.far and lr.value == pytest.approx(3e-5)
    assert pre.status == "critical"


def test_trls_own_defaults_get_what_the_chapter_says_of_them():
    pre = _pre("trl_defaults.yaml")
    assert pre.framework == "trl"
    assert pre.setup.get("learning_rate").verdict == recipe.OK  # TRL's 1e-6 is the recipe's
    beta = pre.setup.get("beta")
    assert beta.verdict == recipe.OFF and not beta.far  # TRL's beta 0: outside, not far
    assert pre.status == "warning"
    blind = {b.mode for b in pre.blind}
    assert "likelihood_displacement" in blind  # TRL logs no mean log-prob
    assert "kl_drift" in blind  # and no KL at beta 0


def test_a_trl_config_far_outside_is_critical_and_names_each_knob():
    pre = _pre("trl_bad.json")
    far = {r.id for r in pre.setup.outside if r.far}
    assert far == {"learning_rate", "num_generations", "temperature", "dtype"}
    assert pre.setup.get("dtype").verdict == recipe.UNSAFE  # fp16 weights
    assert pre.setup.get("learning_rate").sentence() == (
        "learning_rate 0.003 is 600x the recipe's 5e-6 ceiling")


def test_a_minimal_trl_config_is_completed_with_trls_defaults():
    pre = preflight({"learning_rate": 2e-6, "num_generations": 16, "use_vllm": True})
    assert pre.framework == "trl"
    assert "beta" in pre.defaults and pre.setup.get("beta").verdict == recipe.OFF
    assert any("beta is 0" in n for n in pre.notes)
    assert pre.setup.get("num_generations").verdict == recipe.OK


def test_an_openrlhf_command_line_is_read():
    pre = _pre("openrlhf_launch.sh")
    assert pre.framework == "openrlhf"
    assert pre.setup.get("learning_rate").value == pytest.approx(5e-7)
    g = pre.setup.get("num_generations")
    assert g.value == 4 and g.verdict == recipe.LOW


@pytest.mark.parametrize(("name", "text"), [
    ("args.txt", "Namespace(actor_learning_rate=5e-07, n_samples_per_prompt=2, "
                 "dataloader=<object at 0x7f>, init_kl_coef=0.01)\n"),
    ("train.log", "+ python3 -m openrlhf.cli.train_ppo_ray --actor_learning_rate 5e-7 "
                  "--n_samples_per_prompt 2\nJob submitted\n(pid=3) loading model\n"),
])
def test_a_namespace_printed_or_a_launch_captured_is_read(tmp_path, name, text):
    """OpenRLHF saves no config: what a user has is argparse's Namespace, printed, or the
    console capture of the launch before any metric; both give the settings."""
    path = tmp_path / name
    path.write_text(text)
    config, framework = read_preflight_source(path)
    assert framework == "openrlhf"
    assert preflight(config, framework).setup.get("num_generations").verdict == recipe.LOW


def test_command_lines_take_every_flag_form():
    config = parse_command_line("python x.py --a 1 --b=2e-6 --flag \\\n  --c-d text "
                                "x.y.z=0.5  # a comment\n")
    assert config == {"a": 1, "b": 2e-6, "flag": True, "c_d": "text", "x": {"y": {"z": 0.5}}}


def test_a_runs_logged_config_is_read():
    """A wandb offline run (corpus run 09, written by the real wandb package) holds TRL's
    arguments: lr 1e-2 and no clipping are far outside the recipe."""
    run = next((FIX.parent / "corpus" / "09_lr_huge_noclip" / "wandb").glob("offline-run-*"))
    config, framework = read_preflight_source(run)
    pre = preflight(config, framework)
    assert framework == "trl" and pre.status == "critical"
    assert pre.setup.get("learning_rate").far
    clip = pre.setup.get("max_grad_norm")
    assert clip.verdict == recipe.OFF and clip.far and clip.value_text == "1e9"


def test_cli_exit_codes_and_formats(capsys, tmp_path):
    code, out, _ = run_cli(capsys, "preflight", str(FIX / "trl_bad.json"))
    assert code == 1 and out.startswith("CRITICAL")
    assert "learning_rate 0.003 -> 1e-6" in out
    code, out, _ = run_cli(capsys, "preflight", str(FIX / "verl_recipe.yaml"), "-f", "json")
    assert code == 0 and json.loads(out)["status"] == "ok"
    code, out, _ = run_cli(capsys, "preflight", str(FIX / "trl_defaults.yaml"), "--fail-on",
                           "warning", "-f", "markdown")
    assert code == 1 and out.startswith("## warning")
    code, _, err = run_cli(capsys, "preflight", str(tmp_path / "missing.yaml"))
    assert code == 2 and "no such file" in err
    bad = tmp_path / "bad.yaml"
    bad.write_text("a: [1, 2\n")
    code, _, err = run_cli(capsys, "preflight", str(bad))
    assert code == 2 and "not valid YAML" in err and len(err.strip().splitlines()) == 1
    code, _, err = run_cli(capsys, "preflight", str(FIX / "trl_bad.json"), "novalue")
    assert code == 2 and "KEY=VALUE" in err


# --- what a new user met (issue: preflight trial) ------------------------------------------------


def test_framework_defaults_are_not_said_as_if_the_file_set_them(capsys, tmp_path):
    """Knobs the file left out are TRL's defaults: the terminal report says so on their own
    line (and beside the value of an outside line), markdown beside the value, and JSON in
    ``from_default``."""
    config = tmp_path / "grpo_config.yaml"
    config.write_text("learning_rate: 2e-6\nnum_generations: 16\nuse_vllm: true\n")
    code, out, _ = run_cli(capsys, "preflight", str(config))
    lines = out.splitlines()
    given = next(line for line in lines if line.startswith("within the recipe: "))
    assert "learning_rate 2e-6" in given and "num_generations 16" in given
    assert "temperature" not in given and "epsilon" not in given
    assumed = " ".join(line.strip() for line in lines[lines.index(given) + 1:]
                       if line.startswith(("within the recipe (framework defaults): ", " ")))
    assert "temperature 1" in assumed and "epsilon 0.2" in assumed
    assert "beta 0 (framework default) -> 0.01-0.05" in out
    # ... and on the line of knobs not judged (c79: the mark had been dropped there)
    flat = " ".join(out.split())
    assert "not judged (no number in the recipe): max_completion_length 512 (framework " \
        "default)" in flat, out
    _, md, _ = run_cli(capsys, "preflight", str(config), "-f", "markdown")
    assert "| temperature | 1 (framework default) |" in md
    assert "| learning_rate | 2e-6 |" in md
    _, js, _ = run_cli(capsys, "preflight", str(config), "-f", "json")
    knobs = {k["name"]: k["from_default"] for k in json.loads(js)["knobs"]}
    assert knobs["temperature"] is True and knobs["epsilon"] is True
    assert knobs["learning_rate"] is False and knobs["num_generations"] is False


@pytest.mark.parametrize(("text", "message"), [
    ("learning_rate: fast\nnum_generations: 16\n", "learning_rate: 'fast' is not a number"),
    ('{"learning_rate": NaN, "num_generations": 16}', "learning_rate: nan is not a number"),
    ("learning_rate: 1e400\n", "learning_rate: 1e400 is not a finite number"),
    ("learning_rate: -1e-6\nnum_generations: 16\n",
     "learning_rate: -1e-6 is out of range (it must be at least 0)"),
    ("num_generations: 16.5\n", "num_generations: 16.5 is not a whole number"),
    ("num_generations: 0\n", "num_generations: 0 is out of range (it must be at least 1)"),
    ("top_p: 1.5\nnum_generations: 16\n", "top_p: 1.5 is out of range"),
])
def test_a_value_no_trainer_takes_is_bad_input(capsys, tmp_path, text, message):
    config = tmp_path / ("c.json" if text.startswith("{") else "c.yaml")
    config.write_text(text)
    code, out, err = run_cli(capsys, "preflight", str(config))
    assert code == 2 and out == "" and message in err, err
    assert len(err.strip().splitlines()) == 1


def test_every_bad_value_is_named_in_one_line(capsys, tmp_path):
    config = tmp_path / "c.yaml"
    config.write_text("learning_rate: fast\ntemperature: -1\nnum_generations: 16\n")
    code, _, err = run_cli(capsys, "preflight", str(config))
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert "learning_rate: 'fast' is not a number" in err and "temperature: -1" in err
    code, _, err = run_cli(capsys, "preflight", str(FIX / "trl_bad.json"), "learning_rate=fast")
    assert code == 2 and "learning_rate: 'fast' is not a number" in err


def test_words_the_recipe_reads_and_negative_coefficients_are_still_judged():
    """beta false is off; a negative beta or entropy bonus is the recipe's to judge (a
    leash reversed), not bad input; no clipping may be written as inf."""
    pre = preflight({"beta": False, "num_generations": 16, "max_grad_norm": float("inf")})
    assert pre.setup.get("beta").verdict == recipe.OFF
    assert pre.setup.get("max_grad_norm").verdict == recipe.OFF
    pre = preflight({"beta": -0.1, "entropy_coef": -0.01, "num_generations": 16})
    assert pre.setup.get("beta").verdict == recipe.UNSAFE


def test_force_help_names_only_preflights_own_output(capsys):
    code, out, _ = run_cli(capsys, "preflight", "--help")
    assert code == 0
    force = " ".join(out[out.index("--force"):].split())
    assert force.startswith("--force Replace an existing --output file.")
    assert "--html" not in out and "--png" not in out


@pytest.mark.parametrize(("name", "content", "message"), [
    ("empty.yaml", "", "the file is empty"),
    ("blank.yaml", "\n  \n", "the file is empty"),
    ("empty.json", "", "the file is empty"),
    ("comments.yaml", "# lr: 1e-6\n", "holds no settings"),
    ("list.yaml", "- a\n- b\n", "holds a list, not settings"),
    ("list.json", "[1, 2]", "holds a list, not settings"),
    ("text.json", '"lr"', "holds a string, not settings"),
    ("binary.json", b"\x00\x01\xff" * 200, "binary data, not a config file"),
    ("binary.yaml", b"\x00\x01\xff" * 200, "binary data, not a config file"),
    ("deep.json", "[" * 100_000, "nested too deeply"),
    ("bad.json", '{"a": 1,,}', "not a readable config"),
    ("unrelated.yaml", "foo: 1\nbar: 2\n", "none of the recipe's settings found"),
], ids=lambda v: v if isinstance(v, str) and v.endswith((".yaml", ".json")) else "")
def test_hostile_config_files_are_one_line_errors(capsys, tmp_path, name, content, message):
    path = tmp_path / name
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content)
    code, out, err = run_cli(capsys, "preflight", str(path))
    assert code == 2 and out == "", (code, err)
    assert err.startswith("grpo-doctor: error: ") and message in err, err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_a_run_folder_holding_only_its_hydra_config_is_read(capsys, tmp_path):
    """verl under Hydra saves .hydra/config.yaml unresolved: references to other keys
    (``${data.max_response_length}``) are resolved as the trainer resolves them; a resolver
    preflight cannot run (``${oc.env:N}``) is left unjudged, not an error."""
    run = tmp_path / "outputs" / "2025-06-01" / "12-00-00"
    (run / ".hydra").mkdir(parents=True)
    (run / ".hydra" / "config.yaml").write_text(
        "data:\n  max_response_length: 1024\n  n: 16\n"
        "actor_rollout_ref:\n"
        "  actor:\n    optim:\n      lr: 1e-6\n    clip_ratio: 0.6\n"
        "    clip_ratio_low: ${actor_rollout_ref.actor.clip_ratio}\n"
        "  rollout:\n    n: ${data.n}\n    temperature: ${oc.env:TEMP}\n"
        "    response_length: ${data.max_response_length}\n"
        "algorithm:\n  adv_estimator: grpo\ntrainer:\n  total_epochs: 1\n")
    code, out, err = run_cli(capsys, "preflight", str(run), "-f", "json")
    assert code == 0, err
    knobs = {k["name"]: k for k in json.loads(out)["knobs"]}
    assert knobs["num_generations"]["value"] == 16
    assert knobs["epsilon"]["value"] == 0.6 and knobs["epsilon"]["verdict"] == recipe.HIGH
    assert knobs["temperature"]["verdict"] == recipe.UNKNOWN
    code, _, err = run_cli(capsys, "preflight", str(tmp_path / "outputs" / "2025-06-01"))
    assert code == 2 and len(err.strip().splitlines()) == 1
    (run / ".hydra" / "config.yaml").write_text("a: [1,\n")
    code, _, err = run_cli(capsys, "preflight", str(run))
    assert code == 2 and "config.yaml: not valid YAML" in err


def test_a_cut_json_log_says_at_once(capsys, tmp_path):
    """A trainer_state.json cut inside a string: json's message ends "starting at", and
    read_json adds " at line N": "starting at at line 1"."""
    (tmp_path / "trainer_state.json").write_text('{"log_history": [{"loss": "0.')
    code, _, err = run_cli(capsys, "preflight", str(tmp_path))
    assert code == 2 and "at at" not in err, err


# --- a second trial: PPO, notes, duplicate keys ------------------------------------------------

PPO = ("algorithm:\n  adv_estimator: {est}\n  kl_ctrl:\n    kl_coef: 0.02\n"
       "actor_rollout_ref:\n  actor:\n    optim:\n      lr: 1.0e-6\n    entropy_coeff: 0.005\n"
       "  rollout:\n    n: 1\n    temperature: 1.0\n"
       "critic:\n  optim:\n    lr: 1.0e-5\ntrainer:\n  total_epochs: 15\n")


def test_a_ppo_config_with_a_critic_is_not_judged_on_a_group_size(capsys, tmp_path):
    """verl's PPO (adv_estimator gae) samples one completion per prompt: there are no groups,
    so n 1 is no finding (nor the equal-groups blind check); a group-based estimator with n 1
    still is."""
    config = tmp_path / "ppo.yaml"
    config.write_text(PPO.format(est="gae"))
    code, out, _ = run_cli(capsys, "preflight", str(config))
    assert code == 0 and out.startswith("OK"), out
    assert "-> 16" not in out and "8-64" not in out
    assert "not judged: actor_rollout_ref.rollout.n 1 (the advantage estimator uses no" in out
    assert "advantage_collapse" not in out
    _, js, _ = run_cli(capsys, "preflight", str(config), "-f", "json")
    group = next(k for k in json.loads(js)["knobs"] if k["name"] == "num_generations")
    assert group["verdict"] == recipe.NOT_APPLICABLE and group["risks"] == []
    for estimator in ("reinforce_plus_plus", "remax"):
        config.write_text(PPO.format(est=estimator))
        assert run_cli(capsys, "preflight", str(config))[0] == 0
    for estimator in ("grpo", "rloo", "grpo_passk", "reinforce_plus_plus_baseline"):
        config.write_text(PPO.format(est=estimator))
        code, out, _ = run_cli(capsys, "preflight", str(config))
        assert code == 1 and "actor_rollout_ref.rollout.n 1 -> 16" in out, estimator


def test_a_note_only_knob_is_a_note_in_the_header_the_marker_json_and_exit_code(capsys,
                                                                                 tmp_path):
    """TRL's default mask_truncated_completions false is only a contributing risk: a note.
    The header says OK, so the line is not marked '!' under 'Outside the recipe:' (the marks
    of what makes a warning); JSON says note, and --fail-on warning exits 0."""
    config = tmp_path / "nomask.yaml"
    config.write_text("learning_rate: 1.0e-6\nbeta: 0.02\nnum_generations: 16\n"
                      "temperature: 1.0\nloss_type: dapo\n")
    code, out, _ = run_cli(capsys, "preflight", str(config), "--fail-on", "warning")
    assert code == 0 and out.startswith("OK"), out
    lines = out.splitlines()
    assert "Outside the recipe:" not in lines
    heading = next(i for i, line in enumerate(lines) if line.startswith("Outside the recipe"))
    assert "notes" in lines[heading] and "not counted in the status" in lines[heading]
    assert lines[heading + 1].startswith("· mask_truncated_completions false (framework "
                                         "default) -> true")
    assert not any(line.startswith(("! ", "✗ ")) for line in lines)
    _, js, _ = run_cli(capsys, "preflight", str(config), "-f", "json")
    doc = json.loads(js)
    mask = next(k for k in doc["knobs"] if k["name"] == "overlong_shaping")
    assert doc["status"] == "ok" and mask["verdict"] == "off" and mask["note"] is True
    _, md, _ = run_cli(capsys, "preflight", str(config), "-f", "markdown")
    assert "| off (note) |" in md
    # A counted knob outside keeps its '!' under the plain heading, the note below it.
    config.write_text("learning_rate: 1.0e-6\nbeta: 0.0\nnum_generations: 16\n")
    code, out, _ = run_cli(capsys, "preflight", str(config), "--fail-on", "warning")
    lines = out.splitlines()
    assert code == 1 and out.startswith("WARNING")
    assert lines.index("Outside the recipe:") < next(
        i for i, line in enumerate(lines) if line.startswith("Outside the recipe, notes"))
    assert any(line.startswith("! beta 0 -> 0.01-0.05") for line in lines)


@pytest.mark.parametrize(("name", "text", "said"), [
    ("dup.yaml", "learning_rate: 1.0e-6\nbeta: 0.02\nnum_generations: 16\n"
                 "learning_rate: 3.0e-5\n", "duplicate key learning_rate at line 4"),
    ("nested.yaml", "actor_rollout_ref:\n  actor:\n    optim:\n      lr: 1.0e-6\n"
                    "      lr: 3.0e-5\n  rollout:\n    n: 16\n",
     "duplicate key actor_rollout_ref.actor.optim.lr at line 5"),
    ("dup.json", '{"learning_rate": 1e-6, "num_generations": 16, "learning_rate": 3e-5}',
     "duplicate key learning_rate"),
])
def test_a_key_set_twice_is_one_line_and_exit_2(capsys, tmp_path, name, text, said):
    """Which of two values did the user mean? Not silently the last one."""
    config = tmp_path / name
    config.write_text(text)
    code, out, err = run_cli(capsys, "preflight", str(config))
    assert (code, out) == (2, "") and said in err and len(err.strip().splitlines()) == 1, err


def test_a_yaml_merge_key_is_no_duplicate(capsys, tmp_path):
    config = tmp_path / "merge.yaml"
    config.write_text("base: &b\n  learning_rate: 1.0e-6\n  num_generations: 16\n"
                      "run:\n  <<: *b\n  learning_rate: 2.0e-6\n")
    code, out, err = run_cli(capsys, "preflight", str(config))
    assert code == 0 and err == "", err


def test_a_completion_budget_is_never_within_a_recipe_that_gives_it_no_number(tmp_path, capsys):
    """max_completion_length 32 read "within the recipe" (helper-37): the recipe asks for a
    budget long enough for the task's answers, which only the log's truncation can judge."""
    path = tmp_path / "grpo_config.yaml"
    path.write_text("learning_rate: 1.0e-6\nnum_generations: 16\nmax_completion_length: 32\n")
    code, out, _ = run_cli(capsys, "preflight", str(path))
    assert "not judged (no number in the recipe): max_completion_length 32" in out, out
    assert "long enough" not in out
    assert "max_completion_length 32" not in out.split("within the recipe")[-1].split(
        "no number")[0]
    code, out, _ = run_cli(capsys, "preflight", str(path), "-f", "markdown")
    assert "| max_completion_length | 32 |" in out and "| by the log |" in out


def test_a_file_neither_config_nor_log_is_said_as_preflight_reads_it(tmp_path, capsys):
    """A PNG read "not a training log grpo-doctor can read", as if a log were what preflight
    wanted (helper-83)."""
    image = tmp_path / "curve.png"
    image.write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(100))
    code, _, err = run_cli(capsys, "preflight", str(image))
    assert code == 2
    assert err.strip().endswith("not a trainer config, a launch command or a training log "
                                "grpo-doctor can read")


@pytest.mark.parametrize("kwargs, fix", [
    ({"lr_scheduler_kwargs": {"min_lr": 1e-3}}, "lr_scheduler_kwargs.min_lr 0.001 -> 1e-7"),
    ({"lr_scheduler_kwargs": "{'min_lr_rate': 5.0}"},
     "lr_scheduler_kwargs.min_lr_rate 5 -> 0.1: the schedule's floor (5e-6)"),
])
def test_a_schedule_floor_above_the_learning_rate_is_critical(capsys, tmp_path, kwargs, fix):
    """Trial 73: cosine_with_min_lr's min_lr 3e-3 above an lr of 1e-4 climbed 30x, and the
    reward fell as it rose; preflight had passed it. A floor below the lr passes."""
    cfg = {"learning_rate": 1e-6, "lr_scheduler_type": "cosine_with_min_lr", "beta": 0.04,
           **kwargs}
    pre = preflight(dict(cfg), "trl")
    assert pre.status == "critical" and pre.problems[0].startswith(fix), pre.problems
    path = tmp_path / "cfg.json"
    path.write_text(json.dumps(cfg))
    code, out, _ = run_cli(capsys, "preflight", str(path))
    assert code == 1 and "Settings that contradict each other:" in out
    below = preflight({**cfg, "lr_scheduler_kwargs": {"min_lr": 1e-7}}, "trl")
    assert not below.problems


def test_a_kl_loss_switched_on_without_its_coefficient_is_read_not_refused(tmp_path, capsys):
    """SkyRL's shipped run_gsm8k.sh (and verl scripts that keep kl_loss_coef's default) set
    use_kl_loss=true and no coefficient: preflight had refused it, "use_kl_loss: true is not a
    number" (c77). The switch is no value of beta."""
    script = tmp_path / "run_gsm8k.sh"
    script.write_text(
        "uv run --isolated --extra vllm -m skyrl_train.entrypoints.main_base \\\n"
        '  trainer.algorithm.advantage_estimator="grpo" \\\n'
        "  trainer.algorithm.use_kl_loss=true \\\n"
        "  generator.n_samples_per_prompt=16 \\\n"
        "  trainer.policy.optimizer_config.lr=1.0e-6\n")
    code, out, err = run_cli(capsys, "preflight", str(script))
    assert code == 0 and err == "", err
    assert "use_kl_loss" not in out or "not a number" not in out, out


def test_a_kl_loss_switched_on_without_its_coefficient_reads_the_framework_default(tmp_path):
    """verl's and SkyRL's use_kl_loss with no kl_loss_coef written runs at their default, 0.001
    (ppo_trainer.yaml, ppo_base_config.yaml): it had read "beta not set". OpenRLHF's flat flag
    moves its own init_kl_coef, whose default its forks disagree on: not filled in."""
    from grpo_doctor.recipe import read_config

    verl = {"actor_rollout_ref": {"actor": {"use_kl_loss": True, "optim": {"lr": 1e-6}},
                                  "rollout": {"n": 8}}, "algorithm": {"adv_estimator": "grpo"}}
    result = preflight(verl)
    beta = next(r for r in result.setup.readings if r.id == "beta")
    assert beta.value == 0.001 and beta.source == "actor_rollout_ref.actor.kl_loss_coef"
    assert "beta" in result.defaults
    assert next(d for d in result.to_dict()["knobs"] if d["name"] == "beta")["from_default"]
    skyrl = read_config({"trainer": {"algorithm": {"use_kl_loss": True}, "policy": {
        "optimizer_config": {"lr": 1e-6}}}})
    assert next(r for r in skyrl.readings if r.id == "beta").value == 0.001
    written = preflight({**verl, "actor_rollout_ref": {"actor": {
        "use_kl_loss": True, "kl_loss_coef": 0.02}, "rollout": {"n": 8}}})
    assert next(r for r in written.setup.readings if r.id == "beta").value == 0.02
    assert "beta" not in written.defaults
    off = read_config({"actor_rollout_ref": {"actor": {"use_kl_loss": False,
                                                        "kl_loss_coef": 0.001}}})
    assert next(r for r in off.readings if r.id == "beta").value == 0  # the leash is off
    flat_flag = read_config({"use_kl_loss": True, "actor_learning_rate": 1e-6})
    assert next(r for r in flat_flag.readings if r.id == "beta").value is None


def test_a_hash_inside_a_word_is_no_shell_comment(tmp_path, capsys):
    """ms-swift's `--dataset AI-MO/NuminaMath-TIR#1000` (a sample count): shlex's comments
    had dropped every flag after it, and the missing ones read at TRL's defaults as "within
    the recipe" (c77). A `#` that begins a word is still a comment."""
    from grpo_doctor.importers.command_line import parse_command_line

    cfg = parse_command_line(
        "swift rlhf --rlhf_type grpo --dataset AI-MO/NuminaMath-TIR#1000 \\\n"
        "  --learning_rate 5e-5 --num_generations 2  # two for speed\n  --beta 0.04\n")
    assert cfg["dataset"] == "AI-MO/NuminaMath-TIR#1000"
    assert cfg["learning_rate"] == 5e-5 and cfg["num_generations"] == 2 and cfg["beta"] == 0.04
    assert not any("two" in str(k) for k in cfg)


@pytest.mark.parametrize("text, key, setting", [
    ("python3 -m openrlhf.cli.train_ppo_ray --algo.kl.init_coef 1.0 --algo.kl.estimator k3\n",
     "algo.kl.init_coef", "beta"),
    ("python3 -m roll.pipeline.rlvr --num_return_sequences_in_group 1\n",
     "num_return_sequences_in_group", "num_generations"),
    ("python -m skyrl_train.entrypoints.main_base "
     "generator.sampling_params.max_generate_length=64\n",
     "generator.sampling_params.max_generate_length", "max_completion_length"),
])
def test_newer_framework_spellings_are_read(text, key, setting):
    """OpenRLHF's dotted flags (--algo.kl.init_coef, 2026), ROLL's group size and SkyRL's
    completion budget had read nothing: the knob unset, or at TRL's default (c77)."""
    cfg = recipe.flat_config(parse_command_line(text))
    reading = recipe.read_config(cfg).get(setting)
    assert reading is not None and reading.source == key, reading


def test_a_quoted_or_escaped_hash_is_a_word_and_unclosed_quotes_keep_the_comment_out():
    """h109: `--wandb_run_name "#exp1"`, `'#'` and `\\#x` are words to the shell, not comments
    (they had hidden `--n_samples_per_prompt 1`); a line whose quote never closes is split on
    spaces with its comment still dropped (a commented-out `--num_generations 16` had read
    as set)."""
    from grpo_doctor.importers.command_line import parse_command_line

    for word in ('"#exp1"', "'#'", "\\#x"):
        cfg = parse_command_line(f"python t.py --run_name {word} --n_samples_per_prompt 1\n")
        assert cfg.get("n_samples_per_prompt") == 1, (word, cfg)
    cfg = parse_command_line(
        'python t.py --run_name "open --learning_rate 1e-3 # --num_generations 16')
    assert "num_generations" not in cfg, cfg


def test_a_kl_loss_switch_that_is_neither_true_nor_false_is_refused(tmp_path, capsys):
    """h109: use_kl_loss=maybe (or [true]) had been taken as on, exit 0."""
    script = tmp_path / "k.sh"
    script.write_text("python3 -m verl.trainer.main_ppo actor_rollout_ref.actor.optim.lr=1e-6 "
                      "actor_rollout_ref.actor.use_kl_loss=maybe actor_rollout_ref.rollout.n=8\n")
    code, out, err = run_cli(capsys, "preflight", str(script))
    assert code == 2 and "use_kl_loss: 'maybe' is not true or false" in err, err
    assert len(err.strip().splitlines()) == 1


def test_ms_swift_launches_are_read_at_ms_swifts_own_defaults(tmp_path, capsys):
    """c77: ms-swift was read as TRL, so a launch leaving the lr out read TRL's 1e-6 "within
    the recipe" (ms-swift's is 1e-5 for a full fine-tune) and its GRPO's beta 0.04 as "0 ...
    off". Its default tuner, LoRA, has an adapter's lr range."""
    full = tmp_path / "full.sh"
    full.write_text("swift rlhf --rlhf_type grpo --model Qwen/Qwen2.5-7B --train_type full \\\n"
                    "  --dataset AI-MO/NuminaMath-TIR#1000 --num_generations 8\n")
    out = json.loads(run_cli(capsys, "preflight", str(full), "--format", "json")[1])
    assert out["framework"] == "ms-swift", out["framework"]
    knobs = {k["name"]: k for k in out["knobs"]}
    assert knobs["learning_rate"]["value"] == 1e-5 and knobs["learning_rate"]["from_default"]
    assert knobs["learning_rate"]["verdict"] == "high"
    assert knobs["beta"]["value"] == 0.04 and knobs["beta"]["verdict"] == "ok"
    assert knobs["temperature"]["value"] == 0.9
    lora = tmp_path / "lora.sh"
    lora.write_text("swift rlhf --rlhf_type grpo --model Qwen/Qwen2.5-7B --num_generations 8\n")
    out = json.loads(run_cli(capsys, "preflight", str(lora), "--format", "json")[1])
    knobs = {k["name"]: k for k in out["knobs"]}
    assert knobs["learning_rate"]["value"] == 1e-4, knobs["learning_rate"]
    assert "LoRA" in json.dumps(knobs["learning_rate"]), knobs["learning_rate"]


def test_hostile_h111_reads_of_new_sampler_settings_and_ms_swift(tmp_path, capsys):
    """h111: a TRL config with a stray train_type read as ms-swift; an ms-swift DPO launch
    judged as GRPO; exponential_decay_length_penalty that pushes nothing (a factor of 1 or
    less, a start past the budget) read as on; malformed banned-token and decay values
    listed within the recipe."""
    from grpo_doctor.preflight import framework_of

    assert framework_of({"num_generations": 8, "beta": 0.0, "train_type": "full"}) == "trl"
    dpo = tmp_path / "dpo.sh"
    dpo.write_text("swift rlhf --rlhf_type dpo --model Qwen/Qwen2.5-7B --beta 0.1\n")
    code, _, err = run_cli(capsys, "preflight", str(dpo))
    assert code == 2 and "rlhf_type dpo" in err, err
    for value, on in (([4, 3.0], True), ([4, 1.0], False), ([4, 0.5], False),
                      ([1000000, 1.5], False)):
        cfg = {"max_completion_length": 12,
               "generation_kwargs": {"exponential_decay_length_penalty": value}}
        reading = recipe.read_config(cfg).get("length_decay")
        assert reading is not None and reading.outside is on, (value, reading)
    for cfg in ({"generation_kwargs": {"exponential_decay_length_penalty": [4]}},
                {"generation_kwargs": {"begin_suppress_tokens": "text"}},
                {"generation_kwargs": {"suppress_tokens": True}}):
        path = tmp_path / "cfg.json"
        path.write_text(json.dumps({"num_generations": 8, **cfg}))
        code, _, err = run_cli(capsys, "preflight", str(path))
        assert code == 2 and "is not a" in err, (cfg, err)
    # Several banned-token lists: on when any is, whichever is found first.
    banned = recipe.read_config({"generation_kwargs": {"suppress_tokens": [],
                                                       "begin_suppress_tokens": [42]}})
    assert banned.get("banned_tokens").outside


@pytest.mark.parametrize("name, text, key, value", [
    # EasyR1 (examples/config.yaml's shape): its rollout group and KL switch
    ("easyr1.yaml", "worker:\n  actor:\n    optim:\n      lr: 1.0e-6\n  rollout:\n    n: 2\n"
     "algorithm:\n  kl_coef: 1.0e-2\n", "worker.rollout.n", 2),
    ("easyr1_off.yaml", "worker:\n  actor:\n    optim:\n      lr: 1.0e-6\n"
     "algorithm:\n  disable_kl: true\n  use_kl_loss: true\n  kl_coef: 1.0e-2\n",
     "algorithm.disable_kl", 0),
    # Axolotl (rl: grpo, rl_beta beside the trl section)
    ("axolotl.yaml", "rl: grpo\nrl_beta: 1.0\nlearning_rate: 5.0e-6\ntrl:\n"
     "  num_generations: 8\n", "rl_beta", 1.0),
    # AReaL (gconfig's sampler and group; actor.kl_ctl)
    ("areal.yaml", "actor:\n  kl_ctl: 1.0\n  optimizer:\n    lr: 1.0e-6\ngconfig:\n"
     "  n_samples: 2\n  greedy: false\n", "gconfig.n_samples", 2),
    ("areal_kl.yaml", "actor:\n  kl_ctl: 1.0\n  optimizer:\n    lr: 1.0e-6\n", "actor.kl_ctl",
     1.0),
    # Open-Instruct's grpo_fast flags, Oat's with a shell variable
    ("oi.sh", "python open_instruct/grpo_fast.py --learning_rate 5e-7 --beta 0.01 "
     "--num_samples_per_prompt_rollout 2 --response_length 128 --clip_higher 2.0\n",
     "num_samples_per_prompt_rollout", 2),
    ("oat.sh", "ROLLOUT_PER_PROMPT=2\nset -x\npython -m oat.experiment.main \\\n"
     "  --learning_rate 0.000001 --num_samples $ROLLOUT_PER_PROMPT --beta ${BETA:-0.01}\n",
     "num_samples", 2),
    # rLLM: its own key wins over the verl one it syncs to
    ("rllm.sh", "python -m rllm.trainer.main actor_rollout_ref.rollout.n=8 rllm.rollout.n=2 "
     "actor_rollout_ref.actor.optim.lr=1e-6 rllm.algorithm.kl_beta=1.0\n", "rllm.rollout.n", 2),
    # prime-rl's TOML (an eval sampler is not the rollout's)
    ("prime.toml", "[orchestrator]\ngroup_size = 2\n[orchestrator.eval.sampling]\n"
     "temperature = 0.3\n[trainer.optim]\nlr = 3e-6\n", "orchestrator.group_size", 2),
    # prime-rl's newer name for it
    ("prime_new.toml", "[orchestrator]\nrollouts_per_example = 2\n[trainer.optim]\nlr = 3e-6\n",
     "orchestrator.rollouts_per_example", 2),
])
def test_more_frameworks_spellings_are_read(tmp_path, name, text, key, value):
    """c79: EasyR1's worker.rollout.n and disable_kl, Axolotl's rl_beta, AReaL's gconfig and
    kl_ctl, Open-Instruct's and Oat's flags (a shell variable the script sets), rLLM's own
    keys and prime-rl's TOML had been ignored, misread or refused: an unread beta 1.0 had made
    the first action "raise the learning rate x3"."""
    path = tmp_path / name
    path.write_text(text)
    config, framework = read_preflight_source(path)
    result = preflight(config, framework, str(path))
    read = {r.source: r.value for r in result.setup.known}
    assert read.get(key) == value, read
    if name == "prime.toml":
        assert all(r.id != "temperature" for r in result.setup.known)
    if name == "rllm.sh":
        assert read.get("rllm.algorithm.kl_beta") == 1.0
    if name == "oi.sh":
        assert framework == "open-instruct" and not result.defaults  # (no TRL defaults)
        assert read.get("clip_higher") == 2.0 and read.get("response_length") == 128
        group = next(r for r in result.setup.known if r.id == "num_generations")
        assert "per_device_train_batch_size" not in group.fix()


@pytest.mark.parametrize("beams", [1.5, 0, -1, "many"])
def test_a_beam_count_no_generate_takes_is_refused(tmp_path, capsys, beams):
    """num_beams is a whole number of at least 1 (transformers' generate refuses the rest);
    1.5, 0 and -1 had been read (h117)."""
    path = tmp_path / "cfg.json"
    path.write_text(json.dumps({"num_generations": 8, "generation_kwargs": {"num_beams": beams}}))
    code, _, err = run_cli(capsys, "preflight", str(path))
    assert code == 2 and "num_beams" in err, err
    path.write_text(json.dumps({"num_generations": 8, "generation_kwargs": {"num_beams": 1}}))
    assert run_cli(capsys, "preflight", str(path))[0] != 2


@pytest.mark.parametrize("config, framework", [
    ({"pretrain": "Qwen/Qwen2.5-Math-1.5B", "oracle": "math", "num_samples": 8,
      "generate_max_length": 3000, "critic_type": "grpo", "beta": 0.0}, "oat"),
    ({"actor": {"kl_ctl": 0.0}, "gconfig": {"n_samples": 4}}, "areal"),
    ({"rl": "grpo", "learning_rate": 5e-6, "trl": {"beta": 0.001}}, "axolotl"),
    ({"orchestrator": {"rollouts_per_example": 8}, "trainer": {"optim": {"lr": 3e-6}}},
     "prime-rl"),
    ({"algorithm": {"kl_ctrl": {"kl_coef": 0.001}}, "trainer": {"n_gpus_per_node": 8}},
     "verl"),
    ({"pretrain": "x", "n_samples_per_prompt": 8, "init_kl_coef": 0.01}, "openrlhf"),
    ({"learning_rate": 4e-5, "dataset_builder": {"group_size": 16}}, "tinker"),
])
def test_the_framework_is_named_from_its_own_keys(config, framework):
    """Oat had been labelled OpenRLHF (they share --pretrain), AReaL and Axolotl "not
    recognised" and prime-rl's [trainer] read as verl's (c79); none gets TRL's defaults."""
    assert framework_of(config) == framework
    assert not preflight(config).defaults or framework in ("trl", "ms-swift")


def test_an_inverted_switch_is_said_as_written(tmp_path):
    """EasyR1's disable_kl: true and AReaL's greedy: true say the setting the other way round:
    the fix turns the switch back, as the user writes it."""
    from grpo_doctor.recipe import read_config

    off = read_config({"algorithm": {"disable_kl": True, "kl_coef": 0.01}})
    beta = next(r for r in off.readings if r.id == "beta")
    assert beta.value_text == "True" and beta.outside
    assert beta.fix().startswith("algorithm.disable_kl True -> False, with algorithm.kl_coef")
    on = read_config({"algorithm": {"disable_kl": False, "kl_coef": 0.02}})
    assert next(r for r in on.readings if r.id == "beta").value == 0.02
    greedy = read_config({"gconfig": {"greedy": True, "temperature": 1.0}})
    do_sample = next(r for r in greedy.readings if r.id == "do_sample")
    assert do_sample.outside and do_sample.value_text == "True"
    assert do_sample.fix() == "gconfig.greedy True -> False"
    sampled = read_config({"gconfig": {"greedy": False}})
    assert not next(r for r in sampled.readings if r.id == "do_sample").outside


def test_a_launch_reads_the_config_file_it_names(tmp_path):
    """`trl grpo --config grpo_config.yaml --num_generations 2` and EasyR1's
    `config=examples/config.yaml`: the file's settings under the flags (its beta 0.02 had read
    as TRL's default 0); TRL's own minimal CLI config is a TRL config, not refused."""
    (tmp_path / "grpo_config.yaml").write_text(
        "model_name_or_path: Qwen/Qwen2.5-0.5B\nreward_funcs:\n  - accuracy_reward\n"
        "beta: 0.02\nnum_generations: 16\n")
    script = tmp_path / "launch.sh"
    script.write_text("trl grpo --config grpo_config.yaml \\\n  --num_generations 2\n")
    config, framework = read_preflight_source(script)
    assert config["beta"] == 0.02 and config["num_generations"] == 2 and framework == "trl"
    (tmp_path / "examples").mkdir()
    (tmp_path / "examples" / "config.yaml").write_text(
        "worker:\n  rollout:\n    n: 5\n    temperature: 1.0\n")
    easy = tmp_path / "easy.sh"
    easy.write_text("set -x\npython3 -m verl.trainer.main \\\n  config=examples/config.yaml \\\n"
                    "  worker.rollout.n=8\n")
    config, _ = read_preflight_source(easy)
    assert config["worker"]["rollout"] == {"n": 8, "temperature": 1.0}
    assert "x" not in config and "m" not in config
    minimal = tmp_path / "minimal.yaml"
    minimal.write_text("model_name_or_path: Qwen/Qwen2.5-0.5B\nreward_funcs:\n  - accuracy\n")
    config, framework = read_preflight_source(minimal)
    assert framework == "trl" and preflight(config, framework).setup.known


def test_a_named_config_that_is_not_read_is_said(tmp_path, monkeypatch):
    """A launch naming a config file that is missing (or unreadable) is judged on its flags,
    and the report says the file was not read (it had been dropped without a word; h117)."""
    monkeypatch.chdir(tmp_path)
    script = tmp_path / "launch.sh"
    script.write_text("trl grpo --config missing.yaml --learning_rate 1e-6 --beta 0.04\n")
    config, framework = read_preflight_source(script)
    notes = preflight(config, framework).notes
    assert any("missing.yaml, was not read" in n for n in notes), notes
    (tmp_path / "missing.yaml").write_text("beta: [unclosed\n")
    config, framework = read_preflight_source(script)
    assert any("missing.yaml, was not read" in n for n in preflight(config, framework).notes)
    (tmp_path / "missing.yaml").write_text("num_generations: 16\n")
    config, framework = read_preflight_source(script)
    assert config["num_generations"] == 16
    assert not any("was not read" in n for n in preflight(config, framework).notes)


def test_a_script_beside_a_folder_of_logs_is_no_log_s_config(tmp_path):
    """A scratch_lr_sweep.sh beside logs/ holding several runs' CSVs was read as each one's
    config ("beside the log"), and named the root cause (c79)."""
    from grpo_doctor.importers.sidecar import find_training_config

    logs = tmp_path / "logs"
    logs.mkdir()
    for name in ("a.csv", "b.csv"):
        (logs / name).write_text("step,reward\n1,0.1\n")
    (tmp_path / "scratch_lr_sweep.sh").write_text(
        "python train.py --learning_rate 0.00001 --beta 0.04\n")
    assert find_training_config(logs / "a.csv") is None
    (logs / "b.csv").unlink()
    assert find_training_config(logs / "a.csv") is not None  # one run's logs/: its folder's
    # Runs logged as JSONL are runs too (h118); a run's sampled completions are not (h117).
    (logs / "completions.jsonl").write_text('{"prompt": "2+2", "completion": "4"}\n')
    assert find_training_config(logs / "a.csv") is not None
    (logs / "b.jsonl").write_text('{"step": 1, "reward": 0.1}\n')
    assert find_training_config(logs / "a.csv") is None


def test_hostile_h117_config_reads(tmp_path):
    """h117: a script whose variables double 16x a line (15 GB), a TOML 5,000 keys deep (a
    RecursionError), EasyR1's saved config holding disable_kl twice (refused "False is not a
    number") or disable_kl false beside use_kl_loss (refused), a dataset's num_samples, an
    eval's n_samples and a grader's num_beams read as the rollout's (critical)."""
    from grpo_doctor.errors import FormatError
    from grpo_doctor.recipe import read_config

    script = tmp_path / "grow.sh"
    lines = ["A=" + "x" * 16] + [f"V{i}=" + "${" + (f"V{i - 1}" if i > 1 else "A") + "}" * 16
                                 for i in range(1, 9)]
    script.write_text("\n".join(lines) + "\npython t.py --learning_rate $V8 --beta $(echo 1)"
                      " --num_generations $UNSET\n")
    config, _ = read_preflight_source(script)
    assert len(str(config["learning_rate"])) <= 4096
    assert config["beta"] == "${computed}" and config["num_generations"] == "${UNSET}"
    deep = tmp_path / "deep.toml"
    deep.write_text("a" + ".b" * 5000 + " = 1\nlearning_rate = 1e-6\n")
    with pytest.raises(FormatError, match="nested too deeply"):
        read_preflight_source(deep)
    saved = read_config({"algorithm": {"disable_kl": True, "kl_coef": 0.01, "use_kl_loss": True},
                         "worker": {"actor": {"disable_kl": True, "kl_coef": 0.01,
                                              "use_kl_loss": True}}})
    assert saved.get("beta").switched_off
    on = read_config({"algorithm": {"disable_kl": False, "use_kl_loss": True}})
    assert on.get("beta").value is None  # (EasyR1's own default is no verl default)
    for config in ({"data": {"num_samples": 5000}}, {"eval": {"n_samples": 1}},
                   {"grader": {"num_beams": 4}}, {"orchestrator": {"eval": {"group_size": 1}}},
                   {"judge": {"max_completion_tokens": 16}}):
        setup = read_config(config)
        assert not setup.outside and all(r.value is None for r in setup.readings
                                         if r.id in ("num_generations", "num_beams",
                                                     "max_completion_length")), config
    assert read_config({"data": {"max_response_length": 64}}).get(
        "max_completion_length").value == 64  # verl's budget is under data


def test_a_value_the_code_computes_is_said_in_words(tmp_path, capsys):
    """A training script's GRPOConfig with a computed budget: "max_completion_length
    ${computed in the code}" read as a template left unfilled (nu33). A config's own
    interpolation is shown as written."""
    script = tmp_path / "train.py"
    script.write_text("import os\nfrom trl import GRPOConfig\n"
                      "args = GRPOConfig(learning_rate=1e-6, beta=0.04, "
                      "max_completion_length=int(os.environ['LEN']))\n")
    code, out, _ = run_cli(capsys, "preflight", str(script))
    flat = " ".join(out.split())
    assert "max_completion_length (computed in the code)" in flat, out
    assert "${" not in out
    cfg = tmp_path / "cfg.yaml"
    cfg.write_text("learning_rate: 1.0e-6\nbeta: 0.04\nmax_completion_length: ${oc.env:LEN}\n")
    _, out, _ = run_cli(capsys, "preflight", str(cfg))
    assert "max_completion_length ${oc.env:LEN}" in " ".join(out.split()), out


def test_hostile_h118_config_reads(tmp_path, capsys):
    """h118: a critic's dropout read as the policy's (a healthy verl config critical); the
    first dropout key, not the largest (Phi-2's attention_dropout 0.0 hid resid_pdrop 0.1);
    Tinker's dataset_builder.group_size dropped with the data's counts; a script's positional
    lr refused; LR=1e-2 before the command and ${LR-1e-2} after LR= read as 0.01; a 2 MB
    launch line asking for 4 GB; a TOML with a byte-order mark refused; a config.json 900
    levels deep beside a log crashing diagnose."""
    from grpo_doctor.importers.sidecar import find_training_config
    from grpo_doctor.recipe import read_config

    critic = read_config({"critic": {"model": {"override_config": {"hidden_dropout": 0.1}}},
                          "reward_model": {"attention_dropout": 0.2},
                          "actor_rollout_ref": {"actor": {"optim": {"lr": 1e-6}}}})
    assert critic.get("dropout").value is None and not critic.outside
    phi2 = read_config({"attention_dropout": 0.0, "embd_pdrop": 0.0, "resid_pdrop": 0.1})
    dropout = phi2.get("dropout")
    assert dropout.value == 0.1 and dropout.outside and dropout.source == "resid_pdrop"
    assert "resid_pdrop 0.1 is on" in dropout.how_far_of_value()
    tinker = read_config({"learning_rate": 4e-5, "lora_rank": 32,
                          "dataset_builder": {"batch_size": 128, "group_size": 2}})
    assert tinker.get("num_generations").value == 2 and tinker.get("num_generations").outside
    assert read_config({"data": {"num_samples": 5000}}).get("num_generations").value is None

    assert parse_command_line("python grpo.py --learning_rate $1 --beta ${2}\n") == {
        "learning_rate": "${argument 1}", "beta": "${argument 2}"}
    script = tmp_path / "pos.sh"
    script.write_text("LR=$1\npython -m trl.scripts.grpo --learning_rate $LR "
                      "--num_generations 8 --beta 0.04\n")
    assert run_cli(capsys, "preflight", str(script))[0] != 2  # not judged, not refused
    assert parse_command_line("LR=1e-2 python grpo.py --learning_rate $LR\n") == {
        "learning_rate": "${LR}"}  # the command's environment, not the line's $LR
    assert parse_command_line("export LR=1e-6\nCUDA_VISIBLE_DEVICES=0 python grpo.py "
                              "--learning_rate $LR\n") == {"learning_rate": 1e-6}
    assert parse_command_line("LR=\npython grpo.py --learning_rate ${LR-1e-2} "
                              "--beta ${LR:-0.04}\n") == {"learning_rate": "${LR}", "beta": 0.04}
    # A variable holding flags is split into words, as the shell splits it (h117).
    assert parse_command_line('ARGS="--learning_rate 1e-4 --beta 0"\npython train.py $ARGS '
                              "--num_generations 8\n") == {
        "learning_rate": 1e-4, "beta": 0, "num_generations": 8}
    huge = parse_command_line("A=" + "x" * 4000 + "\npython train.py --learning_rate 1e-4 "
                              "--run_name " + "$A" * 1_000_000 + "\n")
    assert huge == {"learning_rate": 1e-4, "run_name": "${too_long}"}

    switch = tmp_path / "dapo.yaml"  # a custom stack's DAPO switch: not judged, not refused
    switch.write_text("learning_rate: 1.0e-6\nnum_generations: 8\nclip_higher: true\n")
    assert run_cli(capsys, "preflight", str(switch))[0] != 2
    bom = tmp_path / "bom.toml"
    bom.write_bytes(b"\xef\xbb\xbflearning_rate = 1e-6\nnum_generations = 8\n")
    assert read_preflight_source(bom)[0]["num_generations"] == 8

    run = tmp_path / "run"
    run.mkdir()
    (run / "metrics.csv").write_text("step,reward\n1,0.1\n2,0.2\n")
    for deep in (900, 3000):
        (run / "config.json").write_text('{"learning_rate": 1e-4, "beta": 0.0, "x": '
                                         + '{"a": ' * deep + "1" + "}" * deep + "}")
        assert find_training_config(run / "metrics.csv") is None


def test_a_nemo_rl_config_is_read_over_the_parents_it_names(tmp_path):
    """NeMo-RL's `defaults: "grpo_math_1B.yaml"`: the child's keys over its parent's, nested
    sections merged (the parent had not been read: its KL and budget went unjudged). A parent
    not found leaves the child as written; Hydra's own defaults list names no file."""
    (tmp_path / "grpo_math_1B.yaml").write_text(
        "grpo:\n  num_generations_per_prompt: 16\nloss_fn:\n  reference_policy_kl_penalty: 0.01\n"
        "policy:\n  optimizer:\n    kwargs:\n      lr: 5.0e-6\n  generation:\n"
        "    temperature: 1.0\n")
    (tmp_path / "grpo_math_8B.yaml").write_text(
        'defaults: "grpo_math_1B.yaml"\ngrpo:\n  num_generations_per_prompt: 2\npolicy:\n'
        "  optimizer:\n    kwargs:\n      lr: 3.0e-7\n")
    config, framework = read_preflight_source(tmp_path / "grpo_math_8B.yaml")
    assert framework == "nemo-rl" and "defaults" not in config
    assert config["grpo"]["num_generations_per_prompt"] == 2
    assert config["loss_fn"]["reference_policy_kl_penalty"] == 0.01
    assert config["policy"]["optimizer"]["kwargs"]["lr"] == 3e-7
    assert config["policy"]["generation"]["temperature"] == 1.0
    (tmp_path / "grpo_math_1B.yaml").unlink()
    config, _ = read_preflight_source(tmp_path / "grpo_math_8B.yaml")
    assert config["defaults"] == "grpo_math_1B.yaml" and "loss_fn" not in config
    assert any("grpo_math_1B.yaml, was not read" in n for n in preflight(config).notes)
    (tmp_path / "hydra.yaml").write_text("defaults:\n  - ppo_trainer\n  - _self_\n"
                                         "actor_rollout_ref:\n  rollout:\n    n: 8\n")
    config, _ = read_preflight_source(tmp_path / "hydra.yaml")
    assert config["defaults"] == ["ppo_trainer", "_self_"]
    (tmp_path / "loop.yaml").write_text('defaults: "loop.yaml"\nlearning_rate: 1.0e-6\n')
    assert read_preflight_source(tmp_path / "loop.yaml")[0]["learning_rate"] == 1e-6


def test_hostile_h119_config_reads(tmp_path, capsys):
    """h119: a launch naming config.yaml (one of the saved-config names) lost its own flags
    beside a log; `LR=1e-2 && python ... $LR` and `export LR=1e-5; ...` were misread; one run
    logged as metrics.csv and metrics.jsonl was "a folder of runs"; a defaults: list naming
    a file six times fanned out to 6^8 reads; a bash array's last flag read '8)'; a missing
    named config let TRL's defaults pass as the file's; positional defaults garbled; an empty
    default judged as TRL's; a child naming only a missing parent refused without naming it;
    a value model's dropout read as the policy's."""
    from grpo_doctor.importers.sidecar import find_training_config
    from grpo_doctor.recipe import read_config

    run = tmp_path / "run"
    run.mkdir()
    (run / "metrics.csv").write_text("step,reward\n1,0.1\n2,0.2\n")
    (run / "config.yaml").write_text("learning_rate: 1.0e-6\nnum_generations: 8\n"
                                     "temperature: 1.0\n")
    (run / "launch.sh").write_text("trl grpo --config config.yaml --num_generations 2 "
                                   "--temperature 3.0\n")
    path, config = find_training_config(run / "metrics.csv")
    assert path.name == "launch.sh" and config["num_generations"] == 2
    assert config["temperature"] == 3.0 and config["learning_rate"] == 1e-6

    assert parse_command_line("LR=1e-2 && python t.py --learning_rate $LR\n") == {
        "learning_rate": 1e-2}
    assert parse_command_line("export LR=1e-5; python t.py --learning_rate $LR\n") == {
        "learning_rate": 1e-5}
    assert parse_command_line('ARGS=(--learning_rate 1e-5 --num_generations 8)\n'
                              'python t.py "${ARGS[@]}"\n') == {
        "learning_rate": 1e-5, "num_generations": 8}
    assert parse_command_line("LR=${1:-1e-6}\npython t.py --learning_rate $LR --x ${10}\n") == {
        "learning_rate": "${argument 1 or 1e-6}", "x": "${argument 10}"}
    assert parse_command_line("python t.py --learning_rate ${LR:-}\n") == {
        "learning_rate": "${LR}"}
    assert parse_command_line("LR=1e-6\npython t.py --learning_rate ${LR:?set LR} "
                              "--beta 0.04\n") == {"learning_rate": 1e-6, "beta": 0.04}

    logs = tmp_path / "one" / "logs"
    logs.mkdir(parents=True)
    (logs / "metrics.csv").write_text("step,reward\n1,0.1\n")
    (logs / "metrics.jsonl").write_text('{"step": 1, "reward": 0.1}\n')
    (tmp_path / "one" / "launch.sh").write_text("python t.py --learning_rate 1e-6 "
                                                "--num_generations 2\n")
    assert find_training_config(logs / "metrics.csv") is not None  # one run, two formats

    fan = tmp_path / "a.yaml"
    fan.write_text("defaults: [a.yaml, a.yaml, a.yaml, a.yaml, a.yaml, a.yaml]\n"
                   "learning_rate: 1.0e-6\nnum_generations: 8\n")
    assert read_preflight_source(fan)[0]["num_generations"] == 8  # (each file read once)

    missing = tmp_path / "scripts"
    missing.mkdir()
    (missing / "run.sh").write_text("accelerate launch train_grpo.py --config "
                                    "recipes/grpo.yaml --beta 0.04\n")
    config, framework = read_preflight_source(missing / "run.sh")
    pre = preflight(config, framework)
    assert not pre.defaults, pre.defaults  # its knobs may be in the file: no defaults assumed
    child = tmp_path / "child.yaml"
    child.write_text("defaults: ../nowhere/grpo_math_1B.yaml\n")
    code, _, err = run_cli(capsys, "preflight", str(child))
    assert code == 2 and "grpo_math_1B.yaml, was not read" in err, err

    value = read_config({"value_model": {"hidden_dropout": 0.3},
                         "model_init_kwargs": {"attention_dropout": 0.0}})
    assert not value.get("dropout").outside


def test_preflight_judges_with_the_config_files_recipe(tmp_path, capsys, monkeypatch):
    """nu34: preflight judged a config against the chapter's 5e-6 ceiling in the folder
    where diagnose used grpo-doctor.toml's [recipe.learning_rate] high 5e-4 (and it had no
    --config)."""
    cfg = tmp_path / "train.json"
    cfg.write_text(json.dumps({"learning_rate": 1e-4, "num_generations": 16, "beta": 0.02}))
    monkeypatch.chdir(tmp_path)
    _, chapter, _ = run_cli(capsys, "preflight", str(cfg))
    assert "learning_rate 1e-4 -> " in chapter
    (tmp_path / "grpo-doctor.toml").write_text("[recipe.learning_rate]\nhigh = 5e-4\n")
    _, own, _ = run_cli(capsys, "preflight", str(cfg))
    assert "learning_rate 1e-4 -> " not in own and "learning_rate 1e-4" in own, own
    other = tmp_path / "other.toml"
    other.write_text("[recipe.learning_rate]\nhigh = 5e-5\n")
    _, named, _ = run_cli(capsys, "preflight", str(cfg), "--config", str(other))
    assert "learning_rate 1e-4 -> " in named, named


@pytest.mark.parametrize("script", [
    'ARGS=(--learning_rate 1e-2\n      --num_generations 8)\npython t.py "${ARGS[@]}"\n',
    'ARGS=(\n  --num_generations 8\n  --learning_rate 1e-2\n)\npython t.py "${ARGS[@]}"\n',
    'ARGS=(--run_name "exp(1)" --learning_rate 1e-2 --num_generations 8)\n'
    'python t.py "${ARGS[@]}"\n',
    'ARGS=(--num_generations 8)\nARGS+=(--learning_rate 1e-2)\npython t.py "${ARGS[@]}"\n',
    'ARGS=(--num_generations 8 --run_name "$(date)")  # a comment (x)\nLR=1e-\nLR+=2\n'
    'python t.py "${ARGS[@]}" --learning_rate $LR\n',
    # h120: a default naming another variable, and the ': "${X:=d}"' idiom that sets X
    'DEFAULT_LR=1e-2\nLR=${LR:-${DEFAULT_LR}}\npython t.py --learning_rate $LR '
    '--num_generations 8\n',
    ': "${LR:=1e-2}"\npython t.py --learning_rate "${LR:?set LR}" --num_generations 8\n',
])
def test_a_launch_script_is_read_as_the_shell_passes_it(script):
    """h120: an array closed on a later line had read '8)' ("not a number", exit 2; beside a
    log, the script passed over without a word), a quoted "exp(1)" ended the array, and
    ARGS+=(...) was passed over (TRL's default lr judged in its place: "OK")."""
    config = parse_command_line(script)
    assert config["learning_rate"] == 1e-2 and config["num_generations"] == 8, config
