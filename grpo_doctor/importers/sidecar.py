"""A training config beside a log: the settings a run was made with, when its log holds none.

A CSV export, TensorBoard events or a trainer state carry no config, while the run's folder
often does: Hydra's ``.hydra/config.yaml`` (verl), a saved ``training_args.json`` or
``grpo_config.yaml``, a ``config.yaml``, the ``training_args.bin`` every Hugging Face
checkpoint holds (read without running its pickle: ``pickled_args``). The first such file
found beside the log is read when it holds training settings (two or more of the knobs the
advice reads); a model's ``config.json`` (its architecture) is not one. From a folder
trainers log into (``runs/``, ``tensorboard/``, ``checkpoint-N/``, ``wandb/`` ...) the
search goes up to the run's own folder, never further: a config two folders away may belong
to another run. The log's own config wins where both set a key; a note names the file read.
A PEFT ``adapter_config.json`` found the same way (every checkpoint of a LoRA run holds one)
marks the run as an adapter's training, whose learning rate is judged against an adapter's
ceiling; a model's own ``config.json`` saved there names the dtype the weights trained in.
"""

from __future__ import annotations

import copy
import functools
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from grpo_doctor.errors import FormatError, InputError
from grpo_doctor.importers._common import checkpoint_folders, load_yaml, read_head
from grpo_doctor.importers._config_file import (
    MAX_DEPTH,
    depth,
    named_config,
    with_base_config,
)
from grpo_doctor.importers._records import flatten
from grpo_doctor.importers.interpolation import resolve_interpolations
from grpo_doctor.store import Run

#: Where trainers and launchers save a run's settings, most specific first.
NAMES = (".hydra/config.yaml", "training_args.json", "training_args.bin", "grpo_config.yaml",
         "grpo_config.yml", "grpo_config.json", "train_config.yaml", "train_config.yml",
         "training_config.yaml", "config.yaml", "config.yml", "args.json", "hparams.yaml",
         "config.json")
#: Last parts of config keys that only a training config holds (a model's config.json has
#: none of them, or at most one: its ``temperature`` of generation).
TRAINING_KEYS = frozenset({
    "learning_rate", "lr", "beta", "kl_coef", "kl_loss_coef", "init_kl_coef", "num_generations",
    "max_grad_norm", "grad_clip", "num_iterations", "ppo_epochs", "epsilon", "epsilon_high",
    "clip_ratio", "clip_ratio_low", "clip_ratio_high", "max_completion_length",
    "response_length", "entropy_coeff", "entropy_coef", "per_device_train_batch_size",
    "gradient_accumulation_steps", "ppo_mini_batch_size", "train_batch_size", "loss_type",
    "loss_agg_mode", "warmup_ratio", "lr_scheduler_type",
    # OpenRLHF's flags and NeMo-RL's keys (a NeMo config with ``max_grad_norm: null`` had
    # held one knob this list knew, and was dropped whole).
    "actor_learning_rate", "n_samples_per_prompt", "generate_max_len", "eps_clip", "max_norm",
    "entropy_loss_coef", "use_kl_loss", "num_generations_per_prompt",
    "reference_policy_kl_penalty", "ratio_clip_min", "ratio_clip_max", "max_new_tokens",
    "max_total_sequence_length", "num_prompts_per_step",
    # Open-Instruct's, AReaL's, Oat's, Axolotl's and prime-rl's (c79)
    "num_samples_per_prompt_rollout", "kl_ctl", "kl_beta", "rl_beta", "generate_max_length",
    "max_completion_tokens", "clip_higher", "eps_clip_higher",
})
#: Top-level keys of a model's own config (Hugging Face ``config.json``): not the run's.
_MODEL_KEYS = frozenset({"architectures", "model_type"})
#: Folders trainers log into below the run's folder: the search goes up past them.
_LOG_FOLDER = re.compile(
    r"^(runs|tensorboard|tensorboard_logs?|tb|tb_logs?|logs?|checkpoint-\d+|files|wandb"
    r"|(offline-)?run-.+)$")
