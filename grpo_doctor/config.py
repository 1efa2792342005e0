"""User configuration: ``[tool.grpo-doctor]`` in pyproject.toml, or a grpo-doctor.toml.

```toml
[tool.grpo-doctor]              # in grpo-doctor.toml the table is the top level
fail-on = "warning"
ignore = ["kl_drift"]
[tool.grpo-doctor.map]          # canonical metric = column in your logs
entropy = "policy/ent"
[tool.grpo-doctor.rules.entropy_collapse]
critical_ratio = 0.05
[tool.grpo-doctor.recipe.learning_rate]   # the chapter's recipe, your ranges (recipe.py)
high = 1e-4
[tool.grpo-doctor.config]       # the training run's settings, for logs that hold none
learning_rate = 3e-3
```
"""

from __future__ import annotations

import math
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from grpo_doctor.errors import ConfigError, GrpoDoctorError

if TYPE_CHECKING:
    from grpo_doctor.rules import Rule

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

FAIL_ON = ("critical", "warning", "inconclusive", "never")
#: ``watch`` and the trainer callback: logged points a raised finding must be clear before it
#: is reported cleared (and below critical before a critical one eases to warning). Real runs
#: flap in and out of a threshold within a few points; 20 holds them (issue 23 item 8).
CLEAR_AFTER = 20


def failing_statuses(fail_on: str, *, strict: bool = False) -> frozenset[str]:
    """The run statuses that fail under ``--fail-on`` (critical | warning | inconclusive:
    anything short of a clean bill of health | never); ``strict`` adds inconclusive to any of
    them but never."""
    failing = {"critical": frozenset({"critical"}), "warning": frozenset({"critical", "warning"}),
               "inconclusive": frozenset({"critical", "warning", "inconclusive"}),
               "never": frozenset()}[fail_on]
    return failing | {"inconclusive"} if strict and failing else failing


@dataclass(frozen=True)
class DoctorConfig:
    """What the engine is told: rule parameters, which rules run."""

    params: Mapping[str, Mapping[str, float]] = field(default_factory=dict)
    select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    file: str | None = None  # the config file these came from (None: defaults, flags, code)
    #: The recipe's ranges overridden ({"learning_rate": {"high": 1e-4}}; see recipe.py).
    recipe: Mapping[str, Mapping[str, float]] = field(default_factory=dict)
    #: The training run's own settings, for logs that hold none (the file's ``[config]``):
    #: a log's own config wins where both set a key.
    run_config: Mapping[str, Any] = field(default_factory=dict)
    #: Reward components' roles given by the user (name -> role; ``--reward-role``,
    #: ``[rewards]``): they win over what the checks infer from names and values.
    reward_roles: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        # One check named as a string is that check, not its letters ("unknown failure mode
        # 'k'" for select="kl_drift", helper-77).
        for name in ("select", "ignore"):
            value = getattr(self, name)
            if isinstance(value, str):
                object.__setattr__(self, name, (value,))

    def settings_of_recipe(self):
        """The recipe with this configuration's overrides (``recipe.SETTINGS`` when none)."""
        from grpo_doctor import recipe

        try:
            return recipe.with_overrides(self.recipe)
        except ValueError as exc:
            raise ConfigError(str(exc)) from None

    def params_for(self, rule: Rule) -> dict[str, float]:
        values = rule.defaults()
        for key, value in self.params.get(rule.id, {}).items():
            if key not in values:
                raise ConfigError(
                    f"{rule.id} has no parameter {key!r}; it has {', '.join(values)}"
                )
            values[key] = float(value)
        return values

    def applied(self) -> dict[str, Any]:
        """What a report says about this configuration: the config file applied (None:
        defaults, command line or library only), the checks ignored (by ignore, select or the
        file) and the thresholds overridden (the JSON contract's ``config``)."""
        from grpo_doctor.rules import RULES

        run = {r.id for r in self.rules()}
        out: dict[str, Any] = {
            "file": self.file, "ignored": [r.id for r in RULES if r.id not in run],
            "overrides": {rule: dict(values) for rule, values in self.params.items()}}
        if self.select:  # the user chose the checks: healthy can be said of those alone
            out["selected"] = [r.id for r in self.rules()]
        if self.recipe:
            out["recipe"] = {k: dict(v) for k, v in self.recipe.items()}
        if self.run_config:
            out["run_config"] = dict(self.run_config)
        if self.reward_roles:
            out["reward_roles"] = dict(self.reward_roles)
        return out

    def rules(self) -> list[Rule]:
        from grpo_doctor.rules import RULES, rule_named

        try:
            selected = [rule_named(n) for n in self.select] if self.select else list(RULES)
            ignored = {rule_named(n).id for n in self.ignore}
        except KeyError as exc:
            raise ConfigError(
                f"unknown failure mode {exc.args[0]!r}; modes: {', '.join(r.id for r in RULES)}"
            ) from None
        return [r for r in selected if r.id not in ignored]


