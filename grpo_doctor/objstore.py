"""Object-store URIs (``s3://``, ``gs://``, ``az://``, ``abfs://``): the one filesystem layer.

A URI names a file or a "folder" (a key prefix) in a bucket. :func:`open_uri` lists it once,
page by page (pyarrow asks the store for 1,000 keys at a time), and returns a
:class:`StorePath`: an object that answers the part of :class:`pathlib.Path` the importers and
the discovery use (``is_dir``, ``iterdir``, ``stat``, ``open``, ``/`` ...) from that listing,
so that a run folder in a bucket is one run exactly as on disk. Only ``open`` talks to the
store again: reads are range reads (a TensorBoard file is read window by window), and the
first 64 KiB of an object, what every sniffer looks at, is kept so it is not fetched twice.
Nothing is written anywhere.

Filesystems are pyarrow's (``pyarrow.fs``: S3, GCS, Azure), imported only when a URI is
opened, so ``grpo-doctor --help`` stays fast. Credentials come from each store's standard
chain (environment, profile files, instance or workload identity); an S3-compatible store
(MinIO, Ceph, R2) is reached through ``AWS_ENDPOINT_URL`` (or ``AWS_ENDPOINT_URL_S3``), a GCS
emulator through ``STORAGE_EMULATOR_HOST``. A store error (no credentials, access denied, no
such bucket, throttled, unreachable) is a :class:`StoreError`: one line saying what to check.

A listing that fails part of the way (a sub-prefix denied, a throttled page) keeps what was
listed and records the prefixes it could not list (:attr:`Listing.failed`): ``audit`` makes
each an error row, never a silent gap.
"""

from __future__ import annotations

import io
import os
import posixpath
import re
import stat as stat_mod
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from pathlib import PurePosixPath
from typing import Any

from grpo_doctor.errors import InputError

#: The URI schemes read through this layer.
SCHEMES = ("s3", "gs", "gcs", "az", "abfs", "abfss")
_URI = re.compile(r"^(s3|gs|gcs|az|abfs|abfss)://", re.IGNORECASE)
#: The leading bytes of an object kept after the first read (a sniffer's head, and whole small
#: files), so that detecting a format and then reading the file fetch them once.
HEAD_BYTES = 64 * 1024
#: At most this many bytes of heads kept in a process (a bucket audited in one process).
_HEAD_CACHE_BYTES = 64 << 20
#: Heads read, by (URI, size, modified time): shared by every listing of the process (and
#: by the worker processes forked after the discovery read them), so the audit's discovery
#: and its diagnosis of a run fetch an object's head once.
_HEADS: dict[tuple[str, int, float], bytes] = {}
_HEADS_SIZE = [0]


class StoreError(InputError):
    """An object store refused or failed a request: one line saying what to check."""


def is_store_uri(text: object) -> bool:
    """Whether ``text`` is an object-store URI this layer reads."""
    return isinstance(text, str) and _URI.match(text) is not None


# --- which filesystem a URI names -----------------------------------------------------------


@dataclass(frozen=True)
class Location:
    """A URI split into the filesystem to use and the path within it."""

    scheme: str  # s3, gs, az (abfs/abfss are az with the account in the URI)
    account: str  # Azure storage account ("" elsewhere)
    path: str  # "bucket/key/..." as pyarrow names it, no trailing slash
    prefix: str  # what precedes ``path`` in a URI: "s3://", "az://", "abfs://c@acct..."

    def uri(self, path: str) -> str:
        if self.prefix.startswith(("abfs://", "abfss://")):
            container, _, rest = path.partition("/")
            return f"{self.prefix.split('://')[0]}://{container}@{self.account}" \
                   f".dfs.core.windows.net/{rest}".rstrip("/")
        return self.prefix + path


