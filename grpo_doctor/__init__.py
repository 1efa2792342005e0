"""grpo-doctor: forensics for GRPO training logs.

    >>> import grpo_doctor
    >>> run = grpo_doctor.load_run("run.csv")
    >>> diagnosis = grpo_doctor.diagnose(run)
    >>> diagnosis.to_dict()["status"]
    >>> grpo_doctor.diagnose_frame(df)                          # a pandas DataFrame
    >>> grpo_doctor.diagnose_log_history(trainer.state.log_history,
    ...                                  run_config=trainer.args.to_dict())

Attributes load lazily so that ``grpo-doctor --help`` does not pay for pandas and numpy.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from grpo_doctor import display
from grpo_doctor.version import package_version

_EXPORTS = {
    "load_run": "grpo_doctor.sources",
    "load_runs": "grpo_doctor.sources",
    "diagnose": "grpo_doctor.engine",
    "diagnose_frame": "grpo_doctor.api",
    "diagnose_log_history": "grpo_doctor.api",
    "run_from_frame": "grpo_doctor.importers.in_memory",
    "run_from_log_history": "grpo_doctor.importers.in_memory",
    "DoctorConfig": "grpo_doctor.config",
    "Diagnosis": "grpo_doctor.findings",
    "Check": "grpo_doctor.findings",
    "Finding": "grpo_doctor.findings",
    "Status": "grpo_doctor.findings",
    "Run": "grpo_doctor.store",
    "RULES": "grpo_doctor.rules",
    "Metric": "grpo_doctor.metrics",
    "GrpoDoctorError": "grpo_doctor.errors",
}

if TYPE_CHECKING:
    from grpo_doctor.api import diagnose_frame, diagnose_log_history  # noqa: F401
    from grpo_doctor.config import DoctorConfig  # noqa: F401
    from grpo_doctor.engine import diagnose  # noqa: F401
    from grpo_doctor.errors import GrpoDoctorError  # noqa: F401
    from grpo_doctor.findings import Check, Diagnosis, Status  # noqa: F401
    from grpo_doctor.findings import Check as Finding  # noqa: F401
    from grpo_doctor.importers.in_memory import run_from_frame, run_from_log_history  # noqa: F401
    from grpo_doctor.metrics import Metric  # noqa: F401
    from grpo_doctor.rules import RULES  # noqa: F401
    from grpo_doctor.sources import load_run, load_runs  # noqa: F401
    from grpo_doctor.store import Run  # noqa: F401


def _markdown(diagnosis: Diagnosis) -> str:
    from grpo_doctor.reporters.markdown import render_markdown

    return render_markdown(diagnosis)


# A Diagnosis shows its Markdown report in a notebook. Registered here, the one module that runs
# whenever any of the package is imported, and the top layer, free to name the reporter.
display.register_markdown(_markdown)


def __getattr__(name: str) -> Any:
    if name == "__version__":  # lazily: importlib.metadata is not free at start-up
        return package_version()
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'grpo_doctor' has no attribute {name!r}")
    import importlib

    attr = "Check" if name == "Finding" else name
    return getattr(importlib.import_module(module), attr)


__all__ = sorted(_EXPORTS)