#: The config keys the recipe reads each of its settings from, in its order
#: (``recipe.SETTINGS``' names: importers sit below the recipe and cannot import it; a test
#: keeps the two equal). The note names the settings a file supplied by them.
RECIPE_NAMES: tuple[tuple[str, ...], ...] = (
    ("actor_rollout_ref.actor.optim.lr", "policy.optimizer.kwargs.lr", "actor_learning_rate",
     "learning_rate", "lr", "optim.lr", "actor_lr"),
    ("rllm.algorithm.kl_beta", "actor_rollout_ref.actor.kl_loss_coef",
     "algorithm.kl_ctrl.kl_coef", "loss_fn.reference_policy_kl_penalty", "init_kl_coef",
     "algo.kl.init_coef", "kl_coef", "kl_loss_coef", "kl_ctl", "kl_beta", "beta", "rl_beta",
     "use_kl_loss", "disable_kl"),
    ("rllm.rollout.n", "actor_rollout_ref.rollout.n", "worker.rollout.n", "gconfig.n_samples",
     "grpo.num_generations_per_prompt", "num_generations", "n_samples_per_prompt",
     "num_samples_per_prompt_rollout", "rollout_n", "group_size", "num_return_sequences_in_group",
     "n_samples", "num_samples", "rollouts_per_example"),
    ("generation_kwargs.temperature", "actor_rollout_ref.rollout.temperature",
     "generation.temperature", "temperature"),
    ("generation_kwargs.top_p", "actor_rollout_ref.rollout.top_p", "generation.top_p",
     "rollout.top_p", "top_p"),
    ("generation_kwargs.top_k", "actor_rollout_ref.rollout.top_k", "generation.top_k",
     "rollout.top_k", "top_k"),
    ("generation_kwargs.min_p", "actor_rollout_ref.rollout.min_p", "generation.min_p",
     "rollout.min_p", "min_p"),
    ("generation_kwargs.epsilon_cutoff", "generation.epsilon_cutoff", "epsilon_cutoff"),
    ("generation_kwargs.eta_cutoff", "generation.eta_cutoff", "eta_cutoff"),
    ("generation_kwargs.typical_p", "generation.typical_p", "typical_p"),
    ("generation_kwargs.num_beams", "num_beams"),
    ("top_entropy_quantile",),
    ("generation_kwargs.repetition_penalty", "actor_rollout_ref.rollout.repetition_penalty",
     "generation.repetition_penalty", "rollout.repetition_penalty", "repetition_penalty"),
    ("generation_kwargs.do_sample", "actor_rollout_ref.rollout.do_sample"),
    ("generation_kwargs.min_new_tokens", "min_new_tokens"),
    ("generation_kwargs.no_repeat_ngram_size", "no_repeat_ngram_size"),
    ("generation_kwargs.suppress_tokens", "generation_kwargs.bad_words_ids",
     "generation_kwargs.begin_suppress_tokens", "suppress_tokens", "bad_words_ids",
     "begin_suppress_tokens"),
    ("generation_kwargs.exponential_decay_length_penalty", "exponential_decay_length_penalty"),
    ("actor_rollout_ref.actor.entropy_coeff", "entropy_coeff", "entropy_coef", "entropy_loss_coef"),
    ("actor_rollout_ref.actor.clip_ratio_low", "actor_rollout_ref.actor.clip_ratio",
     "loss_fn.ratio_clip_min", "clip_ratio_low", "eps_clip_low", "eps_clip", "epsilon",
     "clip_ratio", "cliprange", "clip_range", "clip_low"),
    ("actor_rollout_ref.actor.clip_ratio_high", "epsilon_high", "clip_ratio_high", "eps_clip_high",
     "eps_clip_higher", "clip_higher", "loss_fn.ratio_clip_max", "clip_high"),
    ("vespo_k_pos", "vespo_k_neg"),
    ("delta",),
    ("actor_rollout_ref.actor.grad_clip", "max_grad_norm", "grad_clip", "max_norm",
     "policy.max_grad_norm", "clip_grad", "max_norm"),
    ("generation_kwargs.max_new_tokens", "data.max_response_length", "max_completion_length",
     "gconfig.max_new_tokens", "generate_max_len", "generate_max_length", "max_completion_tokens",
     "max_new_tokens", "max_response_length", "max_generate_length",
     "policy.max_total_sequence_length", "actor_rollout_ref.rollout.response_length", "max_tokens",
     "response_length"),
    ("reward_model.overlong_buffer.enable", "reward_model.reward_kwargs.overlong_buffer_cfg.enable",
     "overlong_buffer.enable", "mask_truncated_completions", "overlong_buffer_len",
     "overlong_penalty", "overlong_filtering"),
    ("actor_rollout_ref.agent.mask_observations", "mask_observations",
     "actor_rollout_ref.actor.state_masking", "state_masking", "mask_tool_output",
     "mask_env_tokens"),
    ("algorithm.filter_groups.enable", "filter_groups.enable", "dynamic_sampling",
     "dynamic_filtering", "use_dynamic_sampling", "grpo.use_dynamic_sampling"),
    ("actor_rollout_ref.actor.loss_agg_mode", "loss_agg_mode", "loss_type"),
    ("actor_rollout_ref.actor.ppo_epochs", "ppo_epochs", "max_epochs", "num_iterations",
     "num_ppo_epochs", "update_epochs"),
    ("actor_rollout_ref.actor.optim.eps", "policy.optimizer.kwargs.eps", "optimizer.kwargs.eps",
     "adam_epsilon", "adam_eps", "optim.eps"),
    ("actor_rollout_ref.actor.optim.betas.1", "adam_beta2", "beta2"),
    ("actor_rollout_ref.ref.update_steps", "ref_update_steps", "ref_model_sync_steps",
     "reference_update_steps"),
    ("algorithm.kl_ctrl.type", "kl_ctrl.type", "adaptive_kl", "kl_target", "target_kl",
     "adaptive_kl_ctrl"),
    ("actor_rollout_ref.actor.optim.optimizer", "policy.optimizer.name", "optimizer.name", "optim",
     "optimizer"),
    ("model_config.dtype", "model_config.torch_dtype", "model_init_kwargs.dtype",
     "model_init_kwargs.torch_dtype", "actor_rollout_ref.actor.fsdp_config.param_dtype",
     "actor_rollout_ref.actor.fsdp_config.mixed_precision.param_dtype",
     "actor_rollout_ref.model.dtype", "policy.precision", "torch_dtype", "param_dtype", "dtype",
     "precision"),
    ("attention_dropout", "hidden_dropout", "attn_pdrop", "resid_pdrop", "embd_pdrop",
     "hidden_dropout_prob", "attention_probs_dropout_prob"),
)
_MAX_BYTES = 4 * 1024 * 1024
_MAX_UP = 3