def parse_uri(uri: str) -> Location:
    """``s3://bucket/key`` -> Location("s3", "", "bucket/key", "s3://")."""
    scheme, _, rest = uri.partition("://")
    scheme = scheme.lower()
    rest = rest.strip("/")
    rest = posixpath.normpath(rest) if rest else ""
    if rest in ("", "."):
        raise InputError(f"{uri}: no bucket named (write {scheme}://BUCKET/PREFIX)")
    if scheme in ("abfs", "abfss"):
        # abfs://container@account.dfs.core.windows.net/path
        head, _, path = rest.partition("/")
        container, at, host = head.partition("@")
        if not at or not host:
            raise InputError(f"{uri}: write {scheme}://CONTAINER@ACCOUNT.dfs.core.windows.net/"
                             f"PATH, or az://CONTAINER/PATH with AZURE_STORAGE_ACCOUNT_NAME set")
        account = host.split(".", 1)[0]
        return Location("az", account, f"{container}/{path}".rstrip("/"), f"{scheme}://")
    if scheme == "az":
        account = (os.environ.get("AZURE_STORAGE_ACCOUNT_NAME")
                   or os.environ.get("AZURE_STORAGE_ACCOUNT") or "")
        if not account:
            raise StoreError(f"{uri}: no Azure storage account: set AZURE_STORAGE_ACCOUNT_NAME, "
                             f"or write abfs://CONTAINER@ACCOUNT.dfs.core.windows.net/PATH")
        return Location("az", account, rest, "az://")
    if scheme == "gcs":
        scheme = "gs"
    return Location(scheme, "", rest, f"{scheme}://")


_FILESYSTEMS: dict[tuple[str, str], Any] = {}
_FS_LOCK = threading.Lock()
#: Tests (and embedders) may put a filesystem in place of the one a scheme would make.
_OVERRIDES: dict[str, Callable[[], Any]] = {}


def use_filesystem(scheme: str, factory: Callable[[], Any] | None) -> None:
    """Read ``scheme://`` URIs through ``factory()`` (a ``pyarrow.fs.FileSystem``) instead of
    the store's own filesystem; None restores it."""
    with _FS_LOCK:
        _FILESYSTEMS.pop((scheme, ""), None)
        if factory is None:
            _OVERRIDES.pop(scheme, None)
        else:
            _OVERRIDES[scheme] = factory


def forget_filesystems() -> None:
    """Make the filesystems again at the next use (after the environment changed)."""
    with _FS_LOCK:
        _FILESYSTEMS.clear()


def forget_heads() -> None:
    """Forget the objects' heads kept so far (they are fetched again at the next read)."""
    _HEADS.clear()
    _HEADS_SIZE[0] = 0


def _s3_options() -> dict[str, Any]:
    options: dict[str, Any] = {}
    endpoint = os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("AWS_ENDPOINT_URL")
    if endpoint:
        scheme, sep, host = endpoint.rstrip("/").partition("://")
        options["endpoint_override"] = host if sep else scheme
        options["scheme"] = scheme if sep else "https"
    region = os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION")
    if region:
        options["region"] = region
    elif endpoint:
        options["region"] = "us-east-1"  # an S3-compatible store: no region to look up
    return options


#: How long an object store's client retries a failing request before it is an error.
_STORE_RETRY_SECONDS = 15


def filesystem(loc: Location) -> Any:
    """The pyarrow filesystem for ``loc`` (one per scheme and account in a process)."""
    key = (loc.scheme, loc.account)
    with _FS_LOCK:
        fs = _FILESYSTEMS.get(key)
        if fs is not None:
            return fs
        factory = _OVERRIDES.get(loc.scheme)
        fs = factory() if factory is not None else _make_filesystem(loc)
        _FILESYSTEMS[key] = fs
        return fs


