"""Remedies that name the concrete knob and value, using the run's own config when known.

A knob is found in ``Run.config`` (flattened with dots) by the names the frameworks use, or,
for the learning rate and KL coefficient, from the last logged value of the metric.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from grpo_doctor.lazy import numpy as np
from grpo_doctor.metrics import Metric
from grpo_doctor.store import Run
from grpo_doctor.text import knob_value


class Remedy(str):
    """A remedy's text that knows what it does: the knob it turns and by how much, or the step
    it rolls back to, so that a plan can merge the remedies of several findings (one
    learning-rate change and one roll-back, not three of each)."""

    knob: Knob | None
    factor: float | None
    rollback_step: int | None

    def __new__(cls, text: str, knob: Knob | None = None, factor: float | None = None,
                rollback_step: int | None = None) -> Remedy:
        obj = super().__new__(cls, text)
        obj.knob = knob
        obj.factor = factor
        obj.rollback_step = rollback_step
        return obj

    def __reduce__(self):  # pickles (audit workers, watch) keep what it does
        return (Remedy, (str(self), self.knob, self.factor, self.rollback_step))


def rollback(step: int, text: str) -> Remedy:
    """A remedy that rolls the run back to a checkpoint from before ``step``."""
    return Remedy(text, rollback_step=step)


@dataclass(frozen=True)
class Knob:
    label: str  # what the remedy calls it
    names: tuple[str, ...]  # config keys (full dotted keys or their last parts)
    metric: str | None = None  # a logged metric holding the current value
    # Which logged value stands for the setting: the last one (an adaptive coefficient), or
    # the largest (a learning rate whose schedule decays it to ~0 by the end).
    reduce: str = "last"
    #: Read from the rollout's own sections only, never an evaluation's, a judge's or a
    #: reward model's (an [eval] rollouts_per_example = 1 before the [orchestrator]'s 16 had
    #: read "groups of 1"; h119).
    rollout: bool = False


LEARNING_RATE = Knob(
    "learning_rate",
    ("actor_rollout_ref.actor.optim.lr", "policy.optimizer.kwargs.lr", "actor_learning_rate",
     "learning_rate", "lr", "optim.lr", "actor_lr"),
    Metric.LEARNING_RATE.value,
    reduce="max",
)
KL_COEF = Knob(
    "KL coefficient (beta)",
    # rLLM's own key wins over the verl one it sets (its sync_config: rllm's CLI first; c79)
    ("rllm.algorithm.kl_beta", "actor_rollout_ref.actor.kl_loss_coef",
     "algorithm.kl_ctrl.kl_coef", "loss_fn.reference_policy_kl_penalty", "init_kl_coef",
     # OpenRLHF's dotted flags (2026: --algo.kl.init_coef for --init_kl_coef; c77)
     "algo.kl.init_coef", "kl_coef", "kl_loss_coef",
     # AReaL's actor.kl_ctl, rLLM's kl_beta, Axolotl's rl_beta beside its trl.beta (c79)
     "kl_ctl", "kl_beta", "beta", "rl_beta"),
    Metric.KL_COEF.value,
)
TEMPERATURE = Knob(
    "rollout temperature",
    ("generation_kwargs.temperature", "actor_rollout_ref.rollout.temperature",
     "generation.temperature", "temperature"),
)
TOP_P = Knob(
    "top_p", ("generation_kwargs.top_p", "actor_rollout_ref.rollout.top_p", "generation.top_p",
              "rollout.top_p", "top_p"),
)
TOP_K = Knob(
    "top_k", ("generation_kwargs.top_k", "actor_rollout_ref.rollout.top_k", "generation.top_k",
              "rollout.top_k", "top_k"),
)
MIN_P = Knob(
    "min_p", ("actor_rollout_ref.rollout.min_p", "generation.min_p", "rollout.min_p", "min_p"),
)
#: transformers' truncation samplers and beam search, in TRL's generation_kwargs (c.f. the
#: recipe's settings of the same names).
ETA_CUTOFF = Knob("eta_cutoff", ("generation_kwargs.eta_cutoff", "generation.eta_cutoff",
                                 "eta_cutoff"))
EPSILON_CUTOFF = Knob("epsilon_cutoff", ("generation_kwargs.epsilon_cutoff",
                                         "generation.epsilon_cutoff", "epsilon_cutoff"))
TYPICAL_P = Knob("typical_p", ("generation_kwargs.typical_p", "generation.typical_p",
                               "typical_p"))
NUM_BEAMS = Knob("num_beams", ("generation_kwargs.num_beams", "num_beams"))
GROUP_SIZE = Knob(
    "group size G",
    # rLLM's own key wins over the verl one it sets; AReaL's source before the copies its
    # config interpolates from it (actor.reward_norm.group_size: ${gconfig.n_samples}; c79)
    ("rllm.rollout.n", "actor_rollout_ref.rollout.n", "worker.rollout.n", "gconfig.n_samples",
     "grpo.num_generations_per_prompt", "num_generations", "n_samples_per_prompt",
     # Open-Instruct's (c79)
     "num_samples_per_prompt_rollout", "rollout_n", "group_size",
     # ROLL's (its default is 1; c77)
     "num_return_sequences_in_group",
     # Oat's --num_samples; AReaL's n_samples under another section (c79)
     "n_samples", "num_samples",
     # prime-rl's orchestrator (its group_size's newer name; h117)
     "rollouts_per_example"),
    rollout=True,
)
ENTROPY_COEF = Knob(
    "entropy coefficient",
    ("actor_rollout_ref.actor.entropy_coeff", "entropy_coeff", "entropy_coef"),
    # TRL (1.16+) logs it on every row: a console capture with no config beside it says it.
    Metric.ENTROPY_COEF.value,
)
CLIP_HIGH = Knob(
    "clip_ratio_high (epsilon_high)",
    ("actor_rollout_ref.actor.clip_ratio_high", "epsilon_high", "clip_ratio_high",
     # AReaL's and Open-Instruct's spellings (c79)
     "eps_clip_high", "eps_clip_higher", "clip_higher"),
)
CLIP_LOW = Knob(
    "clip_ratio (epsilon)",
    ("actor_rollout_ref.actor.clip_ratio_low", "actor_rollout_ref.actor.clip_ratio",
     "loss_fn.ratio_clip_min", "clip_ratio_low", "eps_clip_low", "eps_clip", "epsilon",
     "clip_ratio", "cliprange", "clip_range", "clip_low"),
)
GRAD_CLIP = Knob(
    "max_grad_norm",
    ("actor_rollout_ref.actor.grad_clip", "max_grad_norm", "grad_clip", "max_norm",
     "policy.max_grad_norm"),
)
MAX_LENGTH = Knob(
    "max response length",
    # TRL's generation_kwargs override the trainer's own settings (trial 67: max_new_tokens 6
    # under max_completion_length 12 had read "max_completion_length 12 -> 48").
    ("generation_kwargs.max_new_tokens", "data.max_response_length", "max_completion_length",
     # AReaL's source before its interpolated copy (actor.max_new_tokens); Oat's; prime-rl's
     # sampling.max_completion_tokens (c79)
     "gconfig.max_new_tokens", "generate_max_len", "generate_max_length",
     "max_completion_tokens", "max_new_tokens", "max_response_length",
     # SkyRL's generator.sampling_params (c77)
     "max_generate_length",
     # NeMo-RL's prompt and completion together: a bound, read only when no budget is set
     # (beside ``policy.generation.max_new_tokens: 5`` it had read 24).
     "policy.max_total_sequence_length"),
)


def flatten(config: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in config.items():
        full = f"{prefix}{key}"
        if isinstance(value, Mapping):
            out.update(flatten(value, full + "."))
        else:
            out[full] = value
    return out


def keyed(flat: Mapping[str, Any], name: str) -> Any:
    """The value of the first key of a flattened config whose last part is ``name``, or
    None."""
    return next((v for k, v in flat.items() if k.rsplit(".", 1)[-1] == name), None)


def as_flag(value: Any) -> bool | None:
    """A config's on/off value as a bool (True, "yes", 1, "adaptive"; False, "off", 0,
    "none", "fixed"), None when it is neither."""
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float)):
        return None if value != value else value != 0  # (NaN: neither; h103)
    text = str(value).strip().lower()
    if text in ("true", "yes", "on", "1", "adaptive"):
        return True
    if text in ("false", "no", "off", "0", "none", "null", "fixed"):
        return False
    return None


def kl_switched_off(run: Run) -> bool:
    """verl's KL switches both off (``use_kl_loss`` False, ``use_kl_in_reward`` False or
    unset): no KL term, whatever ``kl_loss_coef`` says (verl's default 0.001 stays in the
    config)."""
    flat = flatten(run.config) if run.config else {}
    loss, reward = keyed(flat, "use_kl_loss"), keyed(flat, "use_kl_in_reward")
    return loss is not None and as_flag(loss) is False and (
        reward is None or as_flag(reward) is False)


def _as_number(value: Any) -> float | None:
    try:
        x = float(value)
    except (TypeError, ValueError):
        return None
    return x if np.isfinite(x) else None


#: Sections whose sampler is not the rollout's: a reference's, an evaluation's, a judge's, a
#: grader's or verifier's, a reward model's, a critic's (recipe reads its samplers past them).
NOT_ROLLOUT = re.compile(r"^(?:ref|val|val_.*|eval.*|validation.*|test_.*|judge.*|teacher.*|"
                         r"reward_model.*|critic.*|grader.*|verifier.*|rm|reward|.*_eval|"
                         r".*_judge|.*_grader|.*_verifier|value_model.*|value_head|prm|prm_.*|"
                         r".*_prm)$")


def rollout_side(flat: Mapping[str, Any], also: re.Pattern[str] | None = None
                 ) -> dict[str, Any]:
    """``flat`` without the keys under a section whose sampler is not the rollout's (nor,
    given ``also``, under a section it matches)."""
    return {k: v for k, v in flat.items()
            if not any(NOT_ROLLOUT.match(part) or (also is not None and also.match(part))
                       for part in k.split(".")[:-1])}


def current(run: Run, knob: Knob, rollout: bool = False) -> tuple[float | None, str | None]:
    """The knob's current value and where it came from (a config key or a metric); with
    ``rollout``, never from a section whose sampler is not the rollout's."""
    flat = flatten(run.config) if run.config else {}
    if rollout or knob.rollout:
        flat = rollout_side(flat)
    for name in knob.names:
        for key, value in flat.items():
            if key == name or key.endswith("." + name):
                x = _as_number(value)
                if x is not None:
                    return x, key
    if knob.metric and knob.metric in run.frame.columns:
        steps, col = run.finite_series(knob.metric)
        if len(col):
            value = schedule_peak(steps, col) if knob.reduce == "max" else float(col[-1])
            return value, f"logged {knob.metric}"
    return None, None