def with_sidecar_config(run: Run) -> Run:
    """``run`` with the settings of a training config beside its log (see the module) that
    its log does not set; ``run`` unchanged when there is none."""
    run = _with_resume_changes(_with_model_dropout(_with_weights_dtype(_with_adapter(run))))
    found = find_training_config(Path(run.source))
    if found is None:
        return run
    path, config = found
    own = run.config or {}
    # A setting the log's own config leaves unset (None: a tracker's params logged at the
    # first launch) does not mask the value the checkpoint saved (trial 82: min_p 0.5 set at
    # a resume, MLflow's params still None from the first launch).
    new = {k: v for k, v in config.items() if k not in own or (own[k] is None and v is not None)}
    if not _training_keys(new) and not any(
            str(k).rsplit(".", 1)[-1] in _RECIPE_KEYS and v is not None for k, v in new.items()):
        return run
    merged = {**config, **{k: v for k, v in own.items() if v is not None or k not in config}}
    named = settings_text(supplied_settings(merged, new))
    note = f"settings read from {_beside(path, run)}, beside the log: {named}"
    return replace(run, config=merged, notes=[*run.notes, note],
                   config_beside={**run.config_beside,
                                  **{k: f"{path.name} beside the log" for k in new}})


#: The last parts of every name a recipe setting is read under (a sampler's min_p among them).
_RECIPE_KEYS = frozenset(name.rsplit(".", 1)[-1] for names in RECIPE_NAMES for name in names)


