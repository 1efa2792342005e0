"""The source chapter's setup knowledge: its safe starting recipe (section 8) and, per knob, the
failure modes the chapter links to a value outside it.

One ``Setting`` per knob: the names every framework gives it (TRL's ``GRPOConfig``, verl's
config tree and command line, OpenRLHF's flags, NeMo-RL's YAML, a W&B config, Hugging Face's
``args`` and ``model_config`` text), the recipe's value and range, when a value is *far*
outside (so far that it alone explains the modes linked to it), and the modes each side of the
range risks. A link is *primary* when the chapter (or the mechanism, for the knobs it does not
cover) names the knob as a cause of that mode, and *contributing* when it only makes it
likelier. Every range is a documented default a user can override (``[recipe.<knob>]`` in the
config file: ``low``, ``high``, ``far``).

The chapter's recipe (8.1 and 8.4): learning rate 1e-6, never 5e-6 or more; G 8-16 to start
(16 in the recipe); beta 0.01-0.05; entropy bonus 0.001-0.01; rollout temperature 1.0 (1.0-1.2
as a remedy); clip 0.8 / 1.28 (Clip-Higher); reference update every 5,000 steps; adaptive KL
with target 1.0; overlong shaping and dynamic sampling on; likelihood regularisation 0.001.
Gradient clipping, updates per batch, loss aggregation and precision are not in the chapter:
their recipe is the frameworks' own defaults (``max_grad_norm`` 1.0, one update per batch,
token-level aggregation as DAPO and Dr. GRPO argue, bf16 or fp32 master weights).

A setting outside the recipe is evidence only where a finding the chapter links to it fired:
many healthy runs use a learning rate above 1e-6 (LoRA adapters, small models) or beta 0
(TRL's default). Pure functions of a run's config; no I/O.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from grpo_doctor.lazy import numpy as np
from grpo_doctor.metrics import Metric
from grpo_doctor.rules import knobs
from grpo_doctor.store import MODEL_PARAMS, TRAINABLE_PARAMS
from grpo_doctor.text import knob_value
from grpo_doctor.trends import rolling_median

#: The verdicts a reading can get. "outside" verdicts: high, low, off, unsafe.
OK, HIGH, LOW, OFF, UNSAFE, NOT_SET, UNKNOWN = (
    "ok", "high", "low", "off", "unsafe", "not set", "unknown")
#: A knob the run's algorithm does not use (a group size under PPO's GAE): shown, not judged.
NOT_APPLICABLE = "not applicable"
OUTSIDE = frozenset({HIGH, LOW, OFF, UNSAFE})

#: How many times the LoRA learning rate may exceed a full fine-tune's: the optimum for a LoRA
#: adapter sits about 10x higher (Schulman et al., "LoRA Without Regret", 2025).
LORA_LR_SCALE = 10.0

#: How many times beyond its range a setting merely outside must be to be named as a cause.
CLEARLY_OUTSIDE = 2.0

#: A pseudo-mode: one update that moved the policy too far (a dead run's cause, a KL or
#: gradient-norm blow-up at one step). Knobs that make single updates large link to it.
CATASTROPHIC_UPDATE = "catastrophic_update"


@dataclass(frozen=True)
class Link:
    """A failure mode a value on one side of the recipe risks."""

    mode: str
    primary: bool = True


def _links(primary: Iterable[str] = (), contributing: Iterable[str] = ()) -> tuple[Link, ...]:
    return (tuple(Link(m) for m in primary)
            + tuple(Link(m, primary=False) for m in contributing))


#: A model config's dropout probabilities (Hugging Face names, across architectures).
DROPOUT_KEYS = ("attention_dropout", "hidden_dropout", "attn_pdrop", "resid_pdrop",
                "embd_pdrop", "hidden_dropout_prob", "attention_probs_dropout_prob")

#: verl's switches for its KL coefficients: ``kl_loss_coef`` counts only with
#: ``actor.use_kl_loss``, ``kl_ctrl.*`` only with ``algorithm.use_kl_in_reward``. Both are off
#: by default and the coefficients keep their defaults (0.001) in the saved config, so a
#: config with both off had read "kl_loss_coef 0.001 is below the recipe" for no KL at all.
KL_LOSS_SWITCH = "use_kl_loss"
#: EasyR1's switch, the other way round: ``algorithm.disable_kl: true`` turns every KL off.
KL_DISABLE_SWITCH = "disable_kl"
#: AReaL's ``gconfig.greedy: true``: greedy decoding, ``do_sample`` the other way round.
GREEDY_SWITCH = "greedy"
_KL_REWARD_SWITCH = "use_kl_in_reward"

#: The chapter's starting learning rate as a share of its ceiling (1e-6 of 5e-6).
LR_START_SHARE = 0.2
#: The learning rate's floor: a tenth of the chapter's 1e-6 start (OpenRLHF's 5e-7 and the
#: 3e-7 of some 7B runs are inside; 1e-8 moves a policy nowhere in any run's length).
LR_FLOOR = 1e-7


@dataclass(frozen=True)
class Setting:
    """One knob of the recipe."""

    id: str  # the name reports use (TRL's where it has one)
    names: tuple[str, ...]  # config keys, full dotted or their last parts, first found wins
    recipe: str  # the recipe's value as the chapter gives it
    source: str  # where it comes from: the chapter's section, or the frameworks' default
    low: float | None = None  # the range (None: no bound on that side)
    high: float | None = None
    far: float = 10.0  # a value beyond the range by this factor is far outside
    far_low: float | None = None  # the same below the range, where it differs from ``far``
    #: The range is a scale set by the model (a learning rate): a ceiling a user moves takes
    #: the floor with it, as the chapter's 1e-7 floor is a fiftieth of its 5e-6 ceiling.
    low_follows_high: bool = False
    #: The ceiling is the user's, set for the model ([recipe.KNOB] high): no adapter's x10 on
    #: top of it (a floor set alone leaves the chapter's ceiling, and its x10, in force; h120).
    user_high: bool = False
    risks: Mapping[str, tuple[Link, ...]] = field(default_factory=dict)  # verdict -> links
    why: Mapping[str, str] = field(default_factory=dict)  # verdict -> what the chapter says
    target: str = ""  # what to set it to when outside (a verdict-specific one in ``targets``)
    targets: Mapping[str, str] = field(default_factory=dict)
    metric: str | None = None  # a logged metric holding its value (learning rate, beta)
    kind: str = "number"  # number | flag | choice | dtype | banned (a list: on when not empty)
    off_when_zero: bool = False  # 0 switches the knob off (beta, entropy bonus, clipping)
    off_in_recipe: bool = False  # any value switching it on is outside (the recipe has it off)
    off_above: float | None = None  # a value this large means "off" (max_grad_norm 1e9)
    ok_values: tuple[str, ...] = ()  # a choice's values inside the recipe
    note_only: bool = False  # never a cause: only reported (preflight, notes)
    #: A flag whose off state no recipe has (tool output trained on): off is far outside, a
    #: cause with a warning too.
    off_is_far: bool = False
    #: What a negative value does, for a coefficient whose sign flips its purpose (an entropy
    #: bonus that becomes a penalty): far outside the recipe, not merely "off".
    negative: str = ""

    @property
    def range_text(self) -> str:
        if self.low is not None and self.low == self.high:
            return _num(self.low)  # (one value: "1", not "1-1")
        if self.low is not None and self.high is not None:
            return f"{_num(self.low)}-{_num(self.high)}"
        if self.high is not None:
            return f"below {_num(self.high)}"
        if self.low is not None:
            return f"at least {_num(self.low)}"
        return self.recipe


# --- the recipe ---------------------------------------------------------------------------------

_ENTROPY_COLLAPSE, _ADV, _KL, _LLD = (
    "entropy_collapse", "advantage_collapse", "kl_drift", "likelihood_displacement")

#: A rollout that samples from a cut distribution (top_p, top_k): what it risks, and why.
_SAMPLING_CUT = _links(primary=(_ENTROPY_COLLAPSE,), contributing=(_ADV, "ratio_instability"))
_CUT_WHY = ("groups of near-identical samples, and ratios against log-probs of a distribution "
            "the rollout did not sample from")

SETTINGS: tuple[Setting, ...] = (
    Setting(
        "learning_rate", knobs.LEARNING_RATE.names, "1e-6 (never start at 5e-6 or more)",
        "chapter 8.1, 8.4", low=LR_FLOOR, high=5e-6, far=30.0, far_low=10.0,
        metric=knobs.LEARNING_RATE.metric, low_follows_high=True,
        # The chapter's second cause of entropy collapse is "learning rate too large". Too
        # small (the chapter has no floor: the mechanism's), the policy never leaves its
        # reference: nothing is learned.
        risks={HIGH: _links(
            primary=(CATASTROPHIC_UPDATE, _KL, "grad_explosion", "ratio_instability", _LLD,
                     "numerical_failure", "entropy_blowup", _ENTROPY_COLLAPSE),
            contributing=("reward_overfit",)),
            LOW: _links(primary=("no_progress",))},
        # No numbers here: a recipe override moves the ceiling the sentence beside it names.
        why={HIGH: "each update takes too large a step",
             LOW: "each update takes too small a step to move the policy"},
    ),
    Setting(
        "beta", (*knobs.KL_COEF.names, KL_LOSS_SWITCH, KL_DISABLE_SWITCH),
        "0.01 (0.01-0.05), adaptive with target 1.0",
        "chapter 8.1, 8.4", low=0.01, high=0.05, far=20.0, metric=knobs.KL_COEF.metric,
        off_when_zero=True,
        negative="negative: a reward for moving away from the reference, the leash reversed",
        # The chapter's first cause of entropy collapse is "KL coefficient beta too small":
        # switched off, it is a primary cause (merely low, a contributing one).
        risks={OFF: _links(primary=(_KL, _ENTROPY_COLLAPSE), contributing=(
                   CATASTROPHIC_UPDATE, "reward_hacking", "format_gaming")),
               UNSAFE: _links(primary=(_KL, _ENTROPY_COLLAPSE), contributing=(
                   CATASTROPHIC_UPDATE, "reward_hacking", "format_gaming")),
               LOW: _links(primary=(_KL,), contributing=(_ENTROPY_COLLAPSE, "reward_hacking")),
               # Too strong a leash holds the policy at the reference: the task is not learned.
               HIGH: _links(primary=("no_progress",))},
        why={OFF: "no KL leash: nothing holds the policy near the reference",
             UNSAFE: "every update is paid to move the policy further from the reference",
             LOW: "too weak a KL leash (a beta this small lets the policy run "
                  "off and grow over-confident)",
             HIGH: "a strong KL leash slows learning"},
        target="0.01-0.05",
    ),
    Setting(
        "num_generations", knobs.GROUP_SIZE.names, "16 (8-16 to start; 32-64 against "
        "equal-reward groups)", "chapter 3.3, 8.1, 8.4", low=8, high=64, far=4.0,
        risks={LOW: _links(primary=(_ADV,), contributing=("no_learning_signal",))},
        why={LOW: "a small group is often all-equal: zero advantage, no gradient",
             NOT_APPLICABLE: "the advantage estimator uses no groups"},
        target="16",
    ),
    Setting(
        "temperature", knobs.TEMPERATURE.names, "1.0 (1.0-1.2)", "chapter 2.3, 8.1",
        low=1.0, high=1.2, far=1.6,
        # Every sample the run learns from is drawn at this temperature: far above the range
        # they are mostly noise, the task is not learned (or unlearned: the held-out score
        # falls while the easiest term, the format, is all that is gained).
        # Learning from samples drawn sharpened pulls the policy to the sharpened
        # distribution: it leaves its reference faster (KL 0.05 -> 0.9 at 0.3, trial 41).
        risks={LOW: _links(primary=(_ENTROPY_COLLAPSE,), contributing=(_ADV, _KL)),
               # (The policy sharpens against samples drawn that hot: trial 70's 2.5 in
               # generation_kwargs, its entropy at the trainer's temperature of 1 falling
               # 0.59 -> 0.18 from step 1, read "learning_rate 1e-4 -> 2.5e-6".)
               HIGH: _links(primary=("entropy_blowup", "no_progress"),
                            contributing=("format_gaming", "reward_hacking", _ENTROPY_COLLAPSE))},
        why={LOW: "a low rollout temperature sharpens the sampling distribution: groups of "
                  "near-identical samples, and a policy pulled to that sharper distribution, "
                  "away from its reference",
             HIGH: "a high rollout temperature samples rare tokens the policy then learns: "
                   "far above the range, most samples are noise"},
        target="1.0",
    ),
    Setting(
        "top_p", knobs.TOP_P.names,
        "1.0 (sample from the whole distribution)", "the frameworks' default (TRL, verl)",
        low=0.95, far=1.5,
        risks={LOW: _SAMPLING_CUT},
        why={LOW: "nucleus sampling cuts the distribution's tail: " + _CUT_WHY},
        target="1.0",
    ),
    Setting(
        "top_k", knobs.TOP_K.names,
        "off (-1 or 0: the whole vocabulary)", "the frameworks' default (TRL, verl)",
        low=50, far=5.0,
        risks={LOW: _SAMPLING_CUT},
        why={LOW: "top-k sampling keeps only the k likeliest tokens: " + _CUT_WHY},
        # 0 is off everywhere: transformers' generate, vLLM and SGLang (verl's -1 too), while
        # transformers rejects -1 ("top_k has to be a strictly positive integer", trial 44).
        target="0 (off)",
    ),
    Setting(
        # Not in the chapter: a cut as top_p's, relative to the likeliest token (TRL, vLLM,
        # SGLang). Trial 63's 0.8 sampled the argmax on every draw: "the task is solved" on a
        # policy right 31% of the time at temperature 1, min_p unread.
        "min_p", ("generation_kwargs.min_p", "actor_rollout_ref.rollout.min_p",
                  "generation.min_p", "rollout.min_p", "min_p"),
        "0 (off: sample from the whole distribution)", "the frameworks' default (TRL, vLLM)",
        high=0.1, far=2.0,
        risks={HIGH: _SAMPLING_CUT},
        why={HIGH: "min-p sampling drops every token less likely than min_p times the "
                   "likeliest one: " + _CUT_WHY},
        target="0 (off)",
    ),
    Setting(
        # Not in the chapter: transformers' truncation sampling (generate's epsilon_cutoff and
        # eta_cutoff; suggested 3e-4 to 9e-4 and 2e-3). Trial 75's epsilon_cutoff 0.3 kept only
        # tokens likelier than 0.3: every group alike from step 1, read "check the reward".
        "epsilon_cutoff", knobs.EPSILON_CUTOFF.names,
        "0 (off), or at most 9e-4", "transformers' default and suggested range",
        high=1e-3, far=10.0,
        risks={HIGH: _SAMPLING_CUT},
        why={HIGH: "epsilon sampling drops every token less likely than it: " + _CUT_WHY},
        target="0 (off)",
    ),
    Setting(
        "eta_cutoff", knobs.ETA_CUTOFF.names,
        "0 (off), or at most 2e-3", "transformers' default and suggested range",
        high=2e-3, far=10.0,
        risks={HIGH: _SAMPLING_CUT},
        why={HIGH: "eta sampling drops every token below an entropy-scaled floor: " + _CUT_WHY},
        target="0 (off)",
    ),
    Setting(
        "typical_p", knobs.TYPICAL_P.names,
        "1.0 (off)", "transformers' default",
        low=0.95, far=1.5,
        # Typical sampling keeps the tokens whose surprisal is nearest the entropy: at a low
        # typical_p, from a peaked distribution, often not the likeliest one. The samples leave
        # the policy's mode, and what is learned from them is not the task (trial 76: 0.05,
        # entropy up 0.59 -> 0.87, correctness at 0.01 from step 1, read "learning_rate").
        risks={LOW: _links(primary=(_ENTROPY_COLLAPSE, "entropy_blowup", "no_progress"),
                           contributing=(_ADV, "ratio_instability"))},
        why={LOW: "typical sampling keeps only the tokens whose surprisal is nearest the "
                  "entropy, often not the likeliest: samples off the policy's mode, or " +
                  _CUT_WHY},
        target="1.0",
    ),
    Setting(
        # Not in the chapter: beam search in the rollout (transformers' generate, TRL's
        # generation_kwargs). Each completion is the best of num_beams beams: a group's
        # completions are the same few, and its reward the search's, not the policy's (trial 79:
        # num_beams 4, every group equal and all-correct from step 1, grad norm 0, read healthy;
        # 0.31 sampled plainly, the base model's level).
        "num_beams", knobs.NUM_BEAMS.names,
        "1 (sample, no beam search)", "the frameworks' default (transformers)",
        high=1.0, far=1.5,
        risks={HIGH: _links(primary=(_ADV, "no_learning_signal", "no_progress"),
                            contributing=(_ENTROPY_COLLAPSE,))},
        why={HIGH: "beam search: each completion is the best of its beams, so a group's "
                   "completions are the same few and its reward is the search's, not the "
                   "policy's"},
        target="1",
    ),
    Setting(
        # Not in the chapter: TRL's top_entropy_quantile keeps in the loss only that share of
        # each batch's tokens, by entropy (Wang et al. 2025 train on the top 20%). Trial 67's
        # 0.01 trained on one token in a hundred: correctness 0.37 -> 0.68 where its controls
        # reached 0.87, read healthy with the setting unsaid.
        "top_entropy_quantile", ("top_entropy_quantile",),
        "1.0 (every token), or 0.2 (the highest-entropy 20%)", "TRL's default; Wang et al. 2025",
        low=0.2, far=5.0,
        risks={LOW: _links(contributing=("no_progress", _ADV))},
        why={LOW: "the loss keeps only this share of each batch's tokens, by entropy: most of "
                  "every batch's gradient is thrown away"},
        target="0.2",
    ),
    Setting(
        # Not in the chapter: a sampling setting that reshapes the distribution the rollout
        # samples from, as a cut does, so the trainer's ratios are against log-probs the
        # sampler did not use (trial 48: 2.0 brought gradient spikes and a lower plateau).
        "repetition_penalty", ("generation_kwargs.repetition_penalty",
                               "actor_rollout_ref.rollout.repetition_penalty",
                               "generation.repetition_penalty", "rollout.repetition_penalty",
                               "repetition_penalty"),
        "1.0 (off: sample from the policy as it is)", "the frameworks' default (TRL, vLLM)",
        low=1.0, high=1.0, far=1.5,
        # Below 1 it rewards repeating (trial 71's 0.5: correctness 0.52 where its controls
        # reached 0.88, read healthy with the setting "within the recipe").
        risks={HIGH: _links(primary=("ratio_instability", "grad_explosion"),
                            contributing=(_ADV, "no_progress")),
               LOW: _links(primary=("ratio_instability", "grad_explosion"),
                           contributing=(_ADV, "no_progress"))},
        why={HIGH: "a repetition penalty lowers the logits of tokens already written: the "
                   "rollout samples from a distribution the policy does not have, and a task "
                   "whose answers repeat tokens (tags, digits) is penalised for them",
             LOW: "a repetition penalty below 1 raises the logits of tokens already written: "
                  "the rollout samples repetitions from a distribution the policy does not "
                  "have"},
        target="1.0",
    ),
    Setting(
        # Not in the chapter: greedy decoding in the rollout (transformers' generate; TRL's
        # generation_kwargs, verl's rollout). Every completion of a group is the same: no
        # group can teach anything (trial 71: read "check the reward function"). Not the
        # validation's own (verl's val_kwargs.do_sample False is its default).
        "do_sample", ("generation_kwargs.do_sample", "actor_rollout_ref.rollout.do_sample"),
        "on (sample; off is greedy decoding)", "the frameworks' default (TRL, verl)",
        kind="flag", off_is_far=True,
        risks={OFF: _links(primary=(_ADV, "no_learning_signal", _ENTROPY_COLLAPSE))},
        why={OFF: "greedy decoding: every completion of a group is the same, so no group "
                  "can tell a better answer from a worse"},
        target="True",
    ),
    Setting(
        # Not in the chapter: a floor on each completion's length (transformers' generate).
        # At the budget, no completion can end: every one is cut (trial 71's 12 of 12).
        "min_new_tokens", ("generation_kwargs.min_new_tokens", "min_new_tokens"),
        "0 (off)", "the frameworks' default (transformers)", high=0.5, far=1.5,
        off_in_recipe=True,
        risks={HIGH: _links(primary=("length_hacking",), contributing=("no_progress",))},
        why={HIGH: "the sampler may not end a completion before this many tokens: near the "
                   "budget, no completion can stop where its answer does"},
        target="0 (off)",
    ),
    Setting(
        # Not in the chapter: a hard ban on repeating any n tokens (transformers' generate;
        # TRL's generation_kwargs). Trial 67's 2 made the answer format impossible: reward
        # 0.005 and 92% of groups all alike for 20 steps, read healthy with it unsaid.
        "no_repeat_ngram_size", ("generation_kwargs.no_repeat_ngram_size",
                                 "no_repeat_ngram_size"),
        "0 (off)", "the frameworks' default (transformers, vLLM has none)",
        high=0.5, far=1.5, off_in_recipe=True,
        risks={HIGH: _links(contributing=(_ADV, "no_progress", "format_gaming",
                                          "no_learning_signal"))},
        why={HIGH: "the sampler may never write the same n tokens twice: a format, a tag or "
                   "a number that repeats them cannot be written, whatever the policy learns"},
        target="0 (off)",
    ),
    Setting(
        # Not in the chapter: tokens the sampler may never write (transformers' generate;
        # TRL's generation_kwargs). Trial 68 banned "/": no answer tag could close, and every
        # completion ran to the cap, read "max_completion_length 12 -> 24".
        # (And those it may not begin with: trial 77's begin_suppress_tokens kept the answer
        # tag from opening, its format term at 0.001 for 200 steps, read healthy.)
        "banned_tokens", ("generation_kwargs.suppress_tokens", "generation_kwargs.bad_words_ids",
                          "generation_kwargs.begin_suppress_tokens", "suppress_tokens",
                          "bad_words_ids", "begin_suppress_tokens"),
        "none", "the frameworks' default (transformers)", kind="banned", off_in_recipe=True,
        risks={HIGH: _links(primary=("length_hacking",), contributing=(
            _ADV, "no_progress", "format_gaming", "no_learning_signal"))},
        why={HIGH: "the sampler may never write these tokens: an answer, a tag or a stop that "
                   "needs one cannot be written"},
        target="none (remove it)",
    ),
    Setting(
        # Not in the chapter: transformers' (start, factor) that raises the end token's score
        # exponentially after ``start`` tokens. Trial 77's (2, 3.0) ended every completion at
        # about 5 of 12 tokens, before any answer: every reward 0 from step 1.
        "length_decay", ("generation_kwargs.exponential_decay_length_penalty",
                         "exponential_decay_length_penalty"),
        "none", "the frameworks' default (transformers)", kind="banned", off_in_recipe=True,
        risks={HIGH: _links(primary=("length_hacking", "no_learning_signal"), contributing=(
            _ADV, "no_progress", "format_gaming"))},
        why={HIGH: "the sampler is pushed to end each completion early, whatever it has "
                   "written: an answer that needs more tokens is never reached"},
        target="none (remove it)",
    ),
    Setting(
        "entropy_coef", (*knobs.ENTROPY_COEF.names, "entropy_loss_coef"),
        "0.005 (0.001-0.01)", "chapter 2.4, 8.1, 8.4", low=0.001, high=0.01, far=10.0,
        off_when_zero=True, metric=knobs.ENTROPY_COEF.metric,
        negative="negative: a penalty on entropy, the bonus with its sign flipped",
        risks={HIGH: _links(primary=("entropy_blowup",), contributing=(_LLD, _KL)),
               UNSAFE: _links(primary=(_ENTROPY_COLLAPSE,), contributing=(_ADV,)),
               OFF: _links(contributing=(_ENTROPY_COLLAPSE,)),
               LOW: _links(contributing=(_ENTROPY_COLLAPSE,))},
        why={HIGH: "an entropy bonus this large rewards randomness itself: it drives entropy "
                   "up",
             OFF: "no entropy bonus (the recipe adds 0.005 against entropy collapse)",
             UNSAFE: "every update is paid to make the policy more certain"},
        targets={HIGH: "0.005 (or remove it)", OFF: "0.005", LOW: "0.005", UNSAFE: "0.005"},
    ),
    Setting(
        "epsilon", ("actor_rollout_ref.actor.clip_ratio_low", "actor_rollout_ref.actor.clip_ratio",
                    "loss_fn.ratio_clip_min", "clip_ratio_low", "eps_clip_low", "eps_clip",
                    "epsilon", "clip_ratio", "cliprange", "clip_range", "clip_low"),
        "0.2 (ratios clipped below at 0.8)", "chapter 8.4", low=0.1, high=0.3, far=2.5,
        risks={HIGH: _links(primary=("ratio_instability",), contributing=(
                   "entropy_blowup", _LLD)),
               # A clip far tighter than the recipe clips most tokens of every reused batch:
               # its clip fraction is large by construction, and the run learns slowly
               # (trial 63: epsilon 0.002 with 6 iterations had read "learning_rate first").
               LOW: _links(primary=("ratio_instability",), contributing=("no_progress",))},
        why={HIGH: "a wide lower clip lets negative-advantage updates push token "
                   "probabilities far down",
             LOW: "a clip this tight stops the gradient of every token whose ratio moved "
                  "more than epsilon: the clip fraction is large by construction, and most "
                  "of each reused batch's gradient is thrown away"},
        target="0.2",
    ),
    Setting(
        "epsilon_high", (*knobs.CLIP_HIGH.names, "loss_fn.ratio_clip_max", "clip_high"),
        "0.28 (Clip-Higher: ratios clipped above at 1.28)", "chapter 2.4, 8.4 (DAPO)",
        low=0.2, high=0.35, far=2.0,
        risks={LOW: _links(contributing=(_ENTROPY_COLLAPSE,)),
               HIGH: _links(primary=("entropy_blowup", "ratio_instability"))},
        why={LOW: "a symmetric clip stops rare tokens from growing (Clip-Higher keeps "
                  "exploration)",
             HIGH: "a wide upper clip lets rare tokens grow fast"},
        target="0.28",
    ),
    Setting(
        # Not in the chapter: VESPO (TRL's loss_type vespo) weighs each sequence by its
        # importance weight raised to k: a power far above TRL's 2 turns a ratio a little
        # above 1 into a weight in the thousands (trial 71's 50: pre-clip grad norms to 7.5e7
        # every few steps, read "learning_rate 1e-4 -> 2.5e-6").
        "vespo_k_pos", ("vespo_k_pos", "vespo_k_neg"), "2 (TRL's default; 3 for negative "
        "advantages)", "TRL's GRPOConfig (VESPO)", high=4.0, far=5.0,
        risks={HIGH: _links(primary=("grad_explosion", "ratio_instability"),
                            contributing=(_LLD, "entropy_blowup"))},
        why={HIGH: "VESPO raises each importance weight to this power: far above 2, a ratio "
                   "just off 1 weighs a sequence by thousands, and its gradient with it"},
        target="2",
    ),
    Setting(
        # Not in the chapter: TRL's two-sided clipping caps the ratio of the unclipped term at
        # delta, recommended above 1 + epsilon. Below 1 the on-policy ratio of 1 is capped: no
        # token with a positive advantage gets a gradient, and TRL's clip metrics count the
        # cap (trial 70's 0.5: a clip fraction of 0.6 from step 1 on an on-policy run read
        # "learning_rate 1e-4 -> 2.5e-6"). Between 1 and 1 + epsilon it is merely tighter
        # than TRL recommends: judged outside only below 1.
        "delta", ("delta",), "off (None), or above 1 + epsilon (1.5-2)", "TRL's docstring",
        low=1.0, far=1.5,
        risks={LOW: _links(primary=("no_progress",), contributing=("ratio_instability",))},
        why={LOW: "TRL caps the ratio at delta: below 1 even the on-policy ratio of 1 is "
                  "capped, no token with a positive advantage gets a gradient, and the clip "
                  "fraction counts the cap by construction"},
        target="None (off), or 1.5-2",
    ),
    Setting(
        "max_grad_norm", (*knobs.GRAD_CLIP.names, "clip_grad", "max_norm"), "1.0",
        "the frameworks' default (TRL, verl, OpenRLHF)", low=None, high=10.0, far=10.0,
        off_when_zero=True, off_above=1e3,
        risks={OFF: _links(primary=(CATASTROPHIC_UPDATE, "grad_explosion"),
                           contributing=("numerical_failure", _KL)),
               HIGH: _links(contributing=(CATASTROPHIC_UPDATE, "grad_explosion"))},
        why={OFF: "no gradient clipping: one bad batch can move the policy anywhere",
             HIGH: "a clip this loose rarely acts"},
        target="1.0",
    ),
    Setting(
        "max_completion_length",
        (*knobs.MAX_LENGTH.names, "actor_rollout_ref.rollout.response_length", "max_tokens",
         "response_length"),  # (Open-Instruct's --response_length; c79)
        "long enough for the task's answers (no completion cut at the cap)",
        "the log: truncation at the cap", kind="number",
        risks={LOW: _links(primary=("length_hacking",), contributing=(_ADV,))},
        why={LOW: "too small a completion budget: answers are cut before they end"},
    ),
    Setting(
        "overlong_shaping", ("reward_model.overlong_buffer.enable",
                             "reward_model.reward_kwargs.overlong_buffer_cfg.enable",
                             "overlong_buffer.enable", "mask_truncated_completions",
                             "overlong_buffer_len", "overlong_penalty", "overlong_filtering"),
        "on (DAPO overlong reward shaping)", "chapter 8.4", kind="flag",
        risks={OFF: _links(contributing=("length_hacking",))},
        why={OFF: "truncated completions are scored as if they had ended"},
        target="on", note_only=True,
    ),
    Setting(
        "mask_tool_output", ("actor_rollout_ref.agent.mask_observations", "mask_observations",
                             "actor_rollout_ref.actor.state_masking", "state_masking",
                             "mask_tool_output", "mask_env_tokens"),
        "on (the tool's output masked from the policy loss)",
        "chapter 4 (LLD in tool-integrated GRPO); VerlTool's and Search-R1's default",
        kind="flag", off_is_far=True,
        risks={OFF: _links(primary=(_LLD, _KL), contributing=("ratio_instability",
                                                              "entropy_blowup"))},
        why={OFF: "the policy is trained on the tool's tokens, which it never sampled: "
                  "long-tail ratios on them, and their likelihood pushed around by text the "
                  "policy does not write"},
        target="on",
    ),
    Setting(
        "dynamic_sampling", ("algorithm.filter_groups.enable", "filter_groups.enable",
                             "dynamic_sampling", "dynamic_filtering", "use_dynamic_sampling",
                             "grpo.use_dynamic_sampling"),
        "on (DAPO: skip all-0 / all-1 groups)", "chapter 3.3, 8.4", kind="flag",
        risks={OFF: _links(contributing=(_ADV,))},
        why={OFF: "equal-reward groups stay in the batch and dilute it"},
        target="on", note_only=True,
    ),
    Setting(
        "loss_type", ("actor_rollout_ref.actor.loss_agg_mode", "loss_agg_mode", "loss_type"),
        "token-level aggregation (token-mean; TRL: dapo, dr_grpo or bnpo)",
        "DAPO and Dr. GRPO (not in the chapter)", kind="choice",
        ok_values=("token-mean", "token_mean", "dapo", "dr_grpo", "bnpo",
                   "seq-mean-token-sum", "seq-mean-token-sum-norm"),
        risks={OFF: _links(contributing=("length_hacking",))},
        why={OFF: "a per-sequence mean weighs each token of a long completion less: long "
                  "wrong answers are penalised less"},
        target="token-mean", note_only=True,
    ),
    Setting(
        "num_iterations", ("actor_rollout_ref.actor.ppo_epochs", "ppo_epochs", "max_epochs",
                           "num_iterations", "num_ppo_epochs", "update_epochs"),
        "1 (on-policy: one update per batch)", "the frameworks' default", low=1, high=2,
        far=4.0,
        # Every pass over one batch sharpens the policy on it again: far above the recipe, an
        # effective step several times the lr's (trial 72: 12 passes read "entropy collapse:
        # learning_rate first", the lr its controls learned at).
        risks={HIGH: _links(primary=("ratio_instability",), contributing=(
                   _KL, CATASTROPHIC_UPDATE, _ENTROPY_COLLAPSE))},
        why={HIGH: "every extra pass over a batch moves the policy further from the one that "
                   "sampled it"},
        target="1",
    ),
    Setting(
        "adam_epsilon", ("actor_rollout_ref.actor.optim.eps", "policy.optimizer.kwargs.eps",
                         "optimizer.kwargs.eps", "adam_epsilon", "adam_eps", "optim.eps"),
        "1e-8 (the optimizers' default)", "the frameworks' default (not in the chapter)",
        high=1e-5, far=100.0,
        # Adam divides each step by sqrt(v) + eps: an epsilon far above a language model's
        # gradient scale (1e-4 to 1e-6 per weight) turns every step into lr * g / eps, a
        # step too small to move the policy.
        risks={HIGH: _links(primary=("no_progress",))},
        why={HIGH: "an epsilon this large swamps Adam's gradient scale: every update shrinks "
                   "towards nothing"},
        target="1e-8",
    ),
    Setting(
        # Not in the chapter: Adam's second-moment decay. Far below 0.999 its running scale
        # follows each batch, and one with a large gradient takes a step of about lr, not a
        # damped one (trial 52: 0.5, a spike of 13 read as "the lr", never as this).
        "adam_beta2", ("actor_rollout_ref.actor.optim.betas.1", "adam_beta2", "beta2"),
        "0.999 (the optimizers' default; 0.95-0.999)", "the frameworks' default (not in the "
        "chapter)", low=0.95, far=1.5,
        risks={LOW: _links(primary=("grad_explosion",), contributing=(CATASTROPHIC_UPDATE,))},
        why={LOW: "a short second-moment memory follows each batch's gradient: a large one "
                  "is not damped, and the step it takes is about the lr itself"},
        target="0.999",
    ),
    Setting(
        "ref_model_sync_steps", ("actor_rollout_ref.ref.update_steps", "ref_update_steps",
                                 "ref_model_sync_steps", "reference_update_steps"),
        "every 5,000 steps", "chapter 3 (KL drift), 8.4", kind="number", note_only=True,
        risks={OFF: _links(contributing=(_KL,))},
        why={OFF: "the reference never moves: KL grows with every step of a long run"},
    ),
    Setting(
        "adaptive_kl", ("algorithm.kl_ctrl.type", "kl_ctrl.type", "adaptive_kl", "kl_target",
                        "target_kl", "adaptive_kl_ctrl"),
        "on, target 1.0", "chapter 4.3, 8.2, 8.4", kind="flag", note_only=True,
        risks={OFF: _links(contributing=(_KL,))},
        why={OFF: "a fixed beta does not tighten as KL grows"},
    ),
    Setting(
        # Not in the chapter: every GRPO recipe steps with Adam(W) (its per-parameter scale);
        # plain SGD at an Adam learning rate moves nothing (trial 51: optim "sgd" at 1e-4, the
        # task at its base level for 200 steps, read "check the reward" first).
        "optimizer", ("actor_rollout_ref.actor.optim.optimizer", "policy.optimizer.name",
                      "optimizer.name", "optim", "optimizer"),
        "AdamW (the frameworks' default)", "the frameworks' default (not in the chapter)",
        kind="choice", ok_values=(), off_is_far=True,
        risks={OFF: _links(primary=("no_progress",))},
        why={OFF: "without Adam's per-parameter scaling, a step at an Adam learning rate is "
                  "orders of magnitude too small to move the policy"},
        target="adamw_torch (AdamW)",
    ),
    Setting(
        "dtype", ("model_config.dtype", "model_config.torch_dtype",
                  "model_init_kwargs.dtype", "model_init_kwargs.torch_dtype",
                  "actor_rollout_ref.actor.fsdp_config.param_dtype",
                  "actor_rollout_ref.actor.fsdp_config.mixed_precision.param_dtype",
                  "actor_rollout_ref.model.dtype", "policy.precision", "torch_dtype",
                  "param_dtype", "dtype", "precision"),
        "bf16 (or fp32 master weights)", "the frameworks' default (not in the chapter)",
        kind="dtype",
        risks={UNSAFE: _links(primary=("numerical_failure", CATASTROPHIC_UPDATE),
                              contributing=(_KL, "grad_explosion", "no_learning_signal")),
               LOW: _links(contributing=("numerical_failure",))},
        why={UNSAFE: "fp16 weights and optimizer states without loss scaling overflow and "
                     "underflow: updates turn to inf/NaN or garbage",
             LOW: "fp16 mixed precision depends on its loss scaler"},
        targets={UNSAFE: "bfloat16 (or fp32 master weights)", LOW: "bf16"},
    ),
    Setting(
        # Not in the chapter: dropout left on in the policy while it trains (a model config's
        # attention_dropout; TRL's disable_dropout off). The log-probs of one completion
        # differ between forward passes, so the ratio, the loss and the gradient carry the
        # masks' noise (trial 79: attention_dropout 0.3 under 4 iterations per batch,
        # pre-clip grad norms 190-2400 from step 1, correctness never above 0.28, read
        # "learning_rate 1e-4 -> 2.5e-6").
        "dropout", DROPOUT_KEYS, "0 (off while training: TRL's disable_dropout)",
        "the frameworks' practice (TRL's disable_dropout)", high=0.01, far=5.0,
        off_in_recipe=True,
        risks={HIGH: _links(primary=("ratio_instability", "grad_explosion"),
                            contributing=("no_progress",))},
        why={HIGH: "dropout on while training: each forward pass drops other units, so the "
                   "log-probs of one completion differ between passes and the ratio, the loss "
                   "and the gradient carry the masks' noise"},
        target="0 (off)",
    ),
)

BY_ID: dict[str, Setting] = {s.id: s for s in SETTINGS}

#: How a range the user set ([recipe.*] in the config file) is told from the chapter's.
USER_RECIPE = "(your recipe)"

#: Keys that mean the run trains a LoRA adapter (its learning rate runs ~10x higher); TRL's
#: ``use_peft`` decides where present (its ``lora_r`` has a default even without PEFT).
_LORA_KEYS = ("lora_rank", "actor_rollout_ref.model.lora_rank", "peft_config.r", "lora.r",
              "lora_r")


# --- readings -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Reading:
    """One knob as a run (or a config) set it, and its verdict against the recipe."""

    setting: Setting
    value: Any  # as configured: a number, text or flag (None: not set)
    source: str | None  # the config key, "logged <metric> (peak)", or None
    verdict: str  # ok | high | low | off | unsafe | not set | unknown
    far: bool = False  # so far outside that it alone explains what it risks
    factor: float | None = None  # how many times beyond the range (None: not a number)
    lora: bool = False
    #: Whether the run says if it trains an adapter (use_peft, a LoRA rank, its trainable
    #: parameter count). Where it does not, an lr above a full fine-tune's ceiling is said
    #: against both ceilings: "20x the 5e-6 ceiling" of a LoRA run at 1e-4 read as 10x too
    #: harsh beside its sibling's "2x the 5e-5 ceiling for a LoRA adapter" (nu33).
    adapter_said: bool = True
    # The change to make, where it is not this setting's own value (an entropy coefficient a
    # controller raised: its target is what the user set): ``fix`` says it instead.
    change: str | None = None

    @property
    def id(self) -> str:
        return self.setting.id

    @property
    def outside(self) -> bool:
        return self.verdict in OUTSIDE

    @property
    def links(self) -> tuple[Link, ...]:
        return tuple(self.setting.risks.get(self.verdict, ()))

    def risks(self, mode: str) -> Link | None:
        return next((lk for lk in self.links if lk.mode == mode), None)

    @property
    def name(self) -> str:
        """What the user's config calls it (``actor_rollout_ref.actor.entropy_coeff``,
        ``mask_truncated_completions``), else the recipe's name."""
        src = self.source
        if src and not src.startswith("logged") and src != "fp16" and src != "bf16":
            return src
        return self.id

    @property
    def switched_off(self) -> bool:
        """A KL coefficient its switch leaves unused (verl's ``use_kl_loss: False``, EasyR1's
        ``disable_kl: True``)."""
        return self.id == "beta" and str(self.source).endswith(
            (KL_LOSS_SWITCH, KL_DISABLE_SWITCH)) and (
            not isinstance(self.value, bool) and self.value == 0)

    @property
    def _inverted(self) -> bool:
        """Read from a switch that says the opposite of the setting (EasyR1's ``disable_kl``,
        AReaL's ``greedy``): its own value is the setting's negation."""
        return str(self.source).endswith((KL_DISABLE_SWITCH, GREEDY_SWITCH))

    @property
    def value_text(self) -> str:
        if self._inverted:  # (disable_kl's value is beta 0: the switch on)
            return "False" if self.value is True else "True"
        return "False" if self.switched_off else _value_text(self.value)

    @property
    def recipe_text(self) -> str:
        s = self.setting
        if s.id == "learning_rate" and self.lora:
            return f"{s.recipe}; x{LORA_LR_SCALE:g} for a LoRA adapter"
        return s.recipe

    @property
    def lr_start(self) -> float | None:
        """The recipe's starting learning rate for this run (a fifth of its ceiling, x10 for a
        LoRA adapter); None for any other knob."""
        s = self.setting
        if s.id != "learning_rate":
            return None
        return (s.high or 5e-6) * LR_START_SHARE * (LORA_LR_SCALE if self.lora else 1.0)

    @property
    def why(self) -> str:
        """Why the recipe moves it ("each update takes too large a step"), and why the target
        goes past the chapter's own remedy where it does: an lr halved (x0.5) that would still
        sit at or above the ceiling the recipe says never to start at."""
        why = self.setting.why.get(self.verdict, "")
        s = self.setting
        if s.id == "learning_rate" and self.verdict == LOW and as_number(self.value) == 0:
            return "the weights never moved"  # not "too small a step": no step at all
        if s.id == "learning_rate" and self.verdict == HIGH and not self.far and isinstance(
                self.value, (int, float)):
            ceiling = (s.high or 5e-6) * (LORA_LR_SCALE if self.lora else 1.0)
            half = float(self.value) * 0.5
            if half >= ceiling * (1 - 1e-9):
                at = "at the recipe's ceiling" if half <= ceiling * (1 + 1e-6) else \
                    f"above the recipe's {_num(ceiling)} ceiling"
                why += (f"; halved it would still be {_num(half)}, {at}, which a run "
                        "should start below, so the target is half the ceiling")
            elif half > ceiling * 0.5 * (1 + 1e-9):  # the target is half the ceiling instead
                why += (f"; halved it would be {_num(half)}, just under"
                        f" the {_num(ceiling)} ceiling; half the ceiling leaves room")
        return why

    @property
    def target(self) -> str:
        """What the recipe sets it to (empty when it says nothing concrete)."""
        s = self.setting
        if s.id == "learning_rate" and self.verdict == LOW:
            return _num(self.lr_start or 0.0)  # the recipe's start, as for one far above it
        if s.id == "learning_rate" and self.verdict == HIGH:
            scale = LORA_LR_SCALE if self.lora else 1.0
            if self.far:
                # The recipe's start: the chapter's 1e-6 is a fifth of its 5e-6 ceiling, and
                # a ceiling set for the model (``[recipe.learning_rate] high``) moves it too.
                return _num((s.high or 5e-6) * LR_START_SHARE * scale)
            # Halved, and never left at or above the ceiling the recipe says never to reach.
            return _num(min(float(self.value) * 0.5, (s.high or 5e-6) * scale * 0.5))
        if s.id == "max_completion_length" and isinstance(self.value, (int, float)):
            return f"{int(self.value) * 2}"
        target = s.targets.get(self.verdict, s.target)
        if s.kind == "flag" and target in ("on", "off") and as_flag(self.value) is not None:
            word = "true" if target == "on" else "false"  # as the config writes it
            # A tracker's params keep the config's text ('False'): answered in its spelling.
            spelled = isinstance(self.value, str) and self.value[:1].isupper()
            return word.capitalize() if spelled else word
        return target

    def how_far(self, both_ceilings: bool = True) -> str:
        """'600x the recipe's 5e-6 ceiling', '0 switches it off; the recipe's: 0.01 ...'.
        ``both_ceilings`` False: an lr of a run that does not say whether it trains an adapter
        against the full fine-tune's ceiling only (a setting the run learned at: kept)."""
        s = self.setting
        # A clip judged against a sequence-level ratio's range is GSPO's, not the chapter's.
        where = "GSPO's" if s.source.startswith("GSPO") else "the recipe's"
        if self.verdict == OFF and s.kind == "number":
            return f"{self.value_text} switches it off; the recipe's: {s.recipe}"
        if self.verdict == UNSAFE and s.negative:
            return f"{s.negative}; the recipe's: {s.recipe}"
        if self.verdict == HIGH and s.off_in_recipe:
            return f"on; the recipe's: {s.recipe}"
        if self.factor is not None and self.verdict == HIGH:
            bound = s.high if s.high is not None else 0.0
            if s.id == "learning_rate" and self.lora:
                bound *= LORA_LR_SCALE
            # (The learning rate's floor is the mechanism's, not the chapter's: its ceiling.)
            ceiling = s.low is None or s.id == "learning_rate"
            what = "ceiling" if ceiling else "range " + s.range_text
            if s.id == "learning_rate" and self.lora:
                what += " for a LoRA adapter"  # 10x a full fine-tune's: said, not silent
            if s.id == "learning_rate" and self.factor <= 1.0 + 1e-9:
                return f"at {where} {_num(bound)} limit, which it says never to reach"
            if self.factor >= 1.95:
                # A ratio of an absurd value stays readable: "1.6e33x", not 34 digits.
                times = f"{self.factor:.0f}" if self.factor < 1e4 else _num(self.factor)
                adapter = self._if_an_adapter() if both_ceilings else ""
                return f"{times}x {where} {_num(bound)} {what}{adapter}" \
                    if ceiling else f"{times}x the top of {where} {s.range_text}"
            return f"above {where} {_num(bound) if ceiling else s.range_text}"
        if self.verdict == LOW and s.id == "learning_rate" and self.factor is not None:
            # Against the start a user would set, not the floor: "1000x below the recipe's
            # start of 1e-4".
            start = self.lr_start or 0.0
            x = as_number(self.value) or 0.0
            lora = " for a LoRA adapter" if self.lora else ""
            if x <= 0:
                return f"no step at all, where {where} start is {_num(start)}{lora}"
            below = start / x
            times = f"{below:.0f}" if below < 1e4 else _num(below)
            return f"{times}x below {where} start of {_num(start)}{lora}"
        if self.verdict == LOW and s.low is not None:
            return (f"below {where} {s.range_text}" if s.high is not None
                    else f"below {where} floor of {_num(s.low)}")
        if self.outside:
            # A flag is on or off: "false is outside the recipe's on" read garbled.
            return f"not {where} {s.recipe}" if s.kind == "flag" else f"outside {where} {s.recipe}"
        return f"within {where} {s.recipe}"

    def _if_an_adapter(self) -> str:
        """Where the run does not say whether it trains an adapter, an lr above a full
        fine-tune's ceiling against a LoRA adapter's too: " for a full fine-tune, 2x a LoRA
        adapter's 5e-5"."""
        s = self.setting
        x = as_number(self.value)
        if (s.id != "learning_rate" or self.lora or self.adapter_said or x is None
                or s.high is None or s.user_high):
            return ""
        lora_ceiling = s.high * LORA_LR_SCALE
        if x >= 3 * lora_ceiling:
            return ""  # far past both: which one is the run's changes nothing
        if x < lora_ceiling:
            return f" for a full fine-tune, within a LoRA adapter's {_num(lora_ceiling)}"
        times = x / lora_ceiling
        said = f"{times:.0f}x" if times >= 1.95 else "above"
        return f" for a full fine-tune, {said} a LoRA adapter's {_num(lora_ceiling)}"

    def how_far_of_value(self) -> str:
        """'1e-4 is 20x the recipe's 5e-6 ceiling': said of the value, so that beside a fix
        ("1e-4 -> 2.5e-6, or 2.5e-5 for a LoRA adapter (20x ...)") it is not read as said of
        the new one."""
        if self.change and not self.change.startswith(self.name):
            # The fix turns another knob ("disable_dropout False -> True"): the value is said
            # with its own name ("0.1 is on" had named no knob; h118).
            return self.sentence()
        return self.how_far() if self.verdict == OFF and self.setting.kind == "number" \
            else f"{self.value_text} is {self.how_far()}"

    def sentence(self) -> str:
        """'entropy_coef 0.5 is 50x the top of the recipe's 0.001-0.01'."""
        return f"{self.name} {self.value_text} is {self.how_far()}" if self.verdict != OFF \
            or self.setting.kind != "number" else f"{self.name} {self.how_far()}"

    def fix(self) -> str:
        """'entropy_coef 0.5 -> 0.005 (or remove it)'."""
        if self.change:
            return self.change
        target = self.target
        if not target:
            return f"change {self.name} (now {self.value_text}; recipe {self.recipe_text})"
        x = as_number(target)
        # Never an "or" that raises the lr it lowers, or barely lowers it (3e-3 -> "or 2.5e-3
        # for a LoRA adapter" read as a contradiction); none beside a ceiling the user set for
        # this model.
        lora = (f", or {_num(x * LORA_LR_SCALE)} for a LoRA adapter" if x is not None
                and self.id == "learning_rate" and not self.lora and self.verdict == HIGH
                and not self.setting.user_high
                and isinstance(self.value, (int, float))
                and x * LORA_LR_SCALE <= self.value / 3 else "")
        if self.switched_off and self.name.endswith(KL_DISABLE_SWITCH):
            coef = self.name[:-len(KL_DISABLE_SWITCH)] + "kl_coef"
            return f"{self.name} True -> False, with {coef} {target}"
        if self.switched_off:
            coef = self.name[:-len(KL_LOSS_SWITCH)] + "kl_loss_coef"
            return f"{self.name} False -> True, with {coef} {target}"
        if self._inverted:
            return f"{self.name} True -> False"
        return f"{self.name} {self.value_text} -> {target}{lora}"

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.id, "value": _jsonable(self.value), "source": self.source,
                "recipe": self.recipe_text, "verdict": self.verdict, "far": self.far,
                "risks": [{"mode": lk.mode, "primary": lk.primary} for lk in self.links]}


