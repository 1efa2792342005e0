"""Reporters: render a Diagnosis (or an audit) from its record form. Only ``terminal`` imports
rich; the others are plain text so they can run anywhere (CI logs, pull requests)."""

from __future__ import annotations


def config_line(config: dict | None) -> str | None:
    """What a report says about its configuration (``Diagnosis.config``), in one line of plain
    text (names not escaped: the caller escapes for its output); None when not recorded, or
    when nothing was applied (no file, nothing ignored or set: the JSON still says so)."""
    if config is None or not (config.get("file") or config.get("ignored")
                              or config.get("overrides")):
        return None
    parts = [f"config: {config.get('file') or 'defaults (no config file)'}"]
    if config.get("ignored"):
        parts.append(f"checks ignored: {', '.join(config['ignored'])}")
    overrides = [f"{rule}.{name}={value:g}" for rule, values in
                 (config.get("overrides") or {}).items() for name, value in values.items()]
    if overrides:
        parts.append(f"thresholds set: {', '.join(overrides)}")
    return " · ".join(parts)