#: Checkpoints whose saved settings are compared for a resume's changes (the newest ones).
_MAX_CHECKPOINTS = 20


def _with_resume_changes(run: Run) -> Run:
    """``run`` with the settings a resume changed, when its checkpoints' saved settings differ
    (trial 68: beta 0 -> 2.0 and top_p 1.0 -> 0.05 set at a resume, read from the newest
    checkpoint only and never tied to the resume), and a note saying them."""
    if run.changed_at_resume:
        return run
    for folder in _run_folders(Path(run.source)):
        saved = [(n, _flat(c)) for n, p in checkpoint_folders(folder)[-_MAX_CHECKPOINTS:]
                 if (c := _read(p / "training_args.bin")) is not None]
        if len(saved) < 2:
            continue
        first_step, first = saved[0]
        changed: dict[str, tuple[Any, Any, int]] = {}
        for n, config in saved[1:]:
            for names in RECIPE_NAMES:
                key = next((k for k in names if k in first or k in config), None)
                if key is None or key in changed:
                    continue
                before, after = first.get(key), config.get(key)
                if before != after:
                    changed[key] = (before, after, n)
        if not changed:
            return run
        said = ", ".join(f"{k} {before} -> {after} (from checkpoint-{n})"
                         for k, (before, after, n) in changed.items())
        note = (f"settings changed when the run was resumed (the checkpoints' "
                f"training_args.bin from checkpoint-{first_step} on): {said}")
        resumed = run.resumed_at
        if not resumed:
            # The resume began after the last checkpoint saved with the old settings: the
            # first step logged after it (a trainer state carries no launch boundary).
            first_new = min(n for _, _, n in changed.values())
            last_old = max((n for n, _ in saved if n < first_new), default=None)
            after = run.steps[run.steps > last_old] if last_old is not None else []
            resumed = (int(after[0]),) if len(after) else ()
        # The latest launch's settings are in force after the resume: a value the log itself
        # printed at its first launch does not stand for them (trial 67: lr 1e-4 echoed at
        # launch 1 had hidden the 3e-3 set at the resume).
        config = {**(run.config or {}), **{k: after for k, (before, after, _) in
                                           changed.items()
                                           if (run.config or {}).get(k) == before}}
        return replace(run, changed_at_resume=changed, resumed_at=resumed, config=config,
                       notes=[*run.notes, note])
    return run


def _beside(path: Path, run: Run) -> str:
    """``path`` as a note shows it: from the log's folder when it lies under it (the run's
    header names that folder already; a full path twice had cost a healthy report two
    lines), whole otherwise."""
    source = Path(run.source)
    folder = source if source.is_dir() else source.parent
    try:
        return path.relative_to(folder).as_posix()
    except ValueError:
        return str(path)


def _with_adapter(run: Run) -> Run:
    """``run`` marked as a LoRA adapter's training (``use_peft``) when a PEFT adapter config
    lies beside its log and its own config does not say."""
    own = _flat(run.config or {})
    if any(k.rsplit(".", 1)[-1] in ("use_peft", "lora_r", "lora_rank") or k == "peft_config.r"
           for k in own):
        return run
    found = find_adapter(Path(run.source))
    if found is None:
        return run
    path, rank = found
    rank_text = f" of rank {rank}" if rank else ""
    note = (f"a LoRA adapter{rank_text} ({_beside(path, run)} beside the log): judged against "
            "an adapter's lr")
    return replace(run, config={**(run.config or {}), "use_peft": True},
                   notes=[*run.notes, note])