@dataclass(frozen=True)
class Setup:
    """Every knob read from a run's config, with its verdict."""

    readings: tuple[Reading, ...]
    lora: bool = False

    def __iter__(self):
        return iter(self.readings)

    def get(self, setting_id: str) -> Reading | None:
        return next((r for r in self.readings if r.id == setting_id), None)

    @property
    def known(self) -> tuple[Reading, ...]:
        return tuple(r for r in self.readings if r.verdict not in (NOT_SET,))

    @property
    def outside(self) -> tuple[Reading, ...]:
        return tuple(r for r in self.readings if r.outside)

    def causes(self, modes: Iterable[str], *, critical: bool = True,
               prefer: Sequence[str] = ()) -> list[Reading]:
        """The knobs outside the recipe that could have caused ``modes``, most likely first:
        far outside before merely outside, a primary link before a contributing one, then the
        settings in ``prefer`` in its order (the finding's own remedies: beta 0 before an lr
        20x the ceiling behind a KL drift, whose chapter remedies are all about the leash),
        then the furthest out. A knob merely outside with only a contributing link is never a cause
        (it is in the plan); merely outside with a primary link needs a critical finding and
        a value at least ``CLEARLY_OUTSIDE`` times beyond the range (an lr at the ceiling
        itself is a note in the plan, not the cause)."""
        wanted = set(modes)
        found = []
        for r in self.readings:
            if not r.outside or r.setting.note_only:
                continue
            links = [lk for lk in r.links if lk.mode in wanted]
            if not links:
                continue
            primary = any(lk.primary for lk in links)
            clearly = r.factor is None or r.factor >= CLEARLY_OUTSIDE
            if not r.far and not (primary and critical and clearly):
                continue
            rank = prefer.index(r.id) if r.id in prefer else len(prefer)
            found.append((r.far, primary, rank, math.log10(r.factor) if r.factor else 0.0, r))
        found.sort(key=lambda t: (not t[0], not t[1], t[2], -t[3]))
        return [t[4] for t in found]

    def linked(self, modes: Iterable[str]) -> list[Reading]:
        """Every knob outside the recipe with any link to ``modes`` (notes included)."""
        wanted = set(modes)
        return [r for r in self.readings if r.outside and any(lk.mode in wanted
                                                              for lk in r.links)]

    def to_dict(self) -> list[dict[str, Any]]:
        return [r.to_dict() for r in self.known]