@dataclass(frozen=True)
class Settings:
    """Everything a user can configure, merged from file and command line."""

    column_map: dict[str, str] = field(default_factory=dict)
    params: dict[str, dict[str, float]] = field(default_factory=dict)
    select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    fail_on: str = "critical"
    source: str | None = None  # the file the settings came from
    # The column_map keys that came from the config file (not overridden on the command line).
    map_from_file: frozenset[str] = frozenset()
    recipe: dict[str, dict[str, float]] = field(default_factory=dict)  # [recipe.<knob>]
    run_config: dict[str, Any] = field(default_factory=dict)  # [config]
    clear_after: int = CLEAR_AFTER  # clear-after: live alerts' hysteresis (monitor.py)
    reward_roles: dict[str, str] = field(default_factory=dict)  # [rewards], --reward-role

    def doctor_config(self) -> DoctorConfig:
        """The engine's configuration. With every check ignored a run is inconclusive (the
        Diagnosis says so), never healthy; its report names the config that ignored them."""
        return DoctorConfig(params=self.params, select=self.select, ignore=self.ignore,
                            file=self.source, recipe=self.recipe, run_config=self.run_config,
                            reward_roles=self.reward_roles)

    def applied_config(self) -> dict[str, Any]:
        """What a report says about its configuration: the file applied (None: defaults and
        command line only), the checks ignored (by --ignore, --select or the file), and the
        thresholds overridden."""
        return self.doctor_config().applied()

    def checked_map(self) -> dict[str, str]:
        """``column_map`` keyed by canonical metric names (a ``ColumnMap``: the file's entries
        optional per log); a ConfigError (``--map: ...``) for a name that is not one."""
        from grpo_doctor.metrics import ColumnMap, parse_metric

        try:
            return ColumnMap({parse_metric(k): v for k, v in self.column_map.items()},
                             optional=[parse_metric(k) for k in self.map_from_file])
        except ValueError as exc:
            raise ConfigError(f"--map: {exc}") from None


def read_toml(path: Path) -> dict[str, Any]:
    from grpo_doctor.files import check_input, read_bytes

    try:
        check_input(path)
        text = read_bytes(path).decode("utf-8")
        return tomllib.loads(text)
    except GrpoDoctorError as exc:
        raise ConfigError(str(exc)) from None
    except UnicodeDecodeError:
        raise ConfigError(f"{path}: invalid TOML (not UTF-8 text)") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: invalid TOML ({' '.join(str(exc).split())})") from None
    except RecursionError:
        raise ConfigError(f"{path}: invalid TOML (nested too deeply)") from None