#: Where a model's own config names the dtype of its weights: save_pretrained writes the
#: dtype the parameters had, so a checkpoint's says what the run trained in (fp32 master
#: weights under mixed precision save as float32; pure fp16 weights as float16).
_WEIGHTS_DTYPE = ("torch_dtype", "dtype")


def _with_weights_dtype(run: Run) -> Run:
    """``run`` with the dtype of the weights its checkpoint saved (a Hugging Face
    ``config.json`` beside the log), when its config names none and it trained no adapter
    (an adapter's checkpoint holds no model config; a base model's dtype says nothing of
    the adapter's)."""
    own = _flat(run.config or {})
    if any(k.rsplit(".", 1)[-1] in (*_WEIGHTS_DTYPE, "fp16", "bf16", "use_peft") for k in own):
        return run
    for path, loaded in _json_files(Path(run.source), "config.json"):
        if not _MODEL_KEYS & set(loaded):
            continue
        dtype = next((loaded[k] for k in _WEIGHTS_DTYPE if isinstance(loaded.get(k), str)),
                     None)
        if dtype is None:
            return run
        note = f"the weights were saved as {dtype} ({path}, the model's own config)"
        return replace(run, config={**(run.config or {}), "torch_dtype": dtype},
                       notes=[*run.notes, note])
    return run


#: A model config's dropout probabilities (recipe.DROPOUT_KEYS: importers sit below it).
_DROPOUT = RECIPE_NAMES[-1]


def _with_model_dropout(run: Run) -> Run:
    """``run`` with the largest dropout probability its model's saved ``config.json`` sets
    above 0 (``attention_dropout: 0.3``), when its config names none: whether the trainer
    turned it off (TRL's ``disable_dropout``) the recipe judges."""
    own = _flat(run.config or {})
    if any(k.rsplit(".", 1)[-1] in _DROPOUT for k in own):
        return run
    for path, loaded in _json_files(Path(run.source), "config.json"):
        if not _MODEL_KEYS & set(loaded):
            continue
        on = [(k, float(loaded[k])) for k in _DROPOUT
              if isinstance(loaded.get(k), (int, float)) and not isinstance(loaded[k], bool)
              and 0 < float(loaded[k]) <= 1]
        if not on:
            return run
        key, value = max(on, key=lambda kv: kv[1])
        note = f"the model's {key} is {value:g} ({path}, the model's own config)"
        return replace(run, config={**(run.config or {}), key: value},
                       notes=[*run.notes, note])
    return run


def supplied_settings(merged: Mapping[str, Any], new: Mapping[str, Any]) -> list[str]:
    """The settings the advice reads from the file, as the file names them: each recipe knob
    whose value comes from ``new`` (``actor_rollout_ref.actor.optim.lr``, not the section
    ``actor_rollout_ref`` that holds it; temperature too, not only the knobs that made it a
    training config), found as ``recipe.lookup`` finds it (the first of its names present).
    A file that supplies none of them: the training keys it adds."""
    flat = _flat(merged)
    names = set()
    # TRL reads ref_model_sync_steps only under sync_ref_model: with it off the interval is
    # no setting the advice reads (recipe._sync_in_force).
    sync_off = any(k.rsplit(".", 1)[-1] == "sync_ref_model" and v is False
                   for k, v in flat.items())
    for setting in RECIPE_NAMES:
        if sync_off and "ref_model_sync_steps" in setting:
            continue
        key = next((k for name in setting for k, v in flat.items()
                    if (k == name or k.endswith("." + name)) and v is not None and v != ""),
                   None)
        if key is not None and key.split(".", 1)[0] in new:
            names.add(key)
    if not names:
        names = {key for key, value in _flat(new).items()
                 if value is not None and key.rsplit(".", 1)[-1] in TRAINING_KEYS}
    return sorted(names)


