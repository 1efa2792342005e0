"""The package as a Python user meets it: errors in Python's words, and short reprs for a
notebook (a cell ending in a Diagnosis shows its Markdown report)."""

import subprocess
import sys

import pytest

import grpo_doctor
from grpo_doctor.errors import InputError
from tests.helpers import REPO

WIDE = REPO / "tests" / "fixtures" / "csv" / "wide.csv"


def _three_runs(tmp_path):
    rows = ["run_id,step,reward"] + [f"{run},{i},{0.1 * i}" for run in "abc"
                                     for i in range(1, 21)]
    path = tmp_path / "multi.csv"
    path.write_text("\n".join(rows) + "\n")
    return path


def test_load_run_on_several_runs_names_the_keyword_not_the_cli_option(tmp_path):
    path = _three_runs(tmp_path)
    with pytest.raises(InputError) as raised:
        grpo_doctor.load_run(path)
    assert str(raised.value) == (f"{path} holds 3 runs (a, b, c); pick one with "
                                 "load_run(path, run=NAME), or read them all with "
                                 "load_runs(path)")
    assert "--run" not in str(raised.value)
    assert grpo_doctor.load_run(path, run="b").name == "b"  # what it says works
    assert [r.name for r in grpo_doctor.load_runs(path)] == ["a", "b", "c"]


def test_a_diagnosis_and_a_run_show_short_in_a_notebook():
    run = grpo_doctor.load_run(WIDE)
    diagnosis = grpo_doctor.diagnose(run)
    assert repr(run) == "Run(name='wide', format='csv', steps=12 (1..12), metrics=9)"
    assert repr(diagnosis) == ("Diagnosis(run='wide', status='warning', "
                               "findings=[numerical_failure:warning@7])")
    from grpo_doctor.reporters.markdown import render_markdown

    assert diagnosis._repr_markdown_() == render_markdown(diagnosis)
    assert diagnosis._repr_markdown_().startswith("## ")


def test_a_notebook_that_imported_only_the_package_shows_the_markdown_report():
    """Jupyter calls ``_repr_markdown_``; the reporter is registered by the package's top (the
    Diagnosis, low in the layers, does not import it), and imported only when displayed."""
    code = f"""if True:
        import sys
        import grpo_doctor
        diagnosis = grpo_doctor.diagnose(grpo_doctor.load_run({str(WIDE)!r}))
        assert "grpo_doctor.reporters.markdown" not in sys.modules
        shown = diagnosis._repr_markdown_()
        from grpo_doctor.reporters.markdown import render_markdown
        assert shown == render_markdown(diagnosis), shown
        print(shown.splitlines()[0])
    """
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=REPO, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("## ")


def test_the_library_dict_is_the_cli_json(capsys):
    """The README: ``to_dict()`` is exactly the JSON contract; the library's diagnosis said
    ``config: None`` where the CLI said what was applied."""
    import json

    from grpo_doctor import diagnose, load_run
    from grpo_doctor.config import DoctorConfig
    from tests.helpers import REPO, run_cli

    path = str(REPO / "grpo_doctor" / "examples" / "kl-drift.csv")
    _, out, _ = run_cli(capsys, "diagnose", path, "-f", "json")
    assert diagnose(load_run(path)).to_dict() == json.loads(out)
    ignored = diagnose(load_run(path), DoctorConfig(ignore=("kl_drift",))).to_dict()["config"]
    assert ignored == {"file": None, "ignored": ["kl_drift"], "overrides": {}}


def test_a_diagnosis_lists_its_findings_in_the_order_they_began():
    run = grpo_doctor.load_run(REPO / "tests/fixtures/corpus/20_lr_warmup_to_0.3")
    d = grpo_doctor.diagnose(run)
    onsets = [c.onset_step for c in d.findings]
    assert len(onsets) >= 3 and onsets == sorted(onsets)
    assert [c.mode for c in d.checks] == [c.mode for c in sorted(
        d.checks, key=lambda c: [r.id for r in grpo_doctor.rules.RULES].index(c.mode))]