# --- reading a config ---------------------------------------------------------------------------


def flat_config(config: Mapping[str, Any]) -> dict[str, Any]:
    """A run's config flattened with dots; Hugging Face's ``args``/``model_config`` text and a
    W&B config's ``{"value": ...}`` wrappers unwrapped."""
    flat = knobs.flatten(config)
    out: dict[str, Any] = {}
    for key, value in flat.items():
        if key.endswith(".value") and key[:-6] not in flat:
            key = key[:-6]  # a W&B config.yaml: {"lr": {"value": 1e-6}}
        inner = _dict_text(value)
        if inner is not None:
            # A tracker keeps a dict setting as its text (MLflow's params: TRL's
            # generation_kwargs "{'top_p': 0.1}", trial 68): its keys are settings too.
            out.update({f"{key}.{k}": v for k, v in knobs.flatten(inner).items()})
            continue
        # A tracker keeps Python's None as its text (MLflow's params: TRL's min_p "None"):
        # not set, as a null is (an MLflow run's params given with --train-config had been
        # refused: "min_p: 'None' is not a number"; trial 73).
        out[key] = None if isinstance(value, str) and value.strip() == "None" else value
    return out


def _dict_text(value: Any) -> dict[str, Any] | None:
    """A dict written as text (JSON, or Python's repr), or None."""
    if not isinstance(value, str) or not (value.startswith("{") and value.endswith("}")) or (
            len(value) > 10_000):
        return None
    import ast
    import json

    for parse in (json.loads, ast.literal_eval):
        try:
            parsed = parse(value)
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            continue
        return parsed if isinstance(parsed, dict) else None
    return None


