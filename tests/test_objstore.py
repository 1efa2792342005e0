"""Object-store URIs against a real S3 API: moto's server mode on loopback, holding the files
the project's real writers made (TensorBoard, wandb offline, trainer_state, CSV, JSONL).

What is checked: the same diagnosis and audit JSON as the local copies (the run's source and
the log's modified time aside: they name where the copy is); a listing of more than 1,000
objects (the store's pages); the errors a user meets (no such bucket, access denied,
throttled, unreachable, a partial listing) as one line and exit 2, or as an error row; that
nothing is written to the bucket; that a file is not downloaded twice. Skipped only where moto
cannot be imported.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pyarrow import fs as pafs

from grpo_doctor import objstore
from tests.conftest import CliRunner

FIXTURES = Path(__file__).parent / "fixtures"
BUCKET = "fleet-runs"
#: Runs of every format the issue names, each as the real writer left it.
RUNS = {
    "tb": FIXTURES / "corpus" / "01_healthy_s1",  # TensorBoard (torch.utils.tensorboard)
    "wandb": FIXTURES / "corpus" / "02_healthy_s2",  # wandb offline (the wandb client)
    "state": FIXTURES / "corpus" / "03_healthy_s3",  # trainer_state.json (transformers)
    "csv": FIXTURES / "corpus" / "04_healthy_s4",  # metrics.csv
    "bad": FIXTURES / "corpus" / "08_lr_too_high",  # a failing run (exit 1)
    "jsonl": FIXTURES / "jsonl",  # verl-style JSON lines
}


# --- unit: URIs and error lines (no server) -------------------------------------------------


def test_parse_uri_names_the_filesystem_and_path() -> None:
    loc = objstore.parse_uri("s3://bucket/runs/a/")
    assert (loc.scheme, loc.path, loc.uri(loc.path)) == ("s3", "bucket/runs/a",
                                                          "s3://bucket/runs/a")
    assert objstore.parse_uri("gcs://b/x").scheme == "gs"
    abfs = objstore.parse_uri("abfs://logs@acct.dfs.core.windows.net/runs")
    assert (abfs.scheme, abfs.account, abfs.path) == ("az", "acct", "logs/runs")
    assert abfs.uri("logs/runs/a") == "abfs://logs@acct.dfs.core.windows.net/runs/a"


@pytest.mark.parametrize("message, said", [
    ("AWS Error NO_SUCH_BUCKET during ListObjectsV2 operation", "no such bucket 'b'"),
    ("AWS Error ACCESS_DENIED during HeadObject operation: Access Denied", "access denied"),
    ("AWS Error SLOW_DOWN during ListObjectsV2 operation: Please reduce your request rate",
     "throttling"),
    ("AWS Error INVALID_ACCESS_KEY_ID during HeadObject", "did not accept the credentials"),
    ("AWS Error NETWORK_CONNECTION during HeadObject operation: curlCode: 7", "cannot reach"),
])
def test_store_errors_are_one_line_saying_what_to_check(message: str, said: str) -> None:
    err = objstore.store_error("s3://b/runs", OSError(message))
    assert said in str(err) and "\n" not in str(err)
    assert isinstance(err, objstore.StoreError)


# --- the server ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def s3() -> Iterator[Any]:
    """A boto3 client of a moto S3 server on loopback, with the runs uploaded, and the
    environment pointing grpo-doctor at it (AWS_ENDPOINT_URL)."""
    server_mod = pytest.importorskip("moto.server", reason="moto is not installed")
    boto3 = pytest.importorskip("boto3")
    env = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
           "AWS_REGION": "us-east-1", "AWS_EC2_METADATA_DISABLED": "true"}
    saved = {k: os.environ.get(k) for k in [*env, "AWS_ENDPOINT_URL"]}
    os.environ.update(env)
    server = server_mod.ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    os.environ["AWS_ENDPOINT_URL"] = f"http://{host}:{port}"
    objstore.forget_filesystems()
    client = boto3.client("s3", endpoint_url=os.environ["AWS_ENDPOINT_URL"])
    client.create_bucket(Bucket=BUCKET)
    for name, folder in RUNS.items():
        for f in sorted(folder.rglob("*")):
            if f.is_file():
                client.upload_file(str(f), BUCKET, f"runs/{name}/{f.relative_to(folder)}")
    try:
        yield client
    finally:
        server.stop()
        objstore.forget_filesystems()
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _keys(client: Any, prefix: str = "") -> list[str]:
    pages = client.get_paginator("list_objects_v2").paginate(Bucket=BUCKET, Prefix=prefix)
    return sorted(o["Key"] for page in pages for o in page.get("Contents", []))


@pytest.fixture(scope="module")
def local_runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The same runs on disk, laid out as in the bucket."""
    root = tmp_path_factory.mktemp("local") / "runs"
    for name, folder in RUNS.items():
        shutil.copytree(folder, root / name)
    return root