def settings_text(names: Sequence[str]) -> str:
    """``names`` in a line a report can afford: keys that share their section said once
    ("actor_rollout_ref.rollout.{n, temperature, top_p}"), each section in sorted order; a verl
    config's fifteen dotted keys had run to ten lines of a healthy report."""
    by_section: dict[str, list[str]] = {}
    for name in sorted(names):
        section, _, last = name.rpartition(".")
        by_section.setdefault(section, []).append(last)
    return ", ".join(
        (f"{section}.{{{', '.join(lasts)}}}" if len(lasts) > 1 else f"{section}.{lasts[0]}")
        if section else ", ".join(lasts) for section, lasts in by_section.items())


def _flat(config: Mapping[str, Any]) -> dict[str, Any]:
    """``config`` flattened with dots, a W&B ``{"value": ...}`` wrapper unwrapped (as
    ``recipe.flat_config``)."""
    out = flatten(config, ".")
    return {(k[:-6] if k.endswith(".value") and k[:-6] not in out else k): v
            for k, v in out.items()}


def _run_folders(log: Path) -> list[Path]:
    """The folders searched for files of ``log``'s run: its own, then up past the folders
    trainers log into, to the run's own folder and never further."""
    try:
        folder = log if log.is_dir() else log.parent
        if not folder.is_dir():
            return []
    except OSError:
        return []
    folders = []
    for _ in range(_MAX_UP + 1):
        folders.append(folder)
        if not _LOG_FOLDER.match(folder.name) and not _LOG_FOLDER.match(folder.parent.name):
            break  # the run's own folder: what lies above it is not this run's
        if _holds_several_logs(folder):
            break  # a folder of runs' logs (logs/a.csv, logs/b.csv): its parent is no one run's
        folder = folder.parent
    return folders


#: Exports that each hold one run's metrics: two or more in a folder make it a folder of runs
#: (c79: a scratch_lr_sweep.sh beside logs/ was read as the config of every log in it).
_RUN_EXPORTS = frozenset({".csv", ".tsv", ".parquet", ".jsonl"})
#: A JSONL a run's own folder holds that is no run's metrics: its sampled completions, its
#: evaluations (h117: a completions.jsonl beside a CSV had made a folder of runs; h118: with
#: JSONL not counted at all, logs/a.jsonl and logs/b.jsonl took a scratch script's settings).
_NOT_METRICS = re.compile(r"complet|sample|rollout|generat|output|predict|eval|trajector|"
                          r"response|answer|prompt", re.IGNORECASE)


def _holds_several_logs(folder: Path) -> bool:
    """Whether ``folder`` holds the logs of two runs or more: exports of two names (one run
    logged as metrics.csv and metrics.jsonl is one run; h119)."""
    try:
        stems: set[str] = set()
        for i, f in enumerate(folder.iterdir()):
            if i >= 200:
                break
            suffix = f.suffix.lower()
            if suffix in _RUN_EXPORTS and not (suffix == ".jsonl" and _NOT_METRICS.search(f.stem)):
                stems.add(f.stem)
                if len(stems) >= 2:
                    return True
    except OSError:
        return False
    return False


def _saved_in(folder: Path) -> list[Path]:
    """``folder``, then its latest ``checkpoint-N/``: a Trainer saves its settings
    (``training_args.bin``), the model's config and a PEFT adapter's there, not beside the
    console capture or the ``runs/`` events in the output folder."""
    saved = checkpoint_folders(folder)
    return [folder, saved[-1][1]] if saved else [folder]