# --- what a config puts in force: a coefficient its switch leaves unused is no setting ------


#: verl's and SkyRL's ``kl_loss_coef`` where the config switches the KL loss on and writes no
#: coefficient (verl's ppo_trainer.yaml and SkyRL's ppo_base_config.yaml both hold 0.001).
KL_LOSS_COEF_DEFAULT = 0.001
_KL_LOSS_DEFAULT_SECTIONS = ("actor_rollout_ref.actor.use_kl_loss",
                             "trainer.algorithm.use_kl_loss")


def kl_loss_default(flat: Mapping[str, Any]) -> tuple[str, float] | None:
    """The coefficient key and value a section-qualified ``use_kl_loss`` switched on puts in
    force when the config writes no KL coefficient (verl's ``actor_rollout_ref.actor``,
    SkyRL's ``trainer.algorithm``); None otherwise (OpenRLHF's flat flag moves its own
    ``init_kl_coef``, whose default forks disagree on)."""
    loss, loss_key = lookup(flat, (KL_LOSS_SWITCH,))
    if loss_key is None or not loss_key.endswith(_KL_LOSS_DEFAULT_SECTIONS) \
            or as_flag(loss) is not True or lookup(flat, knobs.KL_COEF.names)[0] is not None:
        return None  # (EasyR1's algorithm.use_kl_loss pairs with its kl_coef, 1e-2; h117)
    return loss_key.rsplit(".", 1)[0] + ".kl_loss_coef", KL_LOSS_COEF_DEFAULT