def _same(doc: Any) -> Any:
    """A report without what names where the copy is (its path, the log's modified time)."""
    if isinstance(doc, dict):
        return {k: _same(v) for k, v in doc.items() if k not in ("source", "modified")}
    if isinstance(doc, list):
        return [_same(v) for v in doc]
    return doc


# --- the same answers as on disk -------------------------------------------------------------


@pytest.mark.parametrize("name", ["tb", "wandb", "state", "csv", "bad", "jsonl"])
def test_diagnose_gives_the_local_json(s3: Any, local_runs: Path, cli: CliRunner,
                                       name: str) -> None:
    remote = cli("diagnose", "-f", "json", f"s3://{BUCKET}/runs/{name}")
    local = cli("diagnose", "-f", "json", str(local_runs / name))
    assert remote[0] == local[0] and remote[2] == "", remote[2]
    assert _same(json.loads(remote[1])) == _same(json.loads(local[1]))
    assert json.loads(remote[1])["run"]["source"].startswith(f"s3://{BUCKET}/runs/{name}")


def test_diagnose_one_object(s3: Any, local_runs: Path, cli: CliRunner) -> None:
    remote = cli("diagnose", "-f", "json", f"s3://{BUCKET}/runs/csv/metrics.csv")
    local = cli("diagnose", "-f", "json", str(local_runs / "csv" / "metrics.csv"))
    assert remote[0] == local[0] == 0, remote[2]
    assert _same(json.loads(remote[1])) == _same(json.loads(local[1]))


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_audit_gives_the_local_json(s3: Any, local_runs: Path, cli: CliRunner,
                                    jobs: str) -> None:
    before = _keys(s3)
    remote = cli("audit", "-f", "json", "-j", jobs, f"s3://{BUCKET}/runs")
    local = cli("audit", "-f", "json", "-j", jobs, str(local_runs))
    assert remote[0] == local[0] == 1, remote[2]
    doc = json.loads(remote[1])
    assert _same(doc) == _same(json.loads(local[1]))
    assert doc["summary"]["runs"] >= len(RUNS) and not doc["errors"]
    assert {r["audit"]["source"].split("/")[0] for r in doc["runs"]} == set(RUNS)
    assert all(r["context"]["modified"] for r in doc["runs"])  # the objects' times
    assert _keys(s3) == before  # nothing written to the bucket


def test_metrics_and_compare_read_uris(s3: Any, local_runs: Path, cli: CliRunner) -> None:
    code, out, err = cli("metrics", f"s3://{BUCKET}/runs/csv")
    assert code == 0 and err == ""
    assert out == cli("metrics", str(local_runs / "csv"))[1].replace(
        str(local_runs), f"s3://{BUCKET}/runs")
    code, out, err = cli("compare", "-f", "json", f"s3://{BUCKET}/runs/state",
                         f"s3://{BUCKET}/runs/bad")
    assert code in (0, 1) and err == "", err
    assert len(json.loads(out)["runs"]) == 2


def test_baseline_from_the_bucket(s3: Any, local_runs: Path, cli: CliRunner,
                                  tmp_path: Path) -> None:
    base = tmp_path / "baseline.json"
    assert cli("audit", "-f", "json", "--write-baseline", str(base), str(local_runs))[0] == 0
    s3.upload_file(str(base), BUCKET, "baselines/nightly.json")
    try:
        code, out, err = cli("audit", "-f", "json", "--baseline",
                             f"s3://{BUCKET}/baselines/nightly.json", f"s3://{BUCKET}/runs")
        assert code == 0, err  # every finding accepted
        assert json.loads(out)["summary"]["new"] == 0
        code, _, err = cli("audit", "--baseline", f"s3://{BUCKET}/baselines/none.json",
                           f"s3://{BUCKET}/runs")
        assert code == 2 and err.count("\n") == 1 and "baseline not found" in err
    finally:
        s3.delete_object(Bucket=BUCKET, Key="baselines/nightly.json")