def _make_filesystem(loc: Location) -> Any:
    try:
        from pyarrow import fs as pafs
    except ImportError as exc:  # pragma: no cover - pyarrow is a dependency
        raise StoreError(f"reading {loc.prefix} URIs needs pyarrow ({exc})") from None
    try:
        if loc.scheme == "s3":
            return pafs.S3FileSystem(**_s3_options())
        if loc.scheme == "gs":
            options: dict[str, Any] = {}
            emulator = os.environ.get("STORAGE_EMULATOR_HOST")
            if emulator:
                scheme, sep, host = emulator.rstrip("/").partition("://")
                options.update(endpoint_override=host if sep else scheme,
                               scheme=scheme if sep else "http", anonymous=True)
            # The client retries without end by default: offline, a read had hung past a
            # minute where s3:// fails in seconds (helper-73).
            from datetime import timedelta

            options["retry_time_limit"] = timedelta(seconds=_STORE_RETRY_SECONDS)
            return pafs.GcsFileSystem(**options)
        if loc.scheme == "az":
            az: dict[str, Any] = {"account_name": loc.account}
            if os.environ.get("AZURE_STORAGE_KEY"):
                az["account_key"] = os.environ["AZURE_STORAGE_KEY"]
            elif os.environ.get("AZURE_STORAGE_SAS_TOKEN"):
                az["sas_token"] = os.environ["AZURE_STORAGE_SAS_TOKEN"]
            return pafs.AzureFileSystem(**az)
    except (OSError, ValueError, TypeError, AttributeError) as exc:
        raise StoreError(f"{loc.prefix}: cannot set up the store's client "
                         f"({' '.join(str(exc).split())[:200]})") from None
    raise InputError(f"{loc.prefix}: unsupported URI scheme")  # pragma: no cover


# --- errors ---------------------------------------------------------------------------------

_CHECKS = {
    "s3": "AWS_PROFILE, AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY or the instance role",
    "gs": "GOOGLE_APPLICATION_CREDENTIALS, `gcloud auth application-default login` or the "
          "workload identity",
    "az": "AZURE_STORAGE_KEY, AZURE_STORAGE_SAS_TOKEN, `az login` or the managed identity",
}


def _no_local_credentials(scheme: str) -> bool:
    """No credentials in the environment or profile files (an instance or workload identity
    may still be there: it is not asked)."""
    env = os.environ
    if scheme == "s3":
        return not (env.get("AWS_ACCESS_KEY_ID") or env.get("AWS_PROFILE")
                    or env.get("AWS_WEB_IDENTITY_TOKEN_FILE")
                    or env.get("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI")
                    or env.get("AWS_CONTAINER_CREDENTIALS_FULL_URI")
                    or os.path.exists(env.get("AWS_SHARED_CREDENTIALS_FILE",
                                              os.path.expanduser("~/.aws/credentials")))
                    or os.path.exists(env.get("AWS_CONFIG_FILE",
                                              os.path.expanduser("~/.aws/config"))))
    return False