def starts_with_run(steps: np.ndarray) -> bool:
    """A log whose first line is within its first logging interval (step 10 of a log every
    10 steps), not a resumed run's that starts later."""
    return len(steps) >= 2 and steps[0] - 1 <= steps[1] - steps[0]


def schedule_peak(steps: np.ndarray, values: np.ndarray) -> float:
    """The peak of a logged schedule (the learning rate a config sets): its largest logged
    value; or, when the log begins with a linear decay already under way (a log every 10
    steps whose first line is step 10), the line through its first points taken back to
    step 1. TRL's default schedule decays linearly from the first update, so the first log
    of such a run shows 7.9e-6 of a configured 1e-5; halving 7.9e-6 would be advice about a
    value the user never set. A linear warm-up into a linear decay, logged every few steps,
    peaks between two logs: the two lines meet at the peak (9.8e-5 logged of a configured
    1e-4: a warm-up of 10 steps, a log every 5). Any other shape (a cosine, steps) keeps the
    largest."""
    top = float(values.max())
    if len(values) < 3 or not starts_with_run(steps):
        return top
    i = int(values.argmax())
    if i == 0:
        if steps[0] <= 1 or not values[1] < values[0] or not _collinear(steps, values, 0):
            return top  # not a line: a cosine, steps, an adaptive rate
        slope = (values[1] - values[0]) / (steps[1] - steps[0])
        return max(top, float(values[0] - slope * (steps[0] - 1)))
    if i < 2 or steps[i] - steps[i - 1] <= 1:  # logged every step: the peak is a log
        return top
    if i + 2 < len(values) and _collinear(steps, values, i):
        # The largest log is on the decay: the warm-up's line through the two logs before it.
        peak = _lines_meet(steps, values, i - 2, i, steps[i - 1], steps[i])
    elif i + 3 < len(values) and _collinear(steps, values, i - 2) and _collinear(
            steps, values, i + 1):
        # The largest log is on the warm-up: the decay's line through the two logs after it.
        peak = _lines_meet(steps, values, i - 1, i + 1, steps[i], steps[i + 1])
    else:
        return top
    # At a log (within rounding) the logged value is the peak.
    return peak if peak is not None and top * (1 + 1e-6) < peak <= 1.25 * top else top