def test_watch_once_polls_the_bucket(s3: Any, cli: CliRunner) -> None:
    code, out, err = cli("watch", "--once", "-f", "json", f"s3://{BUCKET}/runs/bad")
    assert code == 0, err
    assert any(json.loads(line).get("status") == "critical" for line in out.splitlines())


def test_a_file_is_not_downloaded_twice(s3: Any) -> None:
    from grpo_doctor.api import diagnose_source

    folder = RUNS["tb"]
    size = sum(f.stat().st_size for f in folder.rglob("*") if f.is_file())
    objstore.forget_heads()  # read before, by other tests
    before = objstore.BYTES_READ[0]
    diagnose_source(f"s3://{BUCKET}/runs/tb")
    assert size <= objstore.BYTES_READ[0] - before <= size * 1.05 + 4096


# --- listings --------------------------------------------------------------------------------


def test_a_listing_of_more_than_a_page(s3: Any, cli: CliRunner) -> None:
    """1,100 objects: more than the 1,000 keys one ListObjectsV2 page holds."""
    from moto.core import DEFAULT_ACCOUNT_ID
    from moto.s3.models import s3_backends

    prefix = "many/run/"
    # Put straight into the server's store (it runs in this process): one request each would
    # take seconds and test nothing the listing does not.
    store = s3_backends[DEFAULT_ACCOUNT_ID]["aws"]
    for i in range(1_095):
        store.put_object(BUCKET, f"{prefix}samples/{i:04d}.png", b"\x89PNG")
    for f in sorted(RUNS["csv"].rglob("*")):
        s3.upload_file(str(f), BUCKET, prefix + f.name)
    listing = objstore.list_uri(f"s3://{BUCKET}/many")
    files = [k for k, info in listing.infos.items() if not info.is_dir]
    assert len(files) == len(_keys(s3, "many/")) > 1_000
    code, out, err = cli("audit", "-f", "json", "-v", f"s3://{BUCKET}/many")
    assert code == 0 and json.loads(out)["summary"]["runs"] == 1, err


# --- errors ----------------------------------------------------------------------------------


@pytest.mark.parametrize("command", ["diagnose", "audit", "metrics"])
def test_no_such_bucket_is_one_line(s3: Any, cli: CliRunner, command: str) -> None:
    code, out, err = cli(command, "s3://no-such-bucket-here/runs")
    assert (code, out) == (2, "")
    assert err == ("grpo-doctor: error: s3://no-such-bucket-here/runs: no such bucket "
                   "'no-such-bucket-here' (check the name, the account and the region or "
                   "endpoint)\n")


def test_no_such_prefix_is_one_line(s3: Any, cli: CliRunner) -> None:
    code, _, err = cli("diagnose", f"s3://{BUCKET}/runs/none")
    assert code == 2 and err == f"grpo-doctor: error: s3://{BUCKET}/runs/none: no such file " \
                                f"or folder\n"