def store_error(uri: str, exc: BaseException) -> StoreError:
    """A store's failure as one line: what happened and what to check."""
    text = " ".join(str(exc).split())
    low = text.lower()
    scheme = uri.partition("://")[0].lower()
    scheme = {"gcs": "gs", "abfs": "az", "abfss": "az"}.get(scheme, scheme)
    checks = _CHECKS.get(scheme, "the store's credentials")
    bucket = uri.partition("://")[2].split("/", 1)[0]
    if "no_such_bucket" in low or "nosuchbucket" in low or "bucket does not exist" in low \
            or "containernotfound" in low:
        return StoreError(f"{uri}: no such bucket {bucket!r} (check the name, the account and "
                          f"the region or endpoint)")
    if any(s in low for s in ("slow_down", "slowdown", "throttl", "too many requests",
                              "toomanyrequests", "requestlimitexceeded", "rate exceeded",
                              " 503", "serverbusy")):
        return StoreError(f"{uri}: the store is throttling requests (slow down); try again "
                          f"later, or with fewer --jobs")
    if any(s in low for s in ("invalid_access_key", "invalidaccesskeyid", "signaturedoesnotmatch",
                              "signature_does_not_match", "expiredtoken", "expired_token",
                              "unable to locate credentials", "no credentials",
                              "could not load credentials", "missing_authentication",
                              "invalid_client_token", "defaultcredentials", "unauthenticated",
                              "authenticationfailed", "invalid credentials")):
        return StoreError(f"{uri}: the store did not accept the credentials (check {checks})")
    if any(s in low for s in ("access_denied", "accessdenied", "access denied", "forbidden",
                              "permission denied", "authorizationfailure", " 403",
                              "permission_denied")):
        hint = (" — no credentials were found in the environment or ~/.aws" if
                _no_local_credentials(scheme) else "")
        return StoreError(f"{uri}: access denied (check {checks}, and that they may read "
                          f"the bucket){hint}")
    if any(s in low for s in ("network_connection", "could not connect", "couldn't connect",
                              "connection refused", "could not resolve", "timed out",
                              "curlcode", "name or service not known")):
        where = (os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("AWS_ENDPOINT_URL")
                 if scheme == "s3" else None)
        hint = f"AWS_ENDPOINT_URL={where}" if where else "the network and the endpoint"
        return StoreError(f"{uri}: cannot reach the store (check {hint})")
    return StoreError(f"{uri}: the store failed the request ({text[:200]})")


# --- listings ------------------------------------------------------------------------------


@dataclass
class _Info:
    is_dir: bool
    size: int = 0
    mtime: float = 0.0


@dataclass
class Listing:
    """What one listing found under a URI, shared by every :class:`StorePath` made from it."""

    loc: Location
    fs: Any
    root: str  # the listed path
    infos: dict[str, _Info] = field(default_factory=dict)
    children: dict[str, list[str]] = field(default_factory=dict)
    failed: list[tuple[str, str]] = field(default_factory=list)  # (uri, one-line reason)
    fetched: int = 0  # bytes read from the store through this listing

    def add(self, path: str, info: _Info) -> None:
        path = path.rstrip("/")
        if path in self.infos:
            if info.is_dir:
                self.infos[path].is_dir = True
            return
        self.infos[path] = info
        parent = posixpath.dirname(path)
        if path != self.root and parent and path.startswith(self.root + "/"):
            if parent not in self.infos:
                self.add(parent, _Info(True))
            self.children.setdefault(parent, []).append(posixpath.basename(path))

    def finish(self) -> None:
        for names in self.children.values():
            names.sort()


#: Bytes read from stores by this process (the benchmark's figure).
BYTES_READ = [0]


def _info_of(raw: Any) -> _Info:
    from pyarrow import fs as pafs

    mtime = raw.mtime.timestamp() if raw.mtime is not None else 0.0
    return _Info(raw.type == pafs.FileType.Directory, int(raw.size or 0), mtime)


def list_uri(uri: str) -> Listing:
    """List ``uri`` (a file, or every object under a prefix). A store error at the top (no
    bucket, no access, throttled) raises :class:`StoreError`; a sub-prefix that cannot be
    listed is kept in ``failed``."""
    from pyarrow import fs as pafs

    loc = parse_uri(uri)
    fs = filesystem(loc)
    listing = Listing(loc, fs, loc.path)
    try:
        top = fs.get_file_info(loc.path)
        if top.type == pafs.FileType.NotFound:
            bucket = loc.path.split("/", 1)[0]
            if bucket == loc.path or fs.get_file_info(bucket).type == pafs.FileType.NotFound:
                raise OSError(f"NoSuchBucket: The specified bucket does not exist: {bucket}")
            raise InputError(f"{uri}: no such file or folder")
        listing.add(loc.path, _info_of(top))
        if top.type == pafs.FileType.File:
            return listing
        selector = pafs.FileSelector(loc.path, recursive=True)
        try:
            found = fs.get_file_info(selector)
        except OSError:
            # One listing of everything failed: list the top level, then each prefix under
            # it, so what can be listed is, and what cannot is named (an error row each).
            found = _list_by_prefix(listing, uri)
    except OSError as exc:
        raise store_error(uri, exc) from None
    for raw in found:
        listing.add(raw.path, _info_of(raw))
    listing.finish()
    return listing


