"""Store URLs: `s3://bucket/prefix`, and where a run or a shard lives under one."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Mapping

from ..core.errors import AssayError

SCHEME = "s3://"
STORE_ENV = "ASSAY_STORE"
MANIFEST = "manifest.yaml"
SHARD_RE = re.compile(r"shard-(\d+)-of-(\d+)")
# S3's own bucket-name rules (3-63 of a-z 0-9 . -), so a typo is named here, not by the server
BUCKET_RE = re.compile(r"[a-z0-9][a-z0-9.\-]{1,61}[a-z0-9]")


def is_store_url(text: object) -> bool:
    return isinstance(text, str) and text.startswith(SCHEME)


@dataclass(frozen=True)
class StoreURL:
    bucket: str
    prefix: str   # no leading or trailing slash; "" is the bucket's root

    def key(self, *parts: str) -> str:
        return "/".join(p.strip("/") for p in (self.prefix, *parts) if p.strip("/"))

    def child(self, *parts: str) -> "StoreURL":
        return StoreURL(self.bucket, self.key(*parts))

    def __str__(self) -> str:
        return f"{SCHEME}{self.bucket}/{self.prefix}/" if self.prefix else f"{SCHEME}{self.bucket}/"


# Kubernetes expands `$(VAR)` in a container's command and args from its env, and leaves the
# reference as it is when VAR is not defined there (a misspelled name reaches the script literally)
KUBE_VAR_RE = re.compile(r"\$\(([A-Za-z_][A-Za-z0-9_]*)\)")


def shown(text: object) -> str:
    """The argument as a refusal quotes it (repr): a URL's userinfo, query and fragment redacted first
    (`url_credentials`; a presigned URL's signature and session token, a `user:password@`)."""
    from ..core.secrets import url_credentials
    from ..core.writer import clip
    return repr(clip(text, 300, ellipsis="...", also=url_credentials(text)))


def parse(text: str, what: str = "store URL") -> StoreURL:
    """`s3://bucket[/prefix[/]]` -> StoreURL; AssayError(2) naming the fix otherwise. A refusal quotes
    the argument with its credentials redacted (`shown`)."""
    unexpanded = KUBE_VAR_RE.search(text) if isinstance(text, str) else None
    if unexpanded:
        raise AssayError(f"{what} {shown(text)}: {unexpanded.group(0)} was never expanded: Kubernetes leaves a "
                         f"`$(VAR)` in a container's command or args as it is when VAR is not defined in that "
                         f"container's env. Define {unexpanded.group(1)} in the Job's env (or fix the name to one "
                         "that is), so the argument becomes s3://<bucket>/<prefix>", 2, key=what)
    if not is_store_url(text):
        raise AssayError(f"{what} {shown(text)}: not an s3:// URL; give s3://<bucket>/<prefix> (S3, MinIO, R2 or GCS "
                         "interop: the endpoint comes from AWS_ENDPOINT_URL)" + _credential_words(text), 2, key=what)
    bucket, _, prefix = text[len(SCHEME):].partition("/")
    if "@" in bucket or "?" in text or "#" in text:   # a credential pasted into the URL: never used, never quoted
        plain = bucket.rpartition("@")[2] + "/" + prefix.split("?")[0].split("#")[0].strip("/")
        raise AssayError(f"{what} {shown(text)}: a store URL is s3://<bucket>/<prefix> only: no user:secret@, "
                         f"no ?query or #fragment (a presigned URL's signature?)" + _credential_words(text, True)
                         + f"; give s3://{plain.rstrip('/')}", 2, key=what)
    if not BUCKET_RE.fullmatch(bucket):
        raise AssayError(f"{what} {shown(text)}: {bucket!r} is not a bucket name (3-63 characters of a-z, 0-9, '.', "
                         "'-'); give s3://<bucket>/<prefix>", 2, key=what)
    parts = [p for p in prefix.split("/") if p]
    spaced = next((p for p in parts if p != p.strip()), None)
    if spaced is not None:   # a copied line's stray space: "runs " is another prefix than "runs"
        raise AssayError(f"{what} {shown(text)}: the prefix part {spaced!r} starts or ends with white space (a "
                         f"stray space from a copied line?); give s3://{bucket}/{'/'.join(p.strip() for p in parts)}",
                         2, key=what)
    if any(p in (".", "..") for p in parts):
        raise AssayError(f"{what} {shown(text)}: '.' and '..' are not prefix parts; give s3://<bucket>/<prefix>", 2,
                         key=what)
    return StoreURL(bucket, "/".join(parts))


def _credential_words(text: object, always: bool = False) -> str:
    """What to do with the credential a URL carried: assay signs each request itself, with the
    AWS variables' credentials (a presigned URL grants one object, never a prefix to list)."""
    from ..core.secrets import url_credentials
    if not (always or url_credentials(text)):
        return ""
    return ("; assay signs its own requests: give the credentials as AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY "
            "(AWS_SESSION_TOKEN), AWS_PROFILE or the pod's role, the endpoint as AWS_ENDPOINT_URL, and treat the "
            "one pasted here as leaked (rotate it)")


def configured(arg: str | None, environ: Mapping[str, str] | None = None) -> StoreURL | None:
    """The store a reader uses: `--store URL`, else $ASSAY_STORE, else None (reports/ only)."""
    environ = os.environ if environ is None else environ
    text = arg or (environ.get(STORE_ENV) or "").strip() or None
    return parse(text, "--store" if arg else STORE_ENV) if text else None


def shard_part(index: int, count: int) -> str:
    return f"shard-{index}-of-{count}"


def run_location(base: StoreURL, run_id: str, shard: Mapping | None) -> StoreURL:
    """Where a run dir goes: `<prefix>/<run-id>/`, a shard's `<prefix>/<run-id>/shard-<I>-of-<N>/`."""
    if shard:
        return base.child(run_id, shard_part(int(shard["index"]), int(shard["count"])))
    return base.child(run_id)