def test_an_unreachable_endpoint_is_one_line(s3: Any, cli: CliRunner,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9")
    objstore.forget_filesystems()
    try:
        code, _, err = cli("diagnose", f"s3://{BUCKET}/runs/csv")
    finally:
        monkeypatch.undo()
        objstore.forget_filesystems()
    assert code == 2 and err.count("\n") == 1
    assert "cannot reach the store (check AWS_ENDPOINT_URL=http://127.0.0.1:9)" in err


class _Refusing(pafs.FileSystemHandler):
    """A pyarrow filesystem handler over a local folder that fails as a store would: listing
    (or reading) under ``refuse`` raises ``message``. Read-only, as grpo-doctor needs."""

    def __init__(self, root: Path, refuse: str, message: str) -> None:
        self.local = pafs.SubTreeFileSystem(str(root), pafs.LocalFileSystem())
        self.refuse, self.message = refuse, message

    def _check(self, path: str) -> None:
        if path.rstrip("/").startswith(self.refuse):
            raise OSError(self.message)

    # The FileSystemHandler interface (pyarrow.fs.PyFileSystem).
    def get_type_name(self) -> str:
        return "refusing"

    def normalize_path(self, path: str) -> str:
        return path

    def get_file_info(self, paths: list[str]) -> list[Any]:
        for p in paths:
            self._check(p)
        return self.local.get_file_info(paths)

    def get_file_info_selector(self, selector: Any) -> list[Any]:
        self._check(selector.base_dir)
        found = self.local.get_file_info(pafs.FileSelector(selector.base_dir,
                                                           recursive=False))
        out = list(found)
        if selector.recursive:
            for info in found:
                if info.type == pafs.FileType.Directory:
                    out += self.get_file_info_selector(
                        pafs.FileSelector(info.path, recursive=True))
        return out

    def open_input_file(self, path: str) -> Any:
        self._check(path)
        return self.local.open_input_file(path)

    def open_input_stream(self, path: str) -> Any:
        return self.open_input_file(path)

    def equals(self, other: Any) -> bool:
        return self is other

    def _read_only(self, *args: Any) -> Any:
        raise PermissionError("read-only test filesystem")

    create_dir = delete_dir = delete_dir_contents = delete_root_dir_contents = _read_only
    delete_file = move = copy_file = open_output_stream = open_append_stream = _read_only


@pytest.fixture
def refusing(local_runs: Path) -> Iterator[Any]:
    """``refusing(prefix, message)``: s3:// read through a :class:`_Refusing` filesystem over
    the local copies (bucket ``bkt`` holding ``runs/``)."""
    root = local_runs.parent / "bucket-view"
    (root / "bkt").mkdir(parents=True, exist_ok=True)
    if not (root / "bkt" / "runs").exists():
        (root / "bkt" / "runs").symlink_to(local_runs)

    def use(prefix: str, message: str) -> None:
        handler = _Refusing(root, prefix, message)
        objstore.use_filesystem("s3", lambda: pafs.PyFileSystem(handler))

    yield use
    objstore.use_filesystem("s3", None)


@pytest.mark.parametrize("message, said", [
    ("AWS Error ACCESS_DENIED during ListObjectsV2 operation: Access Denied",
     "access denied (check AWS_PROFILE"),
    ("AWS Error SLOW_DOWN during ListObjectsV2 operation: Please reduce your request rate.",
     "the store is throttling requests"),
])
def test_refused_listing_is_one_line_exit_2(refusing: Any, cli: CliRunner, message: str,
                                           said: str) -> None:
    refusing("bkt/runs", message)
    for command in ("audit", "diagnose"):
        code, out, err = cli(command, "s3://bkt/runs")
        assert (code, out) == (2, ""), err
        assert err.startswith(f"grpo-doctor: error: s3://bkt/runs: {said}")
        assert err.count("\n") == 1


def test_a_partial_listing_is_an_error_row(refusing: Any, cli: CliRunner) -> None:
    refusing("bkt/runs/wandb", "AWS Error SLOW_DOWN during ListObjectsV2 operation")
    code, out, err = cli("audit", "-f", "json", "s3://bkt/runs")
    doc = json.loads(out)
    assert code == 1, err
    assert [e["source"] for e in doc["errors"]] == ["wandb"]
    assert "the listing failed part of the way" in doc["errors"][0]["error"]
    assert "throttling" in doc["errors"][0]["error"]
    assert {r["audit"]["source"].split("/")[0] for r in doc["runs"]} == set(RUNS) - {"wandb"}


def test_a_denied_read_is_an_error_row(refusing: Any, cli: CliRunner) -> None:
    refusing("bkt/runs/csv/metrics.csv", "AWS Error ACCESS_DENIED during GetObject: denied")
    code, out, err = cli("audit", "-f", "json", "s3://bkt/runs")
    doc = json.loads(out)
    assert [e["source"] for e in doc["errors"]] == ["csv/metrics.csv"], err
    assert "access denied" in doc["errors"][0]["error"]
