import pytest

from grpo_doctor.importers import load_runs


@pytest.mark.parametrize("file,name", [("lr_3e-3/metrics.csv", "lr_3e-3"),
                                       ("lr_3e-3/progress.csv", "lr_3e-3"),
                                       ("lr_3e-3/run_a.csv", "run_a")])
def test_a_generic_file_name_names_the_run_by_its_folder(tmp_path, file, name):
    """Every verl or trainer CSV export is "metrics.csv": each report was headed "metrics"
    (helper-35); such a run is named by its folder, and a named file keeps its own name."""
    path = tmp_path / file
    path.parent.mkdir()
    path.write_text("step,reward\n1,0.1\n2,0.2\n")
    (run,) = load_runs(path)
    assert run.name == name