def _kl_in_force(flat: dict[str, Any]) -> dict[str, Any]:
    """``flat`` without the KL coefficients its switches leave unused; with both switched off,
    beta is 0 under the loss switch's key (no KL term at all)."""
    disabled, disable_key = lookup(flat, (KL_DISABLE_SWITCH,))
    if disable_key is not None:
        # EasyR1's disable_kl: true turns the KL loss and the KL in the reward off whatever
        # kl_coef says (c79: read as "kl_coef 0.01 within the recipe"); false leaves the rest
        # to be read as verl's. Every copy of the switch goes (EasyR1 saves one under
        # worker.actor too: the other had been read as beta, "False is not a number"; h117).
        flat = {k: v for k, v in flat.items() if lookup({k: v}, (KL_DISABLE_SWITCH,))[1] is None}
        if as_flag(disabled) is True:
            flat = {k: v for k, v in flat.items()
                    if lookup({k: v}, (*knobs.KL_COEF.names, KL_LOSS_SWITCH))[1] is None}
            flat[disable_key] = 0
            return flat
    loss, loss_key = lookup(flat, (KL_LOSS_SWITCH,))
    reward, _ = lookup(flat, (_KL_REWARD_SWITCH,))
    if loss_key is not None and as_flag(loss) is True and lookup(
            flat, knobs.KL_COEF.names)[0] is None:
        # The switch on and no coefficient written (verl's and SkyRL's shipped scripts keep
        # its default): the switch is no value of beta (preflight had refused SkyRL's
        # run_gsm8k.sh, "use_kl_loss: true is not a number"; c77), the default is.
        out = {k: v for k, v in flat.items() if k != loss_key}
        default = kl_loss_default(flat)
        if default is not None:
            out[default[0]] = default[1]
        return out
    if loss is None or loss_key is None or not any(k.endswith("kl_loss_coef") for k in flat):
        return flat  # not verl's pair (OpenRLHF's --use_kl_loss moves its one coefficient)
    out = dict(flat)
    if as_flag(loss) is False:
        out = {k: v for k, v in out.items() if not k.endswith("kl_loss_coef")}
    if reward is not None and as_flag(reward) is False:  # (one written by hand may leave it out)
        out = {k: v for k, v in out.items() if ".kl_ctrl." not in f".{k}"}
    if as_flag(loss) is False and (reward is None or as_flag(reward) is False) and lookup(
            out, knobs.KL_COEF.names)[0] is None:
        out[loss_key] = 0  # read as beta 0: the leash is off
    return out


#: Sections whose dtype is not the trained weights': the inference engine's (verl's
#: ``actor_rollout_ref.rollout.dtype``, vLLM's bf16 beside fp32 training), the frozen
#: reference's, a reward model's or critic's.
_NOT_TRAINED = ("rollout", "ref", "reward_model", "critic", "generation", "vllm")


def _trained_side(flat: Mapping[str, Any]) -> dict[str, Any]:
    """``flat`` without the keys of sections that hold no trained policy weights."""
    return {k: v for k, v in flat.items()
            if not any(part in _NOT_TRAINED for part in k.split(".")[:-1])}


#: The rollout's sampler settings, and the sections whose sampler is not the rollout's: a
#: reward model's or judge's generation, an evaluation's (h99: a reward model's
#: generation.repetition_penalty 2 made preflight critical).
_SAMPLER_SETTINGS = frozenset({"temperature", "top_p", "top_k", "min_p", "repetition_penalty",
                               "epsilon_cutoff", "eta_cutoff", "typical_p", "num_beams"})
#: Settings of the rollout a section of another sampler (an evaluation's, a judge's) or of the
#: data may spell alike: an eval's ``n_samples: 1``, a dataset's ``num_samples: 5000``, a
#: grader's ``num_beams`` (h117: each had read as the rollout's, critical).
_ROLLOUT_SIDE = frozenset({"num_generations", "max_completion_length"})
_DATA_SECTION = re.compile(r"^(?:data|dataset.*|train_dataset|.*_data)$")
#: A count a dataset's section means of its samples (``num_samples: 5000``), not a group
#: size; a data section's ``group_size`` is the group's (Tinker's
#: ``dataset_builder.group_size``: h118, dropped with the data's counts).
_DATA_COUNTS = frozenset({"n_samples", "num_samples"})


def _sampling_side(flat: Mapping[str, Any], data: bool = True) -> dict[str, Any]:
    """``flat`` without the keys of sections whose sampler is not the rollout's (an
    evaluation's ``eval_generation_kwargs`` too; h105), nor, with ``data`` False, the data's
    counts of samples."""
    side = knobs.rollout_side(flat)
    if data:
        return side
    return {k: v for k, v in side.items() if k.rsplit(".", 1)[-1] not in _DATA_COUNTS
            or not any(_DATA_SECTION.match(part) for part in k.split(".")[:-1])}


#: A schedule's floor, as the schedulers name it (transformers' cosine_with_min_lr's
#: ``min_lr`` or ``min_lr_rate``, the polynomial decay's ``lr_end``, torch's ``eta_min``,
#: verl's ``min_lr_ratio``).
_LR_FLOORS = ("min_lr", "lr_end", "eta_min", "end_lr", "final_lr")
_LR_FLOOR_RATES = ("min_lr_rate", "min_lr_ratio")


def schedule_floor_above(flat: Mapping[str, Any]) -> tuple[str, float, float, str] | None:
    """(key, the floor's lr, the learning rate, the floor's fix) when a config's schedule
    floor lies above its learning rate: the schedule climbs to the floor instead of decaying
    from the lr. None otherwise."""
    value, lr_key = lookup(flat, knobs.LEARNING_RATE.names)
    peak = as_number(value)
    if not peak or peak <= 0 or lr_key is None:
        return None
    # The policy's own schedule only: a floor under the lr's section (verl's
    # actor_rollout_ref.actor.optim.min_lr_ratio), or TRL's lr_scheduler_kwargs beside a
    # top-level lr; never a critic's, a reference's or another group's (h105).
    section = lr_key.rsplit(".", 1)[0] + "." if "." in lr_key else ""
    kind = str(lookup(flat, ("lr_scheduler_type", "warmup_style", "lr_warmup_style",
                             "lr_decay_style"))[0] or "").lower()
    if "constant" in kind:
        return None  # (a constant schedule reads no floor)
    for key, value in flat.items():
        last = key.rsplit(".", 1)[-1]
        own = key.startswith(section) if section else (
            "." not in key or key.startswith("lr_scheduler_kwargs."))
        x = as_number(value)
        if not own or x is None or not math.isfinite(x) or x <= 0:
            continue  # (NaN, inf or a negative floor: not judged)
        # Half again above the lr or more: a floor a hair above it barely climbs.
        if last in _LR_FLOORS and x >= 1.5 * peak:
            return key, x, peak, f"{key} {_num(x)} -> {_num(peak / 10)}"
        if last in _LR_FLOOR_RATES and x >= 1.5:  # (a share of the lr: 0.1 is a tenth)
            return key, x * peak, peak, f"{key} {_num(x)} -> 0.1"
    return None


def _dropout_in_force(flat: dict[str, Any]) -> dict[str, Any]:
    """``flat`` without the model's dropout probabilities when the trainer switches dropout
    off (TRL's ``disable_dropout: true``): none of them is in force."""
    off, _ = lookup(flat, ("disable_dropout",))
    if as_flag(off) is not True:
        return flat
    return {k: v for k, v in flat.items() if lookup({k: v}, DROPOUT_KEYS)[1] is None}


def _policy_dropout(flat: Mapping[str, Any]) -> tuple[Any, str | None]:
    """The policy's largest dropout probability and its key: never a critic's, a reward
    model's or the reference's (h118: a critic's hidden_dropout had become a verl run's first
    action), and the largest, not the first (a Trainer's config holding Phi-2's
    attention_dropout 0.0 before its resid_pdrop 0.1; h118)."""
    policy = knobs.rollout_side(flat)
    found = [(x, k) for k, v in policy.items()
             if k.rsplit(".", 1)[-1] in DROPOUT_KEYS and v is not None
             and (x := as_number(v)) is not None]
    if not found:
        return lookup(policy, DROPOUT_KEYS)  # (a word: judged as written)
    _, key = max(found, key=lambda xk: xk[0])
    return flat[key], key


def _sync_in_force(flat: dict[str, Any]) -> dict[str, Any]:
    """``flat`` without TRL's reference-update interval when ``sync_ref_model`` is off: the
    reference is never updated, whatever ``ref_model_sync_steps`` says (it had been shown as
    an interval "within the recipe")."""
    sync, _ = lookup(flat, ("sync_ref_model",))
    if sync is None or as_flag(sync) is not False:
        return flat
    return {k: v for k, v in flat.items()
            if not (k == "ref_model_sync_steps" or k.endswith(".ref_model_sync_steps"))}