def _list_by_prefix(listing: Listing, uri: str) -> list[Any]:
    from pyarrow import fs as pafs

    fs = listing.fs
    top = fs.get_file_info(pafs.FileSelector(listing.root, recursive=False))  # raises: no rows
    found = list(top)
    for raw in top:
        if raw.type != pafs.FileType.Directory:
            continue
        try:
            found += fs.get_file_info(pafs.FileSelector(raw.path, recursive=True))
        except OSError as exc:
            where = listing.loc.uri(raw.path)
            reason = str(store_error(where, exc)).split(": ", 1)[-1]
            listing.failed.append((where, f"{where}/: the listing failed part of the way "
                                          f"({reason}); the runs under it were not audited"))
    return found


# --- paths ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class StoreStat:
    """The part of ``os.stat_result`` the readers use."""

    st_mode: int
    st_size: int
    st_mtime: float
    st_ino: int
    st_dev: int = 0
    st_nlink: int = 1

    @property
    def st_mtime_ns(self) -> int:
        return int(self.st_mtime * 1e9)


class StoreEntry:
    """A folder entry (as ``os.DirEntry``) of a listing."""

    def __init__(self, path: StorePath) -> None:
        self.store_path = path
        self.name = path.name
        self.path = str(path)

    def is_dir(self, *, follow_symlinks: bool = True) -> bool:
        return self.store_path.is_dir()

    def is_file(self, *, follow_symlinks: bool = True) -> bool:
        return self.store_path.is_file()

    def is_symlink(self) -> bool:
        return False

    def stat(self, *, follow_symlinks: bool = True) -> StoreStat:
        return self.store_path.stat()

    def inode(self) -> int:
        return self.store_path.stat().st_ino