def find_training_config(log: Path) -> tuple[Path, dict[str, Any]] | None:
    """The first training config beside ``log`` (a file or a run's folder, or that folder's
    latest ``checkpoint-N/``) and its settings; None when there is none (or ``log`` is not a
    local path). A saved config comes first; else the launch script or the console capture
    beside the log, whose settings are in words."""
    for folder in _run_folders(log):
        found = _captured(folder, log)
        if found is not None and _names_a_config(found[0]):
            # A launch naming its config (``trl grpo --config config.yaml --num_generations
            # 2``): the file under the launch's flags, never the file alone (a config.yaml
            # had been read as saved, the launch's flags lost; h119).
            return found
        for where in _saved_in(folder):
            for name in NAMES:
                config = _read(where / name)
                if config is not None:
                    return where / name, config
        if found is not None:
            return found
    return None


def _names_a_config(path: Path) -> bool:
    """Whether ``path`` is a launch script whose flags name a config file beside it."""
    if path.suffix.lower() not in _SCRIPTS:
        return False
    try:
        st = path.stat()
    except OSError:
        return False
    settings, _ = _settings_once(str(path), st.st_mtime_ns, st.st_size, True)
    named = named_config(settings or {})
    try:
        return named is not None and (path.parent / named).is_file()
    except OSError:
        return False


#: A launch script, and what a launch printed to the terminal (captured with ``tee`` or a
#: scheduler's ``.out``), beside the run's logs: OpenRLHF saves no config file, only these.
_SCRIPTS = frozenset({".sh", ".bash"})
_CAPTURES = frozenset({".log", ".out", ".txt"})
#: Of a capture, only its head is read: the launch and its arguments are printed first.
CAPTURE_HEAD = 1 << 20
#: Files of a folder looked at for a launch (a folder of thousands of shards is not read).
_MAX_FILES = 50


def _captured(folder: Path, log: Path) -> tuple[Path, dict[str, Any]] | None:
    """The settings of the launch script or console capture in ``folder`` (not ``log``
    itself), scripts first; None when none holds two training knobs or more.

    A capture that holds metric lines is a run's own log: it speaks for ``log`` only when it
    is the one run's console beside a log of another format (TRL's ``console.log`` beside
    its events). Beside a console, or with two such captures in the folder, it is another
    run's (a plain log had taken a sibling run's ``temperature=3.0``; helper-84)."""
    try:
        files = sorted(f for f in folder.iterdir()
                       if f.suffix.lower() in _SCRIPTS | _CAPTURES and f.is_file())[:_MAX_FILES]
        mine = log.resolve()
    except OSError:
        return None
    found: list[tuple[Path, dict[str, Any] | None, bool]] = []
    for path in sorted(files, key=lambda f: f.suffix.lower() not in _SCRIPTS):
        script = path.suffix.lower() in _SCRIPTS
        try:
            if path.resolve() == mine:
                continue
            st = path.stat()
        except (OSError, RuntimeError):
            continue
        if script and st.st_size > _MAX_BYTES:
            continue  # (a script that large is no launch script)
        settings, is_log = _settings_once(str(path), st.st_mtime_ns, st.st_size, script)
        found.append((path, _launch_settings(path, settings, script), is_log))
    runs_beside = sum(is_log for _, _, is_log in found)
    own_console = _is_capture(log) or runs_beside > 1
    for path, config, is_log in found:
        if config is not None and not (is_log and own_console):
            return path, copy.deepcopy(config)  # the cached one is never handed out
    return None


def _is_capture(log: Path) -> bool:
    try:
        return log.suffix.lower() in _CAPTURES and log.is_file()
    except OSError:
        return False


@functools.lru_cache(maxsize=256)
def _settings_once(path: str, changed: int, size: int,
                   script: bool) -> tuple[dict[str, Any] | None, bool]:
    """The training settings a launch script or a console capture holds (or None), and
    whether it holds metric lines (a run's own log), of a local file as of its modification
    time and size: read once, however many logs beside it ask (an audit of a flat folder of
    N logs had read the head of every neighbour N times; helper-84)."""
    from grpo_doctor.importers.command_line import parse_command_line
    from grpo_doctor.importers.console_text import holds_metric_lines, printed_settings

    try:
        text = read_head(Path(path), CAPTURE_HEAD).decode("utf-8", errors="replace")
    except (OSError, InputError):
        return None, False
    if "\0" in text:
        return None, False  # binary
    settings = parse_command_line(text) if script else printed_settings(text)
    return settings, not script and holds_metric_lines(text)


