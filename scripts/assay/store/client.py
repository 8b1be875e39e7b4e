"""The one object-store client: boto3, imported here only, and only when a store URL is used.

Credentials, region and endpoint come from boto3's standard chain (AWS_ACCESS_KEY_ID /
AWS_SECRET_ACCESS_KEY / AWS_SESSION_TOKEN, AWS_PROFILE, a web-identity token on Kubernetes,
the instance role), `AWS_ENDPOINT_URL` (or `AWS_ENDPOINT_URL_S3`) for MinIO, R2 and GCS
interop. Nothing here prints or stores a credential: an error names the operation, the URL
and the server's error code only.

Exit codes: 2 for what a retry cannot fix (the extra not installed, no credentials, no such
bucket, access denied); 5 for the rest (the endpoint unreachable, a server error): a
Kubernetes index retries those, and fails at once on 2 (`podFailurePolicy`).
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Iterator

from ..core.errors import AssayError
from .url import StoreURL

INSTALL = "pip install 'assay[s3]'"
CONFIG_ERRORS = {"NoSuchBucket", "AccessDenied", "InvalidAccessKeyId", "SignatureDoesNotMatch",
                 "AllAccessDisabled", "InvalidBucketName", "AuthorizationHeaderMalformed", "ExpiredToken",
                 "InvalidToken", "AccountProblem"}
DEFAULT_REGION = "us-east-1"   # signing needs one; MinIO and moto accept it, AWS redirects nothing with it set
WORKERS = 16


def _boto3():
    try:
        import boto3
        from botocore.config import Config
    except ImportError:
        raise AssayError(f"s3:// store URLs need the s3 extra (boto3): {INSTALL}", 2, install=INSTALL) from None
    return boto3, Config


# one client per process and AWS environment: a pod's pre-flight check, its claim, its look and its
# publish (and a merge's listing, fetch and fold) share it; each new boto3 session reloads botocore's
# S3 model, ~60-100 ms CPU a time. Keyed on every AWS_* variable, so a changed endpoint, credential,
# profile or region (a test's monkeypatched env) gets a client of its own.
_CLIENTS: dict[tuple, object] = {}
_CLIENTS_LOCK = threading.Lock()


def _client(url: StoreURL):
    boto3, Config = _boto3()
    key = tuple(sorted((k, v) for k, v in os.environ.items() if k.startswith("AWS_")))
    with _CLIENTS_LOCK:
        if key not in _CLIENTS:
            region = os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION") or DEFAULT_REGION
            try:
                _CLIENTS[key] = boto3.session.Session().client(
                    "s3", region_name=region,
                    config=Config(retries={"mode": "standard", "max_attempts": 5}, max_pool_connections=WORKERS))
            except Exception as exc:   # a malformed AWS_ENDPOINT_URL, an unknown profile
                raise AssayError(f"{url}: cannot set up the S3 client ({type(exc).__name__}: {_first_line(exc)}); "
                                 "check AWS_ENDPOINT_URL, AWS_PROFILE and AWS_REGION", 2) from None
        return _CLIENTS[key]


class Store:
    """One bucket, one client (thread-safe: the upload and download pools share it, and so does every
    Store of the process under the same AWS environment)."""

    def __init__(self, url: StoreURL) -> None:
        self.url = url
        self.client = _client(url)

    def fail(self, exc: BaseException, what: str) -> AssayError:
        """The AssayError for a client exception: config (2) or transient (5); never a secret."""
        from botocore.exceptions import (ClientError, EndpointResolutionError, NoCredentialsError,
                                         PartialCredentialsError)
        where = f"s3://{self.url.bucket}/{what}"
        if isinstance(exc, (NoCredentialsError, PartialCredentialsError)):
            return AssayError(f"{where}: no AWS credentials found; set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY "
                              "(or AWS_PROFILE, or a role for the pod)", 2)
        if isinstance(exc, ClientError):
            code = str(exc.response.get("Error", {}).get("Code") or "")
            status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
            if code in CONFIG_ERRORS or status in (401, 403):
                return AssayError(f"{where}: the store refused: {code or status}; check the bucket name and the "
                                  "credentials' permissions (s3:ListBucket, s3:GetObject, s3:PutObject, "
                                  "s3:DeleteObject)", 2, store_error=code or status)
            return AssayError(f"{where}: the store answered {code or status}; retry", 5, store_error=code or status)
        line = _first_line(exc, getattr(self.client.meta, "endpoint_url", None))
        if isinstance(exc, EndpointResolutionError):   # a malformed endpoint: no retry mends it
            return AssayError(f"{where}: {type(exc).__name__} ({line}); the endpoint is not a URL S3 can be "
                              "reached at: set AWS_ENDPOINT_URL (or the profile's endpoint_url) to "
                              "scheme://host[:port], with no query or fragment", 2)
        return AssayError(f"{where}: {type(exc).__name__} ({line}); check AWS_ENDPOINT_URL and the "
                          "network, then retry", 5)

    def listing(self, prefix: str, *, delimiter: str | None = None) -> tuple[dict[str, int], list[str]]:
        """({key: size}, [sub-prefixes]) under `prefix` (a trailing '/' is added)."""
        objects: dict[str, int] = {}
        prefixes: list[str] = []
        kwargs = {"Bucket": self.url.bucket, "Prefix": prefix.rstrip("/") + "/" if prefix else ""}
        if delimiter:
            kwargs["Delimiter"] = delimiter
        try:
            for page in self.client.get_paginator("list_objects_v2").paginate(**kwargs):
                for obj in page.get("Contents") or []:
                    objects[obj["Key"]] = int(obj.get("Size") or 0)
                prefixes += [p["Prefix"] for p in page.get("CommonPrefixes") or []]
        except Exception as exc:
            raise self.fail(exc, kwargs["Prefix"]) from None
        return objects, prefixes

    def put_file(self, path: Path, key: str) -> None:
        try:
            self.client.upload_file(str(path), self.url.bucket, key)
        except Exception as exc:
            raise self.fail(exc, key) from None

    def put_bytes(self, data: bytes, key: str) -> None:
        try:
            self.client.put_object(Bucket=self.url.bucket, Key=key, Body=data)
        except Exception as exc:
            raise self.fail(exc, key) from None

    def get_file(self, key: str, path: Path) -> None:
        try:
            self.client.download_file(self.url.bucket, key, str(path))
        except Exception as exc:
            raise self.fail(exc, key) from None

    def get_bytes(self, key: str) -> bytes | None:
        """The object's bytes, or None when there is no such key."""
        from botocore.exceptions import ClientError
        try:
            return self.client.get_object(Bucket=self.url.bucket, Key=key)["Body"].read()
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") in ("NoSuchKey", "404"):
                return None
            raise self.fail(exc, key) from None
        except Exception as exc:
            raise self.fail(exc, key) from None

    def delete(self, keys: list[str]) -> None:
        for i in range(0, len(keys), 1000):   # DeleteObjects takes 1,000 keys a call
            try:
                self.client.delete_objects(Bucket=self.url.bucket,
                                           Delete={"Objects": [{"Key": k} for k in keys[i:i + 1000]], "Quiet": True})
            except Exception as exc:
                raise self.fail(exc, keys[i]) from None