def _lines_meet(steps: np.ndarray, values: np.ndarray, rise: int, fall: int, after: float,
                before: float) -> float | None:
    """Where the line through logs ``rise``, ``rise + 1`` meets the line through ``fall``,
    ``fall + 1``, if it does strictly between steps ``after`` and ``before``."""
    up = (values[rise + 1] - values[rise]) / (steps[rise + 1] - steps[rise])
    down = (values[fall + 1] - values[fall]) / (steps[fall + 1] - steps[fall])
    if not up > 0 > down:
        return None
    x = (values[fall] - down * steps[fall] - values[rise] + up * steps[rise]) / (up - down)
    if not after < x < before:
        return None
    return float(values[fall] + down * (x - steps[fall]))


def _collinear(steps: np.ndarray, values: np.ndarray, i: int) -> bool:
    """The logs at i, i+1 and i+2 lie on one line (within 2% of the first)."""
    slope = (values[i + 1] - values[i]) / (steps[i + 1] - steps[i])
    on_line = values[i] + slope * (steps[i + 2] - steps[i])
    return bool(abs(values[i + 2] - on_line) <= 0.02 * values[i])


def _num(x: float) -> str:
    return knob_value(x)


def scale(run: Run, knob: Knob, factor: float, *, why: str = "", fallback: str = ""
          ) -> Remedy:
    """'learning_rate 2e-06 -> 1e-06 (why)' when the value is known, else 'learning_rate x0.5'."""
    value, origin = current(run, knob)
    tail = f" ({why})" if why else ""
    if value is not None and value != 0:
        return Remedy(f"{_said_as(knob, origin)} {_num(value)} -> {_num(value * factor)}{tail}",
                      knob, factor)
    hint = f"; or {fallback}" if fallback else ""
    return Remedy(f"{knob.label} x{factor:g}{tail}{hint}", knob, factor)


