"""The rules, one failure mode per module. ``RULES`` is the ordered registry."""

from __future__ import annotations

import importlib

from grpo_doctor.rules.base import Outcome, Param, Rule, Skip, _unbound

_MODULES = [
    "numerical_failure",
    "no_learning_signal",
    "entropy_collapse",
    "advantage_collapse",
    "kl_drift",
    "likelihood_displacement",
    "grad_explosion",
    "ratio_instability",
    "reward_hacking",
    "length_hacking",
    "format_gaming",
    "tool_spam",
    "tool_failure",
    "reward_overfit",
    "entropy_blowup",
    "no_progress",
]


#: The checks of agentic runs (tool calls): a run with no tool logs them only as one gap.
AGENTIC = ("tool_spam", "tool_failure")


def _load() -> tuple[Rule, ...]:
    rules = []
    for name in _MODULES:
        module = importlib.import_module(f"grpo_doctor.rules.{name}")
        rule = module.RULE
        if rule.detect is _unbound:
            raise TypeError(f"rule {rule.id}: no function decorated with @RULE.detects")
        if not rule.doc:  # the module docstring is the rule's documentation
            object.__setattr__(rule, "doc", module.__doc__ or "")
        rules.append(rule)
    return tuple(rules)


RULES: tuple[Rule, ...] = _load()


def rule_named(name: str) -> Rule:
    """A rule by its id, accepting ``entropy-collapse`` and ``entropy_collapse``."""
    key = name.strip().replace("-", "_").lower()
    for rule in RULES:
        if rule.id == key:
            return rule
    raise KeyError(name)


__all__ = ["RULES", "Outcome", "Param", "Rule", "Skip", "rule_named"]