def find_config(start: Path | None = None) -> Path | None:
    """grpo-doctor.toml, or a pyproject.toml with [tool.grpo-doctor], from ``start`` upwards.

    A pyproject.toml that is not valid TOML is an error, not a file without settings: the
    settings it may hold would otherwise be dropped without a word."""
    here = (start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        own = folder / "grpo-doctor.toml"
        if own.exists():
            return own
        project = folder / "pyproject.toml"
        if project.exists():
            tool = read_toml(project).get("tool", {})
            if isinstance(tool, dict) and "grpo-doctor" in tool:
                return project
    return None


def _table(path: Path) -> dict[str, Any]:
    data = read_toml(path)
    if path.name == "pyproject.toml":
        tool = data.get("tool", {})
        if not isinstance(tool, dict):  # tool = 5
            raise ConfigError(f"{path}: [tool] must be a table")
        table = tool.get("grpo-doctor", {})
        if not isinstance(table, dict):
            raise ConfigError(f"{path}: [tool.grpo-doctor] must be a table")
        return dict(table)
    return data


def check_params(params: Mapping[str, Mapping[str, float]], where: str) -> None:
    """Every rule named exists, every parameter is one of its own, every value is finite and
    within the parameter's bounds (no negative threshold)."""
    from grpo_doctor.rules import RULES, rule_named

    for key, values in params.items():
        try:
            rule = rule_named(key)
        except KeyError:
            raise ConfigError(f"{where}: unknown rule {key!r}; rules: "
                              f"{', '.join(r.id for r in RULES)}") from None
        own = {p.name: p for p in rule.params}
        for name, value in values.items():
            if name not in own:
                raise ConfigError(f"{where}: {rule.id} has no parameter {name!r}; it has "
                                  f"{', '.join(own)}")
            if not math.isfinite(value):
                raise ConfigError(f"{where}: {rule.id}.{name} must be a finite number, got "
                                  f"{value!r}")
            bounds = own[name].out_of_bounds(value)
            if bounds is not None:
                raise ConfigError(f"{where}: {rule.id}.{name} must be {bounds}, got {value:g}")


def mode_list(items: Iterable[str]) -> tuple[str, ...]:
    """Failure modes as given to --select/--ignore or in a config: each item may hold several,
    comma-separated (``--select kl_drift,entropy_collapse``); blanks dropped."""
    return tuple(name.strip() for item in items for name in item.split(",") if name.strip())


def check_modes(names: Iterable[str], where: str) -> None:
    """Every failure mode named (in select or ignore) exists."""
    from grpo_doctor.rules import RULES, rule_named

    for name in names:
        try:
            rule_named(name)
        except KeyError:
            raise ConfigError(f"{where}: unknown failure mode {name!r}; modes: "
                              f"{', '.join(r.id for r in RULES)}") from None


def _strs(value: Any, what: str, path: Path) -> tuple[str, ...]:
    if isinstance(value, str):
        return (value,)
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return tuple(value)
    raise ConfigError(f"{path}: {what} must be a list of strings")


def load_settings(path: Path | None = None, *, search: bool = True) -> Settings:
    """Settings from ``path``, or from the nearest config file, or the defaults."""
    if path is None and search:
        path = find_config()
    if path is None:
        return Settings()
    if not path.exists():
        raise ConfigError(f"{path}: config file not found")
    table = _table(path)
    known = {"map", "rules", "select", "ignore", "fail-on", "fail_on", "recipe", "config",
             "clear-after", "clear_after", "rewards"}
    unknown = set(table) - known
    if unknown:
        raise ConfigError(f"{path}: unknown setting{'s' if len(unknown) > 1 else ''} "
                          f"{', '.join(sorted(unknown))}")
    column_map = table.get("map", {})
    if not isinstance(column_map, dict) or not all(isinstance(v, str) for v in
                                                   column_map.values()):
        raise ConfigError(f"{path}: [map] must map canonical metrics to column names")
    params: dict[str, dict[str, float]] = {}
    rules = table.get("rules", {})
    if not isinstance(rules, dict):
        raise ConfigError(f"{path}: [rules] must be a table of rule tables")
    for rule, values in rules.items():
        if not isinstance(values, dict):
            raise ConfigError(f"{path}: [rules.{rule}] must be a table of parameters")
        if not all(isinstance(v, (int, float)) and not isinstance(v, bool)
                   for v in values.values()):
            raise ConfigError(f"{path}: [rules.{rule}] parameters must be numbers")
        params[rule.replace("-", "_")] = {k: float(v) for k, v in values.items()}
    check_params(params, str(path))
    fail_on = str(table.get("fail-on", table.get("fail_on", "critical")))
    if fail_on not in FAIL_ON:
        raise ConfigError(f"{path}: fail-on must be one of {', '.join(FAIL_ON)}")
    select = mode_list(_strs(table.get("select", []), "select", path))
    ignore = mode_list(_strs(table.get("ignore", []), "ignore", path))
    check_modes(select, f"{path}: select")
    check_modes(ignore, f"{path}: ignore")
    recipe_table = table.get("recipe", {})
    if not isinstance(recipe_table, dict) or not all(isinstance(v, dict)
                                                     for v in recipe_table.values()):
        raise ConfigError(f"{path}: [recipe] must be a table of knob tables "
                          "([recipe.learning_rate] high = 1e-4)")
    check_recipe(recipe_table, str(path))
    run_config = table.get("config", {})
    if not isinstance(run_config, dict):
        raise ConfigError(f"{path}: [config] must be a table of the run's settings")
    if run_config:
        # As --train-config and preflight refuse them: a temperature of "hot", a group of
        # 16.5 (helper-73: they had been notes on a diagnosis, exit 1).
        from grpo_doctor.recipe import flat_config, read_config, refuse_bad_values

        refuse_bad_values(read_config(flat_config(run_config)), f"{path}: [config]")
    clear_after = check_clear_after(table.get("clear-after", table.get("clear_after",
                                                                     CLEAR_AFTER)),
                                    f"{path}: clear-after")
    rewards = table.get("rewards", {})
    if not isinstance(rewards, dict):
        raise ConfigError(f"{path}: [rewards] must be a table of roles ([rewards] correctness "
                          "= [\"mc_idx_reward\"])")
    reward_roles = reward_role_table({role: _strs(names, f"[rewards] {role}", path)
                                      for role, names in rewards.items()}, f"{path}: [rewards]")
    return Settings(
        column_map=dict(column_map), params=params, select=select, ignore=ignore,
        fail_on=fail_on, source=str(path), map_from_file=frozenset(column_map),
        recipe={k: dict(v) for k, v in recipe_table.items()}, run_config=dict(run_config),
        clear_after=clear_after, reward_roles=reward_roles,
    )


def reward_role_table(by_role: Mapping[str, Iterable[str]], where: str) -> dict[str, str]:
    """``{"correctness": ["mc_idx_reward"]}`` -> ``{"mc_idx_reward": "correctness"}``: each
    role one of ``metrics.REWARD_ROLES``, names comma-separable, no name given two roles."""
    from grpo_doctor.metrics import REWARD_ROLES

    out: dict[str, str] = {}
    for role, names in by_role.items():
        if role not in REWARD_ROLES:
            raise ConfigError(f"{where}: unknown reward role {role!r}; roles: "
                              f"{', '.join(REWARD_ROLES)}")
        for name in (n.strip() for item in names for n in item.split(",")):
            if not name:
                continue
            if out.get(name, role) != role:
                raise ConfigError(f"{where}: {name!r} is given two roles ({out[name]}, {role})")
            out[name] = role
    return out


def check_clear_after(value: Any, where: str) -> int:
    """A number of logged points: a whole number of at least 1."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ConfigError(f"{where} must be a whole number of logged points, at least 1, "
                          f"got {value!r}")
    return value


def check_recipe(overrides: Mapping[str, Mapping[str, Any]], where: str) -> None:
    """Every knob named exists in the recipe and takes the ranges given."""
    from grpo_doctor import recipe

    try:
        recipe.with_overrides(overrides)
    except ValueError as exc:
        raise ConfigError(f"{where}: {exc}") from None



def parse_assignments(items: Iterable[str], what: str) -> dict[str, str]:
    """``["a=b", "c=d"]`` -> ``{"a": "b", "c": "d"}``, with a clear error for a bad item."""
    out = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip() or not value.strip():
            raise ConfigError(f"{what} takes KEY=VALUE, got {item!r}")
        out[key.strip()] = value.strip()
    return out


def merge(settings: Settings, *, column_map: Mapping[str, str] = {},
          sets: Mapping[str, str] = {}, select: Iterable[str] = (),
          ignore: Iterable[str] = (), fail_on: str | None = None,
          clear_after: int | None = None, reward_roles: Iterable[str] = ()) -> Settings:
    """Command-line values on top of file settings (the command line wins)."""
    by_role: dict[str, list[str]] = {}
    for item in reward_roles:
        role, sep, names = item.partition("=")
        if not sep or not role.strip() or not names.strip():
            raise ConfigError(f"--reward-role takes ROLE=NAME[,NAME], got {item!r}")
        by_role.setdefault(role.strip(), []).append(names)
    given_roles = reward_role_table(by_role, "--reward-role")
    params = {k: dict(v) for k, v in settings.params.items()}
    given: dict[str, dict[str, float]] = {}
    for key, value in sets.items():
        rule, dot, name = key.rpartition(".")
        if not dot or not rule:
            raise ConfigError(f"--set takes RULE.PARAM=VALUE, got {key}={value}")
        try:
            number = float(value)
        except ValueError:
            raise ConfigError(f"--set {key}: {value!r} is not a number") from None
        given.setdefault(rule.replace("-", "_"), {})[name] = number
    select, ignore = mode_list(select), mode_list(ignore)
    check_params(given, "--set")
    check_modes(select, "--select")
    check_modes(ignore, "--ignore")
    for rule, values in given.items():
        params.setdefault(rule, {}).update(values)
    if fail_on is not None and fail_on not in FAIL_ON:
        raise ConfigError(f"--fail-on must be one of {', '.join(FAIL_ON)}, got {fail_on!r}")
    return Settings(
        column_map={**settings.column_map, **column_map}, params=params,
        select=tuple(select) or settings.select, ignore=settings.ignore + tuple(ignore),
        fail_on=fail_on or settings.fail_on, source=settings.source,
        map_from_file=settings.map_from_file - set(column_map),
        recipe=settings.recipe, run_config=settings.run_config,
        clear_after=(settings.clear_after if clear_after is None
                     else check_clear_after(clear_after, "--clear-after")),
        reward_roles={**settings.reward_roles, **given_roles},
    )