def _said_as(knob: Knob, origin: str | None) -> str:
    """The knob as the user's config names it (verl's ``actor_rollout_ref.actor.optim.lr``),
    where its label is itself a config name (``learning_rate``); else its label."""
    if origin and not origin.startswith("logged ") and knob.label in knob.names:
        return origin
    return knob.label


def set_to(run: Run, knob: Knob, target: str, *, why: str = "", unless_at_least: float | None
           = None, unless_at_most: float | None = None) -> Remedy | None:
    """'rollout temperature 0.7 -> 1.0' (or 'set ... to 1.0'); None when the knob is already
    at the target (within a target range such as "0.2-0.24") or, with ``unless_at_least``
    (``unless_at_most``), at or above (below) that: a remedy never sets a knob to the value
    it has, nor moves it the wrong way (an upper clip of 0.1 "set to 0.2-0.24" for less
    room)."""
    value, _ = current(run, knob)
    tail = f" ({why})" if why else ""
    if value is not None:
        if unless_at_least is not None and value >= unless_at_least:
            return None
        if unless_at_most is not None and value <= unless_at_most:
            return None
        if within(value, target):
            return None
        return Remedy(f"{knob.label} {_num(value)} -> {target}{tail}", knob)
    return Remedy(f"set {knob.label} to {target}{tail}", knob)


def clip_gradients(run: Run, why: str = "clip gradients") -> Remedy | None:
    """Gradient clipping at 1.0 as a remedy, or None when the run already clips at 1.0 or
    tighter (asking for it again would change nothing)."""
    value, _ = current(run, GRAD_CLIP)
    if value is None:
        # Not in the log: TRL, verl and OpenRLHF clip at 1.0 unless told otherwise, so the
        # remedy is a check (it read as a change to make on a TRL run clipping at 1.0).
        return Remedy("check gradients are clipped (max_grad_norm 1.0, the trainers' "
                      "default: the log does not say)", GRAD_CLIP)
    if value <= 0 or value >= 1e3:
        return Remedy(f"{GRAD_CLIP.label} {_num(value)} -> 1.0 (clipping is off: {why})",
                      GRAD_CLIP)
    if value <= 1.0 + 1e-9:
        return None
    return Remedy(f"{GRAD_CLIP.label} {_num(value)} -> 1.0 ({why})", GRAD_CLIP)