def lookup(flat: Mapping[str, Any], names: Iterable[str]) -> tuple[Any, str | None]:
    """The first of ``names`` that ``flat`` holds (a full dotted key, or its last parts), with
    its key; (None, None) when none. A null value counts as not set."""
    for name in names:
        for key, value in flat.items():
            if (key == name or key.endswith("." + name)) and value is not None \
                    and value != "":
                return value, key
    return None, None


#: The share of a model's parameters below which the optimizer trains an adapter: a LoRA adapter
#: is 0.1-5% of the weights, a full fine-tune all of them (frozen embeddings leave 80%+).
ADAPTER_SHARE = 0.2


def _adapter_said(flat: Mapping[str, Any]) -> bool:
    """Whether ``flat`` says if the run trains an adapter (and so which lr range is its)."""
    names = ("use_peft", TRAINABLE_PARAMS, *_LORA_KEYS)
    return any(lookup(flat, (name,))[0] is not None for name in names)


def _is_lora(flat: Mapping[str, Any]) -> bool:
    use_peft, _ = lookup(flat, ("use_peft",))
    if use_peft is not None:
        return bool(as_flag(use_peft))
    trainable = as_number(lookup(flat, (TRAINABLE_PARAMS,))[0])
    total = as_number(lookup(flat, (MODEL_PARAMS,))[0])
    if trainable and total and trainable < ADAPTER_SHARE * total:
        return True  # a log's own words: 161M trainable parameters of a 7B model
    for name in _LORA_KEYS:
        value, _ = lookup(flat, (name,))
        if value is None:
            continue
        if isinstance(value, bool):
            if value:
                return True
        else:
            number = as_number(value)
            if number is not None and number > 0:
                return True
    return False


#: Where verl (``algorithm.adv_estimator``) and OpenRLHF (``--advantage_estimator``) name the
#: advantage estimator.
_ESTIMATOR_KEYS = ("algorithm.adv_estimator", "adv_estimator", "advantage_estimator")
#: The estimators that use no group of completions per prompt: PPO's GAE (a critic's values),
#: REINFORCE++ (the batch whitened: verl's reinforce_plus_plus, OpenRLHF's reinforce) and ReMax
#: (a greedy rollout as baseline). Under them a run samples one completion per prompt
#: (``rollout.n: 1``) and the recipe's group size does not apply. Every other estimator
#: (grpo, rloo, opo, gpg, grpo_passk, reinforce_plus_plus_baseline, group_norm, dr_grpo ...)
#: and an unknown one normalise within groups: their group size is judged.
NO_GROUP_ESTIMATORS = frozenset({"gae", "reinforce_plus_plus", "reinforce", "remax"})


def group_based(flat: Mapping[str, Any]) -> bool:
    """Whether the run's advantage estimator normalises within groups (see
    ``NO_GROUP_ESTIMATORS``; a config that names none is GRPO's)."""
    value, _ = lookup(flat, _ESTIMATOR_KEYS)
    return value is None or str(value).strip().lower() not in NO_GROUP_ESTIMATORS


def read_config(config: Mapping[str, Any], settings: Iterable[Setting] = SETTINGS,
                logged: Mapping[str, float] | None = None) -> Setup:
    """Every setting's reading from ``config`` (``logged``: a metric's configured value where
    the config lacks the knob, e.g. the learning rate's logged peak). The group size of a run
    whose estimator uses no groups (PPO with a critic) is ``NOT_APPLICABLE``: the recipe's
    8-64 is GRPO's, and ``rollout.n: 1`` is right for PPO."""
    flat = _dropout_in_force(_sync_in_force(_kl_in_force(flat_config(config))))
    lora = _is_lora(flat)
    groups = group_based(flat)
    sequence = knobs.sequence_level(flat)
    readings = []
    for s in settings:
        # A ceiling the user set for the model ([recipe.learning_rate]) is its own: no x10 for
        # an adapter on top (a user's 5e-4 had become 5e-3; nu34).
        adapter = lora and not (s.id == "learning_rate" and s.user_high)
        if sequence is not None and s.id in _SEQUENCE_CLIP:
            s = _sequence_clip(s, sequence)
        value, key = lookup(_trained_side(flat) if s.id == "dtype" else _sampling_side(flat)
                            if s.id in _SAMPLER_SETTINGS | _ROLLOUT_SIDE and s.id !=
                            "num_generations" else _sampling_side(flat, data=False)
                            if s.id == "num_generations" else flat, s.names)
        if s.id == "dropout":
            value, key = _policy_dropout(flat)
        if s.kind == "banned" and value is not None:
            # Several lists, one setting (suppress_tokens, bad_words_ids, begin_suppress_tokens):
            # on when any is; the first found empty hid another set beside it (h111).
            side = _sampling_side(flat)
            for name in s.names:
                other, where = lookup(side, (name,))
                if other is not None and judge(s, other, where, flat, adapter).outside:
                    value, key = other, where
                    break
        if s.id in _EXACT_KEYS:
            # Only the trainer's own keys: a Huber loss's or a reward model's nested "delta",
            # an evaluation's or a judge's generation_kwargs.do_sample, are not the rollout's
            # (helper-93, helper-97).
            key = next((n for n in s.names if n in flat), None)
            value = flat[key] if key is not None else None
            greedy = f"gconfig.{GREEDY_SWITCH}"  # AReaL's rollout sampler (c79)
            if s.id == "do_sample" and key is None and greedy in flat \
                    and as_flag(flat[greedy]) is not None:
                value, key = not as_flag(flat[greedy]), greedy
        if value is None and s.id == "max_grad_norm":
            # Written as null: the Trainer and NeMo-RL clip only when it is set. Judged as 0
            # (off), said as written.
            null = next((k for n in s.names for k in flat if (k == n or k.endswith("." + n))
                         and flat[k] is None), None)
            if null is not None:
                readings.append(replace(judge(s, 0, null, flat, adapter), value=None))
                continue
        if value is None and s.metric and logged and s.metric in logged:
            value, key = logged[s.metric], f"logged {s.metric} (peak)"
        if s.id == "num_generations" and not groups and value is not None:
            readings.append(Reading(s, value, key, NOT_APPLICABLE, lora=adapter))
            continue
        if s.id == "dropout" and value is not None:
            reading = judge(s, value, key, flat, adapter)
            if reading.outside:
                # Turned off where the trainer turns it off, not in the model's weights' config.
                _, where = lookup(flat, ("disable_dropout",))
                reading = replace(reading, change=(
                    f"{where} False -> True" if where else
                    f"disable_dropout True (TRL), or {key} {_value_text(value)} -> 0 in the "
                    "model's config"))
            readings.append(reading)
            continue
        if s.id == "min_new_tokens" and value is not None:
            readings.append(_floor_against_budget(judge(s, value, key, flat, adapter), flat))
            continue
        if s.id == "vespo_k_pos" and value is not None and str(
                lookup(flat, ("loss_type",))[0]).strip().lower() != "vespo":
            # (TRL saves VESPO's powers under every loss; only VESPO applies them.)
            readings.append(Reading(s, value, key, NOT_APPLICABLE, lora=adapter))
            continue
        if s.id == "epsilon_high" and as_number(value) is not None and str(
                lookup(flat, ("loss_type",))[0]).strip().lower() == "cispo":
            # Under CISPO it is the importance weight's cap itself (TRL recommends 5), not
            # a clip range's upper bound: engine's CISPO note reads it (trial 73: "0.01 ->
            # 0.28" beside that note's "5.0").
            readings.append(Reading(s, value, key, NOT_APPLICABLE, lora=adapter))
            continue
        reading = judge(s, value, key, flat, adapter)
        if s.id == "num_generations" and reading.verdict == LOW:
            reading = _group_with_batch(reading, flat)
        readings.append(reading)
    return Setup(tuple(readings), lora)


#: Settings read only under their exact keys (a nested key of the same last name is
#: another component's).
_EXACT_KEYS = frozenset({"delta", "do_sample", "min_new_tokens"})
#: The share of the completion budget a minimum length must reach to leave no room to stop.
_FLOOR_OF_BUDGET = 0.5


def _floor_against_budget(reading: Reading, flat: Mapping[str, Any]) -> Reading:
    """A minimum length judged against the completion budget: outside only where it takes
    half the budget or more (min_new_tokens 1 beside a budget of 2,048 is harmless; helper-97);
    not judged with no budget known, nor below 1."""
    floor = as_number(reading.value)
    budget = as_number(lookup(flat, knobs.MAX_LENGTH.names)[0])
    if floor is None:
        # No number (NaN, a list, true, text): refused as its neighbours are (h99).
        return replace(reading, verdict=UNKNOWN, far=False)
    if not math.isfinite(floor) or floor < 1:
        return replace(reading, verdict=OK, far=False)
    if budget is None or not math.isfinite(budget) or budget <= 0:
        return replace(reading, verdict=UNKNOWN, far=False)
    return reading if floor >= _FLOOR_OF_BUDGET * budget else replace(reading, verdict=OK,
                                                                       far=False)