def parallel(jobs: list, fn) -> None:
    """Run fn(job) for every job on WORKERS threads; the first AssayError is raised after all finish."""
    from concurrent.futures import ThreadPoolExecutor
    if not jobs:
        return
    with ThreadPoolExecutor(max_workers=min(WORKERS, len(jobs))) as pool:
        for _ in pool.map(fn, jobs):
            pass


def files_of(run_dir: Path) -> Iterator[tuple[Path, str]]:
    """(path, relative key) of every regular file under a run dir, in a stable order; names
    starting with '.' (the runner's temp files) are not part of a run."""
    for root, dirs, files in os.walk(run_dir):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in sorted(files):
            if name.startswith("."):
                continue
            path = Path(root) / name
            if path.is_symlink() or not path.is_file():
                raise AssayError(f"{path}: not a regular file (a link?) inside the run dir; a run dir holds only "
                                 "files the runner wrote: re-run, or --verify it", 2, path=str(path))
            yield path, path.relative_to(run_dir).as_posix()


ENDPOINT_ENV = ("AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3")
CREDENTIAL_ENV = ("AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN")


def _first_line(exc: BaseException, endpoint: str | None = None) -> str:
    """The exception's first line at most 200 characters, with no credential: a URL's user:password@
    masked, and redacted (`writer.clip`, redact then cut) the user:password@, query and fragment of the
    endpoint (`endpoint`: the client's; AWS_ENDPOINT_URL[_S3]: botocore quotes a malformed one whole) and
    the secret key and session token, which no run registered as secrets."""
    import re
    from ..core.secrets import url_credentials
    from ..core.writer import clip
    also = [*url_credentials(endpoint), *(c for n in ENDPOINT_ENV for c in url_credentials(os.environ.get(n))),
            *(os.environ.get(n) for n in CREDENTIAL_ENV)]
    return clip(re.sub(r"//[^/@\s]+@", "//***@", (str(exc).splitlines() or [""])[0]), 200, also=also)
