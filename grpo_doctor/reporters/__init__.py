"""Reporters: render a Diagnosis (or an audit) from its record form. Only ``terminal`` imports
rich; the others are plain text so they can run anywhere (CI logs, pull requests)."""

from __future__ import annotations

REPORT_FORMATS = ("terminal", "json", "markdown")