def _group_with_batch(reading: Reading, flat: Mapping[str, Any]) -> Reading:
    """A group size too small, its fix with the batch TRL needs to hold the larger groups:
    TRL refuses a generation batch (per_device_train_batch_size x steps_per_generation x
    GPUs) that num_generations does not divide, so "num_generations 2 -> 16" alone beside a
    batch of 4 would not start (trial 67). The batch grows to keep its prompts per step."""
    if not str(reading.source).endswith("num_generations"):
        return reading  # not TRL's group (Open-Instruct's batch is its own; c79)
    group, target = as_number(reading.value), as_number(reading.target)
    batch = as_number(lookup(flat, ("per_device_train_batch_size",))[0])
    per_gen = as_number(lookup(flat, ("steps_per_generation",))[0]) or as_number(
        lookup(flat, ("gradient_accumulation_steps",))[0]) or 1.0
    # Whole, finite and positive, or no batch to reason about (an infinite batch had crashed
    # preflight; helper-93).
    whole = [int(x) for x in (group, target, batch, per_gen)
             if x is not None and math.isfinite(x) and x >= 1 and float(x).is_integer()]
    if len(whole) < 4:
        return reading
    g, t, b, k = whole
    if (b * k) % t == 0:
        return reading
    # The smallest batch at least the prompts it held per step times the new group, whose
    # generation batch the new group divides.
    unit = t // math.gcd(t, k)
    wanted = max(b, math.ceil(b * t / g))
    new = math.ceil(wanted / unit) * unit
    prompts = max(1, (b * k) // g)
    return replace(reading, change=(
        f"{reading.name} {g} -> {t}, with per_device_train_batch_size {b} -> {new} "
        f"(TRL needs num_generations to divide the generation batch, "
        f"per_device_train_batch_size x steps_per_generation x GPUs; {new} keeps "
        f"{'its ' + str(prompts) + ' prompts' if prompts > 1 else 'its one prompt'} a "
        f"{'step' if k == 1 else 'generation'})"))


#: GSPO's clip range (Zheng et al. 2025, and TRL's GSPO example): a ratio of whole-sequence
#: likelihoods, geometric per token, moves by a few parts in 10,000 per update, so the
#: token-level 0.2 / 0.28 never clips it.
_SEQUENCE_CLIP = {"epsilon": "3e-4", "epsilon_high": "4e-4"}


def _sequence_clip(s: Setting, sequence: str) -> Setting:
    """The clip setting ``s`` judged against GSPO's range when the ratio is a sequence's."""
    target = _SEQUENCE_CLIP[s.id]
    why = (f"{sequence}: a sequence-level ratio moves by a few parts in 10,000 per update, so "
           f"a token-level clip range this wide never clips it (GSPO uses {target})")
    # Far tighter than GSPO's, most sequences of every reused batch are clipped away: the
    # clip fraction is the setting's harm (trial 70: 1e-5 with 4 passes, 70% clipped).
    tight = (f"{sequence}: a clip far tighter than GSPO's {target} clips nearly every "
             "sequence of each reused batch: most of its gradient is thrown away")
    return replace(s, recipe=f"{target} (GSPO: the ratio is a sequence's, {sequence})",
                   source="GSPO (Zheng et al. 2025), TRL's GSPO example", low=1e-4, high=1e-3,
                   far=10.0, risks={HIGH: _links(primary=("ratio_instability",)),
                                    LOW: _links(primary=("ratio_instability",),
                                                contributing=("no_progress",))},
                   why={HIGH: why, LOW: tight}, target=target, targets={})


def read_run(run, settings: Iterable[Setting] = SETTINGS) -> Setup:
    """``read_config`` of a Run's config, with the logged learning rate and beta as the
    values of a config that lacks them."""
    logged = {}
    climbing = False
    for s in settings:
        if s.metric and s.metric in run.frame.columns:
            steps, values = run.finite_series(s.metric)
            if s.id == "learning_rate" and len(values) and float(values.max()) <= 0:
                # 0 at every logged step: a log printing too few digits (verl's
                # "actor/lr:0.000" for 1e-6), not a run that trained at 0.
                continue
            if len(values):
                logged[s.metric] = knobs.schedule_peak(steps, values) \
                    if s.id == "learning_rate" else float(values[-1])
                if s.id == "learning_rate":
                    # Two logged values or one may be inside a warm-up whose rise they cannot
                    # show (ms-swift's 1e-8 at steps 2-3 of 4,389): not judged low either.
                    climbing = len(values) < 3 or (
                        values[-1] > values[0] and int(values.argmax()) == len(values) - 1)
    setup = read_config(run.config or {}, settings, logged)
    lr = setup.get("learning_rate")
    peak = logged.get(knobs.LEARNING_RATE.metric or "")
    configured = as_number(lr.value) if lr is not None else None
    if lr is not None and peak and configured and not str(lr.source).startswith("logged") and (
            configured >= UNAPPLIED_LR * peak and _decays_from_start(run)):
        # The schedule the log shows never came near the configured rate, decaying from its
        # first logged step: a run resumed with an edited learning_rate keeps its checkpoint's
        # optimizer and scheduler (trial 58: 3e-3 in training_args.bin, 1e-4 -> 5e-7 logged,
        # read "learned at 0.003: keep it"). What it trained at is the logged rate.
        judged = judge(lr.setting, peak, f"{LOGGED_LR_NOT_CONFIG} {lr.name} {lr.value}",
                       flat_config(run.config or {}), lr.lora)
        setup = Setup(tuple(judged if r is lr else r for r in setup), setup.lora)
        lr = judged
    coef = setup.get("entropy_coef")
    adaptive = _adaptive_entropy(run, coef, setup.lora) if coef is not None else None
    if adaptive is not None:
        setup = Setup(tuple(adaptive if r is coef else r for r in setup), setup.lora)
    if climbing and lr is not None and lr.verdict == LOW and str(lr.source).startswith(
            "logged"):
        # A warm-up still climbing at the log's end (or a log too early to show one): its
        # peak is not in the log, and what it reached so far says nothing of a rate too low.
        setup = Setup(tuple(replace_verdict(r, UNKNOWN) if r is lr else r for r in setup),
                      setup.lora)
    return setup


#: How many times the logged learning rate's peak a configured one must be to have never
#: applied, and the source a reading then names ("... the config's learning_rate 0.003").
UNAPPLIED_LR = 5.0
LOGGED_LR_NOT_CONFIG = "logged learning_rate (peak), not the config's"


#: The source of an entropy coefficient read off the log under adaptive entropy control.
ADAPTIVE_ENTROPY = "logged entropy_coef (peak) under use_adaptive_entropy, from"


def _adaptive_entropy(run, coef: Reading, lora: bool) -> Reading | None:
    """The entropy coefficient a controller raised (TRL's ``use_adaptive_entropy``: up by
    ``entropy_coef_delta`` each step the entropy is below ``entropy_target``), judged at the
    peak the log shows, its fix the target: trial 60's target of 0.32, above the entropy its
    policy held, took the bonus 0.01 -> 0.54 and read "learning_rate first"). None when the
    config turns no controller on, or the log shows no rise."""
    flat = flat_config(run.config or {})
    said, _ = lookup(flat, ("use_adaptive_entropy",))
    on = None if said is None else as_flag(said)
    coef_metric = Metric.ENTROPY_COEF.value
    if on is False or coef_metric not in run.frame.columns:
        return None
    values = run.finite_series(coef_metric)[1]
    if not len(values) or (on is None and not _climbs_step_by_step(values)):
        # (With no config saying, only a coefficient the log shows climbing as a controller
        # raises it is one: a console capture alone, a tracker's export; helper-79.)
        return None
    # Where it started: the config's value, else (a log read with no config, or whose
    # logged value stood for it) the first logged one.
    start = as_number(coef.value) if coef.source and not str(coef.source).startswith(
        "logged") else float(values[0])
    if start is None or float(values.max()) <= 2 * max(start, 1e-12):
        return None
    peak = float(values.max())
    judged = judge(coef.setting, peak, f"{ADAPTIVE_ENTROPY} {start:g}", flat, lora)
    target = as_number(lookup(flat, ("entropy_target",))[0])
    held = run.finite_series(Metric.ENTROPY.value)[1]
    lowest = float(np.min(rolling_median(held, 5))) if len(held) >= 5 else None
    def rounded(x: float, digits: int) -> str:
        return _num(float(f"{x:.{digits}g}"))

    goal = (f"entropy_target {_num(target)} -> {rounded(lowest * 0.8, 1)} (under "
            f"{rounded(lowest, 2)}, the lowest entropy the run held)" if target is not None
            and lowest is not None and lowest < target else
            f"entropy_target {_num(target)} lower" if target is not None else
            f"entropy_target under {rounded(lowest, 2)} (the lowest entropy the run held)"
            if lowest is not None else "entropy_target lower")
    return replace(judged, change=f"use_adaptive_entropy True -> False, or {goal}: the "
                                  f"controller raised entropy_coef from {start:g} to "
                                  f"{_num(peak)} chasing a target the entropy never reached")


def _climbs_step_by_step(values: Any) -> bool:
    """A logged coefficient a controller moves: by one fixed step up or down at nine logged
    points in ten (TRL's ``entropy_coef_delta``), up more often than down, over 10+ points,
    to 5x its first value or more."""
    if len(values) < 10 or float(values[0]) <= 0:
        return False
    moves = np.diff(values)
    step = float(np.median(np.abs(moves)))
    if step <= 0:
        return False
    fixed = np.abs(np.abs(moves) - step) <= 0.1 * step
    return (float(np.mean(fixed)) >= 0.9 and float(np.mean(moves > 0)) > 0.5
            and float(values.max()) >= 5 * float(values[0]))


def _decays_from_start(run) -> bool:
    """The logged learning rate is highest at its first logged points and lower at its last:
    a schedule already decaying when the log begins (no warm-up climbing to the config's
    rate)."""
    values = run.finite_series(knobs.LEARNING_RATE.metric or "")[1]
    if len(values) < 3:
        return False
    return int(np.argmax(values)) <= 1 and float(values[-1]) < float(values.max())


def as_number(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    try:
        x = float(value)
    except (TypeError, ValueError):
        return None
    return x if not math.isnan(x) else None


as_flag = knobs.as_flag  # (the rules read flags too: defined beside them)


_FP16 = ("float16", "fp16", "half", "torch.float16", "16", "16-mixed", "16-true")
_BF16 = ("bfloat16", "bf16", "torch.bfloat16", "bf16-mixed", "bf16-true")
_FP32 = ("float32", "fp32", "float", "torch.float32", "32", "32-true", "auto")


def judge(s: Setting, value: Any, key: str | None, flat: Mapping[str, Any] | None = None,
          lora: bool = False) -> Reading:
    """The verdict on ``value`` for setting ``s``."""
    flat = flat or {}
    if s.kind == "dtype":
        return _judge_dtype(s, value, key, flat)
    if value is None:
        return Reading(s, None, None, NOT_SET, lora=lora)
    if s.kind == "banned":
        listed = _dict_text("{'v': " + value + "}") if isinstance(value, str) else None
        items = listed["v"] if listed is not None else value
        if not isinstance(items, (list, tuple)):
            return Reading(s, value, key, UNKNOWN)  # no list of tokens: refused (h111)
        on = len(items) > 0
        if on and s.id == "length_decay":
            # (start, factor): the end token's score grows by ``factor`` per token after
            # ``start``; a factor of 1 or less pushes nothing (h111: 1.0 and 0.5 read "remove it").
            factor = as_number(items[1]) if len(items) == 2 else None
            start = as_number(items[0]) if len(items) == 2 else None
            if factor is None or start is None:
                return Reading(s, value, key, UNKNOWN)
            budget = as_number(lookup(flat, knobs.MAX_LENGTH.names)[0])
            on = factor > 1 and (budget is None or start < budget)  # (past it: never acts)
        return Reading(s, value, key, HIGH if on else OK, far=on)
    if s.kind == "flag":
        flag = as_flag(value)
        if s.id == "do_sample" and (isinstance(value, float) or str(value).strip().lower() in (
                "none", "null", "")):
            # An unset value as a tracker keeps it ("None"), or NaN: not greedy (helper-97).
            flag = None
        if s.id == "adaptive_kl" and key and key.endswith(("kl_target", "target_kl")):
            flag = as_number(value) is not None and (as_number(value) or 0) > 0
        if s.id == "overlong_shaping" and key and key.endswith("overlong_buffer_len"):
            flag = (as_number(value) or 0) > 0
        if flag is None:
            return Reading(s, value, key, UNKNOWN)
        return Reading(s, value, key, OK if flag else OFF, far=s.off_is_far and not flag)
    if s.kind == "choice" and s.id == "optimizer":
        text = str(value).strip().lower()
        if isinstance(value, dict) or not text or text in ("none", "null"):
            return Reading(s, value, key, UNKNOWN)
        plain = any(w in text for w in ("sgd", "adagrad", "rmsprop")) and "adam" not in text
        return Reading(s, value, key, OFF if plain else OK, far=plain)
    if s.kind == "choice":
        text = str(value).strip().lower()
        return Reading(s, value, key, OK if text in s.ok_values else OFF)
    x = as_number(value)
    if x is None:
        if s.off_when_zero and as_flag(value) is False:
            return Reading(s, value, key, OFF, far=s.off_above is not None)
        return Reading(s, value, key, UNKNOWN)
    if s.id == "ref_model_sync_steps":
        return Reading(s, value, key, OK if x > 0 else OFF)
    if s.id == "top_k" and x <= 0:
        return Reading(s, value, key, OK)  # -1 or 0: no cut, the whole vocabulary
    if s.negative and x < 0:
        return Reading(s, value, key, UNSAFE, far=True)
    if (s.off_when_zero and x <= 0) or (s.off_above is not None and x >= s.off_above) or (
            math.isinf(x)):
        # Off: no clipping is as far from the recipe as it gets; beta 0 and no entropy bonus
        # are common defaults (TRL's), evidence only with a symptom.
        return Reading(s, value, key, OFF, far=s.off_above is not None)
    scale = LORA_LR_SCALE if lora and s.id == "learning_rate" else 1.0  # the lr's range only
    high = s.high * scale if s.high is not None else None
    if high is not None and x > high * (1 + 1e-9) and not (
            s.id == "learning_rate" and x == high):
        factor = x / high if high > 0 else math.inf
        return Reading(s, value, key, HIGH, far=factor >= s.far, factor=factor, lora=lora,
                       adapter_said=lora or s.id != "learning_rate" or _adapter_said(flat))
    if s.id == "learning_rate" and high is not None and x >= high:
        # "never 5e-6 or more": the ceiling itself is outside the recipe
        return Reading(s, value, key, HIGH, far=False, factor=1.0, lora=lora)
    low = s.low * scale if s.low is not None else None
    if low is not None and x < low * (1 - 1e-9):
        factor = low / x if x > 0 else math.inf
        far_low = s.far if s.far_low is None else s.far_low
        return Reading(s, value, key, LOW, far=factor >= far_low, factor=factor, lora=lora)
    return Reading(s, value, key, OK, lora=lora)


def _judge_dtype(s: Setting, value: Any, key: str | None, flat: Mapping[str, Any]) -> Reading:
    """Pure fp16 (fp16 weights and optimizer states, no fp32 master copy) is unsafe; fp16
    mixed precision (fp32 weights, a loss scaler) is outside the recipe's bf16; bf16 and fp32
    are inside it."""
    fp16_flag = as_flag(lookup(flat, ("fp16",))[0])
    weights = str(value).strip().lower() if value is not None else None
    if weights is not None and weights.startswith("torch."):
        weights = weights[len("torch."):]
    if weights in _FP16:
        return Reading(s, value, key, UNSAFE, far=True)
    if weights in _BF16 or weights in _FP32:
        if fp16_flag:  # fp32/auto weights trained under fp16 autocast with a loss scaler
            return Reading(s, "fp16 (mixed)", "fp16", LOW)
        return Reading(s, value, key, OK)
    if fp16_flag:
        return Reading(s, "fp16 (mixed)", "fp16", LOW)
    bf16 = as_flag(lookup(flat, ("bf16",))[0])
    if bf16:
        return Reading(s, "bf16", "bf16", OK)
    if value is None:
        return Reading(s, None, None, NOT_SET)
    return Reading(s, value, key, UNKNOWN)


#: A learning rate this many times below the recipe's start, on a run whose task is still
#: low, is the first thing to raise (a third: 1e-5 where the start is 1e-4, or 3e-7 where
#: it is 1e-6).
SLOW_LR = 3.0


def slow_lr_words(setup: Setup) -> str | None:
    """'the learning rate 1e-5 is 10x below the recipe's start of 1e-4: try the start', for
    a run whose task is still low though nothing broke; None when the lr is unknown or within
    a third of its start."""
    lr = setup.get("learning_rate")
    x = as_number(lr.value) if lr is not None else None
    start = lr.lr_start if lr is not None else None
    if lr is None or x is None or not start or x <= 0 or x * SLOW_LR > start:
        return None
    return (f"{lr.name} {_num(x)} is {start / x:.0f}x below the recipe's start of "
            f"{_num(start)}: learning this slowly, a larger step is the first thing to try "
            f"({lr.name} {_num(x)} -> {_num(start)})")


#: Where the note of the settings no finding is linked to gives their fixes.
NEXT_RUN = "; for the next run: "


def next_run_settings(notes: Iterable[str]) -> tuple[str, str] | None:
    """(the note, its fixes) of the settings note ``notes`` hold: what a report of a run with
    no finding shows under its verdict."""
    for note in notes:
        if note.startswith("setup ") and NEXT_RUN in note:
            return note, note.split(NEXT_RUN, 1)[1]
    return None


def _maybe_lora_lr(r: Reading) -> bool:
    """An lr read off the log alone (no config says full or LoRA) within a LoRA adapter's
    range: outside the recipe only for a full fine-tune, which nothing shows this run is
    (an mlx-lm LoRA run at 1e-5 had read "for the next run: learning_rate 1e-5 -> 2.5e-6";
    trial 74)."""
    return (r.id == "learning_rate" and not r.lora and r.verdict == HIGH
            and str(r.source or "").startswith("logged")
            and (r.factor or 0.0) <= LORA_LR_SCALE)


def notes(setup: Setup, checks: Iterable[Any], idle: Iterable[str] = (), said: str = "",
          proven: Iterable[str] = (), kept_said: bool = True) -> tuple[str, ...]:
    """One note for the settings far outside the recipe that no fired finding is linked to:
    evidence of nothing here, worth a look (a healthy run stays healthy). ``idle``: settings
    the log shows did not act (no clipping on a run whose grad norms never reached the clip),
    so their link to a catastrophic update explains nothing. ``said``: the advice's text (the
    root cause and the plan); a setting far outside that a fired finding is linked to, but
    that the advice does not name (it answers a reward that never fired first), is a second
    note: an lr 2000x the ceiling is never left unsaid. ``proven``: settings the run learned
    at, said kept ("keep it") when ``kept_said``, else left unsaid (a run still low learned too
    little at them to say either way)."""
    fired = {c.mode for c in checks if getattr(c, "fired", False)}
    idle = set(idle)
    far = [r for r in setup.outside if r.far and not r.setting.note_only]
    quiet = [r for r in far
             if not any(lk.mode in fired or (lk.mode == CATASTROPHIC_UPDATE and fired
                                             and r.id not in idle)
                        for lk in r.links)]
    # A setting the advice already names is not one whose harm "no finding shows" (top_p
    # 0.05, the root cause's first action, also read "for the next run: top_p 0.05 -> 1.0").
    quiet = [r for r in quiet if not _named(r, said)]
    out = []
    # A setting the run itself learned at (nothing fired, the task improved): its own run is
    # better evidence than the recipe's, written for another model size (every healthy trial
    # control on a tiny model had read "for the next run: learning_rate 1e-4 -> 2.5e-6").
    proven = set(proven)
    learned_at = [r for r in setup.outside if r.id in proven]
    quiet = [r for r in quiet if r not in learned_at]
    if learned_at and kept_said:
        out.append("; ".join(f"{r.name} {r.value_text} is {r.how_far(both_ceilings=False)}"
                             for r in learned_at)
                   # (Said as a fallback: "keep it here (2.5e-6 where it breaks)" read as
                   # the value at which it breaks, trial 55.)
                   + ", yet this run learned at it: keep it (should a run at it break: "
                   + "; ".join(r.fix().split(" -> ", 1)[1].split(",", 1)[0]
                               for r in learned_at)
                   + ")")
    if not fired:
        # (Not one the run learned at: said above.)
        # Clearly outside (twice beyond the range or more) on a run where nothing fired: the
        # run did well enough all the same, and the setting is for the next run. Two trials'
        # experts named beta 0.5 and 4 PPO epochs on runs that learned; the report had been
        # silent on them while it named a top_k of 3.
        quiet += [r for r in setup.outside if r not in quiet and not r.far
                  and not r.setting.note_only and (r.factor or 0.0) >= CLEARLY_OUTSIDE
                  and r.links and r not in learned_at and not _maybe_lora_lr(r)]
    if quiet:
        # Its fix said: "with no finding it causes here" alone read as reassurance beside a
        # temperature of 2 that visibly slowed a run no rule could call.
        all_far = all(r.far for r in quiet)
        out.append(f"setup {'far ' if all_far else ''}outside the recipe, no finding here "
                   f"shows its harm{' yet' if all_far else ''}{NEXT_RUN}"
                   + "; ".join(f"{r.fix()} ({r.how_far_of_value()})" for r in quiet))
    if said:
        unsaid = [r for r in far if r not in quiet and r not in learned_at
                  and not _named(r, said)]
        if unsaid:
            out.append("also far outside the recipe, and not yet acted on above: "
                       + "; ".join(r.sentence() for r in unsaid))
    # Clearly outside (twice beyond the range or more) but not far enough to explain a
    # finding alone, on a run where something fired: said once, so a setting the JSON calls
    # "high" is not silent in the text. (On a healthy run it is evidence of nothing: verl's
    # default in-reward beta of 0.001 is on most healthy verl runs.)
    near = [r for r in setup.outside if fired and not r.far and not r.setting.note_only
            and (r.factor or 0.0) >= CLEARLY_OUTSIDE and any(lk.primary for lk in r.links)
            and not _named(r, said) and r not in learned_at]
    # "A contributing risk" only beside a finding it is linked to: it had been said of
    # verl's beta 0.001 beside a NaN (trial 50); the others are for the next run.
    risk = [r for r in near if any(lk.primary and lk.mode in fired for lk in r.links)]
    later = [r for r in near if r not in risk]
    # With its fix: "epsilon 0.6 is 2x the top" left the value to guess (helper-43).
    if risk:
        out.append("also outside the recipe, a contributing risk rather than the cause: "
                   + "; ".join(f"{r.fix()} ({r.how_far_of_value()})" for r in risk))
    if later:
        out.append("also outside the recipe, linked to no finding here; for the next run: "
                   + "; ".join(f"{r.fix()} ({r.how_far_of_value()})" for r in later))
    return tuple(out)


def _named(reading: Reading, said: str) -> bool:
    """Whether the advice's text ``said`` names the setting, by the recipe's name or the
    config's own key."""
    return bool(said) and (reading.id in said
                           or str(reading.source or "").rsplit(".", 1)[-1] in said)


def replace_verdict(reading: Reading, verdict: str) -> Reading:
    """``reading`` with the verdict the log gave it (a completion budget the log shows too
    small, whatever its number)."""
    return replace(reading, verdict=verdict)


# --- overrides ----------------------------------------------------------------------------------


def with_overrides(overrides: Mapping[str, Mapping[str, float]],
                   settings: Iterable[Setting] = SETTINGS) -> tuple[Setting, ...]:
    """The recipe with a user's ranges: ``{"learning_rate": {"high": 1e-4}}`` (keys ``low``,
    ``high``, ``far``; a learning rate's floor moves with its ceiling unless set). Unknown knobs
    or keys raise ValueError with what exists."""
    by_id = {s.id: s for s in settings}
    for name, values in overrides.items():
        if name not in by_id:
            raise ValueError(f"no recipe knob {name!r}; knobs: {', '.join(by_id)}")
        bad = set(values) - {"low", "high", "far"}
        if bad:
            raise ValueError(f"recipe knob {name} takes low, high and far, not "
                             f"{', '.join(sorted(bad))}")
        for k, v in values.items():
            if not isinstance(v, (int, float)) or isinstance(v, bool) or not math.isfinite(v) \
                    or v < 0 or (k == "far" and v < 1):
                raise ValueError(f"recipe knob {name}.{k} must be a finite number"
                                 f"{' of at least 1' if k == 'far' else ' of at least 0'}, "
                                 f"got {v!r}")
        changes: dict[str, Any] = {k: float(v) for k, v in values.items()}
        base = by_id[name]
        if base.low_follows_high and "high" in values and "low" not in values \
                and base.low is not None and base.high:
            changes["low"] = base.low * float(values["high"]) / base.high
        moved = replace(base, **changes, user_high=base.user_high or "high" in values)
        if {"low", "high"} & set(values):
            # The chapter's words for its range would contradict the range now applied.
            moved = replace(moved, recipe=f"{moved.range_text} {USER_RECIPE}")
        by_id[name] = moved
    return tuple(by_id.values())


# --- text ---------------------------------------------------------------------------------------


def _num(x: float) -> str:
    return knob_value(x)


def _value_text(value: Any) -> str:
    if isinstance(value, bool) or value is None:
        return str(value).lower()
    x = as_number(value)
    if x is not None:
        if math.isinf(x):
            return "inf"
        return _num(x)
    return str(value)


def _jsonable(value: Any) -> Any:
    if isinstance(value, (bool, int, str)) or value is None:
        return value
    x = as_number(value)
    if x is not None and math.isfinite(x):
        return x
    return str(value)


# --- values no trainer takes -------------------------------------------------------------


#: What a number setting can hold at all, whatever the recipe says: (the least value, whether
#: the least is excluded, whether it counts things). A value outside is a typo or a
#: misunderstanding, not a setup to judge: TRL, verl and the optimizers refuse it too.
#: (beta and the entropy bonus take any sign: the recipe says what a negative one does;
#: max_grad_norm and top_k at 0 or below mean off.)
_DOMAIN: dict[str, tuple[float, bool, bool]] = {
    "learning_rate": (0.0, False, False), "num_generations": (1, False, True),
    "temperature": (0.0, False, False), "top_p": (0.0, True, False),
    "epsilon": (0.0, False, False), "epsilon_high": (0.0, False, False),
    "max_completion_length": (1, False, True), "num_iterations": (1, False, True),
    "top_k": (-1, False, True), "ref_model_sync_steps": (-1, False, True),
    "min_new_tokens": (0, False, True), "epsilon_cutoff": (0.0, False, False),
    "eta_cutoff": (0.0, False, False), "typical_p": (0.0, True, False),
    "num_beams": (1, False, True),
}


def _shown(reading: Reading) -> str:
    """A value as the config wrote it; words quoted ('fast'). (YAML reads 1e-6, without a
    dot, as text: a number written so is shown as written.)"""
    value = reading.value
    if not isinstance(value, str):
        return reading.value_text
    numeric = as_number(value) is not None or value.strip().lower() == "nan"
    return value.strip() if numeric else repr(value)


def refuse_bad_values(setup: Setup, source: str = "") -> None:
    """A ConfigError naming every setting whose value no trainer takes ('fast', nan, a
    negative lr, a group of 16.5): refused in a training config given to preflight,
    ``--train-config`` or a config file's ``[config]``."""
    from grpo_doctor.errors import ConfigError

    bad = [problem for r in setup.known if (problem := bad_value(r)) is not None]
    if bad:
        raise ConfigError(f"{source + ': ' if source else ''}{'; '.join(bad)}")


def bad_value(reading: Reading) -> str | None:
    """Why a number setting's value is no number it can hold ("learning_rate: 'fast' is not
    a number"), or None. An interpolation left unresolved (``${oc.env:LR}``) is not judged,
    not an error."""
    s, value = reading.setting, reading.value
    if s.kind == "banned" and reading.verdict == UNKNOWN:
        what = "a (start, factor) pair" if s.id == "length_decay" else "a list of token ids"
        return f"{reading.name}: {_shown(reading)} is not {what}"
    if s.kind != "number" or value is None:
        return None
    if isinstance(value, str) and "${" in value:
        return None
    x = as_number(value)
    if x is None:
        if reading.verdict != UNKNOWN:
            return None  # beta: false, entropy_coef: off: words the recipe reads
        if reading.name.endswith(KL_LOSS_SWITCH):  # (read as beta only when switched off)
            return f"{reading.name}: {_shown(reading)} is not true or false"
        if isinstance(value, bool) and reading.name.endswith("clip_higher"):
            return None  # a stack's DAPO switch (clip_higher: true), not Open-Instruct's bound
        return f"{reading.name}: {_shown(reading)} is not a number"
    if math.isnan(x):
        return f"{reading.name}: {_shown(reading)} is not a number"
    if math.isinf(x):
        return None if s.off_above is not None else \
            f"{reading.name}: {_shown(reading)} is not a finite number"
    domain = _DOMAIN.get(s.id)
    if domain is None:
        return None
    least, open_, whole = domain
    if whole and not x.is_integer():
        return f"{reading.name}: {_shown(reading)} is not a whole number"
    if x < least or (open_ and x == least):
        bound = f"above {knob_value(least)}" if open_ else f"at least {knob_value(least)}"
        top = " and at most 1" if s.id == "top_p" else ""
        return f"{reading.name}: {_shown(reading)} is out of range (it must be {bound}{top})"
    if s.id == "top_p" and x > 1:
        return f"{reading.name}: {_shown(reading)} is out of range (it must be above 0 and at " \
            "most 1)"
    if s.id in ("epsilon_cutoff", "eta_cutoff") and x >= 1:
        # (transformers refuses it: no run was sampled so; h105)
        return f"{reading.name}: {_shown(reading)} is out of range (it must be below 1)"
    if s.id == "typical_p" and x > 1:
        return f"{reading.name}: {_shown(reading)} is out of range (it must be at most 1)"
    return None
