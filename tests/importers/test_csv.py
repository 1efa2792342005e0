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


def test_a_generic_console_or_tensorboard_folder_names_the_run_by_its_folder(tmp_path):
    """A console capture "train.log" and a "tensorboard/" folder headed reports "train" and
    "tensorboard" (trial 39): each is named by the folder of its run."""
    from tests.test_properties import _write_events

    log = tmp_path / "w03_temp_2.0" / "train.log"
    log.parent.mkdir()
    log.write_text("".join(f"{{'loss': 0.1, 'reward': {i / 10}, 'kl': 0.01}}\n"
                           for i in range(1, 9)))
    (run,) = load_runs(log)
    assert run.name == "w03_temp_2.0"
    events = tmp_path / "w11" / "tensorboard"
    events.mkdir(parents=True)
    _write_events(events, list(range(1, 9)), {"train/reward": [0.1 * i for i in range(8)]})
    (run,) = load_runs(events)
    assert run.name == "w11"


def test_a_run_is_picked_by_a_part_of_its_name_only_one_holds(tmp_path):
    """Generated run names are long (grpo_formal_1p5b_seed42_20260720T031006Z): ``--run``
    took only the whole name (helper-39)."""
    import pytest

    from grpo_doctor.errors import InputError
    from grpo_doctor.importers import load_runs

    rows = ["run,step,reward"] + [f"{name},{s},{0.1 * s}" for name in
                                  ("grpo_seed42_20260720T0310", "grpo_seed123_20260720T0359")
                                  for s in range(1, 6)]
    path = tmp_path / "runs.csv"
    path.write_text("\n".join(rows) + "\n")
    (run,) = load_runs(path, run="seed42")
    assert run.name == "grpo_seed42_20260720T0310"
    with pytest.raises(InputError, match="more than one run matches 'grpo'"):
        load_runs(path, run="grpo")
    with pytest.raises(InputError, match="no run named 'ppo'"):
        load_runs(path, run="ppo")