class StorePath:
    """A file or folder of a :class:`Listing`: the subset of :class:`pathlib.Path` that the
    importers and the discovery use, answered from the listing; ``open`` reads the store."""

    __slots__ = ("_key", "listing")

    def __init__(self, listing: Listing, key: str) -> None:
        self.listing = listing
        self._key = key.rstrip("/")

    # -- names -------------------------------------------------------------------------------

    def __str__(self) -> str:
        return self.listing.loc.uri(self._key)

    def __repr__(self) -> str:
        return f"StorePath({str(self)!r})"

    def __hash__(self) -> int:
        return hash(str(self))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, StorePath) and str(other) == str(self)

    def __lt__(self, other: StorePath) -> bool:
        return str(self) < str(other)

    def __truediv__(self, name: str | os.PathLike[str]) -> StorePath:
        key = posixpath.normpath(posixpath.join(self._key, os.fspath(name)))
        return StorePath(self.listing, key)

    @property
    def key(self) -> str:
        return self._key

    @property
    def name(self) -> str:
        return posixpath.basename(self._key)

    @property
    def suffix(self) -> str:
        return PurePosixPath(self.name).suffix

    @property
    def suffixes(self) -> list[str]:
        return PurePosixPath(self.name).suffixes

    @property
    def stem(self) -> str:
        return PurePosixPath(self.name).stem

    @property
    def parent(self) -> StorePath:
        return StorePath(self.listing, posixpath.dirname(self._key) or self._key)

    @property
    def parts(self) -> tuple[str, ...]:
        return (self.listing.loc.prefix, *self._key.split("/"))

    def with_suffix(self, suffix: str) -> StorePath:
        return self.parent / PurePosixPath(self.name).with_suffix(suffix).name

    def with_name(self, name: str) -> StorePath:
        return self.parent / name

    def relative_to(self, other: StorePath | str) -> PurePosixPath:
        base = other.key if isinstance(other, StorePath) else str(other)
        if isinstance(other, str) and is_store_uri(other):
            base = parse_uri(other).path
        if self._key == base:
            return PurePosixPath(".")
        if not self._key.startswith(base.rstrip("/") + "/"):
            raise ValueError(f"{self} is not in {other}")
        return PurePosixPath(self._key[len(base.rstrip("/")) + 1:])

    def is_relative_to(self, other: StorePath | str) -> bool:
        try:
            self.relative_to(other)
        except ValueError:
            return False
        return True

    def as_posix(self) -> str:
        return str(self)

    def resolve(self, strict: bool = False) -> StorePath:
        return self

    def absolute(self) -> StorePath:
        return self

    def expanduser(self) -> StorePath:
        return self

    # -- what the listing says ---------------------------------------------------------------

    def _info(self) -> _Info | None:
        return self.listing.infos.get(self._key)

    def exists(self) -> bool:
        return self._info() is not None

    def is_dir(self) -> bool:
        info = self._info()
        return info is not None and info.is_dir

    def is_file(self) -> bool:
        info = self._info()
        return info is not None and not info.is_dir

    def is_symlink(self) -> bool:
        return False

    def is_fifo(self) -> bool:
        return False

    def stat(self, *, follow_symlinks: bool = True) -> StoreStat:
        info = self._info()
        if info is None:
            raise FileNotFoundError(2, "No such file or directory", str(self))
        mode = (stat_mod.S_IFDIR | 0o555) if info.is_dir else (stat_mod.S_IFREG | 0o444)
        return StoreStat(mode, info.size, info.mtime, hash(self._key) & ((1 << 62) - 1))

    def lstat(self) -> StoreStat:
        return self.stat()

    def iterdir(self) -> Iterator[StorePath]:
        if not self.is_dir():
            raise NotADirectoryError(20, "Not a directory", str(self))
        for name in self.listing.children.get(self._key, []):
            yield StorePath(self.listing, f"{self._key}/{name}")

    def scandir(self) -> list[StoreEntry]:
        return [StoreEntry(p) for p in self.iterdir()]

    def glob(self, pattern: str) -> Iterator[StorePath]:
        if pattern.startswith("**/"):
            yield from self.rglob(pattern[3:])
            return
        head, _, rest = pattern.partition("/")
        for child in self.iterdir() if self.is_dir() else ():
            if fnmatchcase(child.name, head):
                if rest:
                    yield from child.glob(rest)
                else:
                    yield child

    def rglob(self, pattern: str) -> Iterator[StorePath]:
        prefix = self._key + "/"
        for key in sorted(self.listing.infos):
            if key.startswith(prefix) and fnmatchcase(posixpath.basename(key), pattern):
                yield StorePath(self.listing, key)

    # -- reading -----------------------------------------------------------------------------

    def open(self, mode: str = "r", buffering: int = -1, encoding: str | None = None,
             errors: str | None = None, newline: str | None = None) -> Any:
        if any(c in mode for c in "wax+"):
            raise PermissionError(13, "grpo-doctor never writes to an object store", str(self))
        info = self._info()
        if info is None:
            raise FileNotFoundError(2, "No such file or directory", str(self))
        if info.is_dir:
            raise IsADirectoryError(21, "Is a directory", str(self))
        raw = ObjectFile(self, info.size)
        if "b" in mode:
            return raw
        return io.TextIOWrapper(io.BufferedReader(raw), encoding=encoding or "utf-8",
                                errors=errors, newline=newline)

    def read_bytes(self) -> bytes:
        with self.open("rb") as fh:
            return bytes(fh.read())

    def read_text(self, encoding: str | None = None, errors: str | None = None) -> str:
        return self.read_bytes().decode(encoding or "utf-8", errors or "strict")

    def refreshed(self) -> StorePath:
        """The same path in a new listing of its URI (what is there now; not there: an empty
        listing)."""
        return open_uri(str(self), missing_ok=True)