def _launch_settings(path: Path, settings: dict[str, Any] | None,
                     script: bool) -> dict[str, Any] | None:
    """The training config a launch's or a capture's settings make. A script's flags go over
    the config file it names beside it (``trl grpo --config grpo.yaml``), read afresh each
    time (the file may change without the script): the flags alone had held fewer than two
    knobs and been passed over, the file's beta and lr unread (h117)."""
    if script and settings:
        settings = with_base_config(copy.deepcopy(settings), (path.parent,))
    config = _as_training_config(settings)
    return resolve_interpolations(config) if config is not None else None


#: PEFT saves it in every checkpoint of an adapter's training (``checkpoint-N/``, beside the
#: trainer state): the run trained a LoRA adapter, whose learning rate is ~10x a full
#: fine-tune's.
ADAPTER_CONFIG = "adapter_config.json"


def find_adapter(log: Path) -> tuple[Path, int | None] | None:
    """The PEFT adapter config beside ``log`` and its rank, or None."""
    for path, loaded in _json_files(log, ADAPTER_CONFIG):
        if "peft_type" in loaded:
            r = loaded.get("r")
            return path, int(r) if isinstance(r, int | float) and r > 0 else None
    return None


def _json_files(log: Path, name: str) -> list[tuple[Path, dict[str, Any]]]:
    """Each JSON object named ``name`` in ``log``'s run folders (see ``_run_folders``),
    nearest first; unreadable or oversized files are passed over."""
    found = []
    for folder in (where for f in _run_folders(log) for where in _saved_in(f)):
        path = folder / name
        try:
            if not path.is_file() or path.stat().st_size > _MAX_BYTES:
                continue
            loaded = json.loads(path.read_text(encoding="utf-8", errors="replace"))
        except (OSError, ValueError, RecursionError):
            continue
        if isinstance(loaded, dict) and depth(loaded) <= MAX_DEPTH:
            found.append((path, loaded))
    return found


def _read(path: Path) -> dict[str, Any] | None:
    try:
        if not path.is_file() or path.stat().st_size > _MAX_BYTES:
            return None
        if path.suffix == ".bin":
            from grpo_doctor.importers.pickled_args import read_training_args

            return _as_training_config(read_training_args(path))
        text = path.read_text(encoding="utf-8", errors="replace")
        loaded = json.loads(text) if path.suffix == ".json" else load_yaml(text, path)
    except (OSError, ValueError, InputError, FormatError, RecursionError):
        return None  # not a config this run can use: the log is read as if it were absent
    if depth(loaded) > MAX_DEPTH:
        return None  # (flattened recursively downstream: 900 levels had crashed; h118)
    config = _as_training_config(loaded)
    return resolve_interpolations(config) if config is not None else None


def _as_training_config(loaded: Any) -> dict[str, Any] | None:
    """``loaded`` when it holds training settings (two knobs or more, and no model's)."""
    if not isinstance(loaded, dict) or _MODEL_KEYS & set(loaded):
        return None
    return {str(k): v for k, v in loaded.items()} if len(_training_keys(loaded)) >= 2 else None


def _training_keys(config: Mapping[str, Any] | None) -> set[str]:
    """The training knobs ``config`` (nested or dotted) sets, by their last key part."""
    found: set[str] = set()
    for key, value in (config or {}).items():
        if isinstance(value, Mapping):
            found |= _training_keys(value)
        elif value is not None and str(key).rsplit(".", 1)[-1] in TRAINING_KEYS:
            found.add(str(key).rsplit(".", 1)[-1])
    return found