def present(*remedies: str | None) -> tuple[str, ...]:
    """The remedies that apply (a helper returns None for a change the run already has)."""
    return tuple(r for r in remedies if r)


def within(value: float, target: str) -> bool:
    """Whether ``value`` already is ``target``: a number ("1.0") or a range ("0.001-0.01")."""
    low, sep, high = target.partition("-") if not target.startswith("-") else (target, "", "")
    try:
        lo = float(low)
        hi = float(high) if sep else lo
    except ValueError:
        return False
    tol = 1e-9 * max(abs(lo), abs(hi), 1e-12)
    return lo - tol <= value <= hi + tol


KNOBS = (LEARNING_RATE, KL_COEF, TEMPERATURE, GROUP_SIZE, ENTROPY_COEF, CLIP_HIGH, GRAD_CLIP,
         MAX_LENGTH)

#: The knobs under one name whatever the framework called them (compare's config diff, the
#: fleet table's ``config_*`` columns).
BY_NAME: dict[str, Knob] = {
    "learning_rate": LEARNING_RATE, "kl_coef": KL_COEF, "temperature": TEMPERATURE,
    "group_size": GROUP_SIZE, "entropy_coef": ENTROPY_COEF, "clip_ratio_high": CLIP_HIGH,
    "max_grad_norm": GRAD_CLIP, "max_response_length": MAX_LENGTH,
}


def configured_value(run: Run, knob: Knob) -> tuple[Any, str | None]:
    """A knob's value in ``run`` and where it came from: its config, else the logged metric's
    peak (a schedule's configured value), else (None, None)."""
    value, origin = current(run, knob)
    if origin is not None and origin.startswith("logged") and knob.metric:
        _, logged = run.finite_series(knob.metric)
        if len(logged):  # a schedule's peak is its configured value; its last is not
            return float(logged.max()), f"logged {knob.metric} (peak)"
    return value, origin


def sampling_cut(run: Run) -> tuple[str, float, Remedy | str] | None:
    """(setting, value, its fix) of a rollout sampler cut well below the whole distribution
    the config names: beam search, eta_cutoff 0.02 or more, epsilon_cutoff 0.01 or more,
    typical_p or top_p 0.8 or less, top_k 1-20, min_p 0.2 or more, a temperature below 0.7.
    Groups all
    correct under it are the cut's score: the policy's spread is hidden. None otherwise."""
    cuts: tuple[tuple[Knob, Callable[[float], bool], str], ...] = (
        # Beam search and the truncation samplers far past their ranges first: one of them
        # beside a lesser cut is the bigger one (trial 79: num_beams 4, eta_cutoff 0.3, every
        # group all-correct while the policy, sampled plainly, was right 31% and 57%).
        (NUM_BEAMS, lambda x: x >= 2, "1"),
        (ETA_CUTOFF, lambda x: x >= 0.02, "0 (off)"),
        (EPSILON_CUTOFF, lambda x: x >= 0.01, "0 (off)"),
        (TYPICAL_P, lambda x: 0 < x <= 0.8, "1.0"),
        (TOP_P, lambda x: 0 < x <= 0.8, "1.0"),
        (TOP_K, lambda x: 0 < x <= 20, "0 (off)"),
        (MIN_P, lambda x: x >= 0.2, "0 (off)"),
        (TEMPERATURE, lambda x: 0 < x < 0.7, "1.0"))
    for knob, bad, fix in cuts:
        value, _ = current(run, knob, rollout=True)  # (not a judge's or an eval's; h117)
        if value is not None and bad(value):
            name = "temperature" if knob is TEMPERATURE else knob.label
            return name, value, set_to(
                run, knob, fix, why="sample from the whole distribution, so a group shows "
                "what the policy still gets wrong") or f"{name} {_num(value)} -> {fix}"
    return None


def sequence_level(flat: Mapping[str, Any]) -> str | None:
    """The setting that makes the importance ratio a sequence's (GSPO): TRL's
    ``importance_sampling_level: sequence``, verl's ``policy_loss.loss_mode: gspo``, as
    "KEY VALUE"; None for token-level ratios or a config that does not say."""
    for key, value in flat.items():
        last = key.rsplit(".", 1)[-1]
        text = str(value).strip().lower()
        if (last == "importance_sampling_level" and text in ("sequence", "sequence_token")) or (
                last == "loss_mode" and text == "gspo"):
            return f"{key} {value}"
    return None