class ObjectFile(io.RawIOBase):
    """An object opened for reading: range reads, the head kept in the listing."""

    def __init__(self, path: StorePath, size: int) -> None:
        super().__init__()
        self._path = path
        self._size = size
        self._pos = 0
        self._native: Any = None

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def size(self) -> int:
        return self._size

    def tell(self) -> int:
        return self._pos

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self._pos, io.SEEK_END: self._size}[whence]
        self._pos = max(0, base + offset)
        return self._pos

    def fileno(self) -> int:
        raise io.UnsupportedOperation("an object in a store has no file descriptor")

    def _fetch(self, pos: int, n: int) -> bytes:
        """``n`` bytes at ``pos`` from the store (one ranged GET)."""
        listing = self._path.listing
        if self._native is None:
            try:
                self._native = listing.fs.open_input_file(self._path.key)
            except OSError as exc:
                raise _as_os_error(str(self._path), exc) from None
        try:
            data = self._native.read_at(n, pos)
        except OSError as exc:
            raise _as_os_error(str(self._path), exc) from None
        listing.fetched += len(data)
        BYTES_READ[0] += len(data)
        return bytes(data)

    def _head(self) -> bytes:
        info = self._path._info()
        key = (str(self._path), self._size, info.mtime if info is not None else 0.0)
        head = _HEADS.get(key)
        if head is None:
            head = self._fetch(0, min(self._size, HEAD_BYTES))
            if _HEADS_SIZE[0] + len(head) > _HEAD_CACHE_BYTES:
                _HEADS.clear()
                _HEADS_SIZE[0] = 0
            _HEADS[key] = head
            _HEADS_SIZE[0] += len(head)
        return head

    def read(self, size: int | None = -1) -> bytes:
        left = max(0, self._size - self._pos)
        n = left if size is None or size < 0 else min(size, left)
        if n == 0:
            return b""
        if self._pos < HEAD_BYTES:
            head = self._head()
            if self._pos + n <= len(head):
                out = head[self._pos:self._pos + n]
                self._pos += n
                return out
            if self._pos < len(head):  # the rest follows the head
                out = head[self._pos:] + self._fetch(len(head), self._pos + n - len(head))
                self._pos += len(out)
                return out
        out = self._fetch(self._pos, n)
        self._pos += len(out)
        return out

    def readall(self) -> bytes:
        return self.read(-1)

    def readinto(self, buffer: Any) -> int:
        view = memoryview(buffer).cast("B")
        data = self.read(len(view))
        view[:len(data)] = data
        return len(data)

    def close(self) -> None:
        if self._native is not None:
            self._native.close()
            self._native = None
        super().close()


def _as_os_error(uri: str, exc: OSError) -> OSError:
    """A read's failure, with the one line of :func:`store_error` as its message."""
    if isinstance(exc, FileNotFoundError):
        return exc
    err = store_error(uri, exc)
    return PermissionError(13, str(err).split(": ", 1)[-1]) if "denied" in str(err) \
        else OSError(5, str(err).split(": ", 1)[-1])


def within(path: StorePath, uri: str) -> StorePath:
    """The path at ``uri`` in ``path``'s listing (no new listing)."""
    return StorePath(path.listing, parse_uri(uri).path)


def open_uri(uri: str, *, missing_ok: bool = False) -> StorePath:
    """The file or folder at ``uri``, listed now; with ``missing_ok``, a path not there yet
    (a run that has not started writing) is an empty listing instead of an error."""
    try:
        listing = list_uri(uri)
    except StoreError:
        raise
    except InputError:
        if not missing_ok:
            raise
        loc = parse_uri(uri)
        listing = Listing(loc, filesystem(loc), loc.path)
    return StorePath(listing, listing.root)
