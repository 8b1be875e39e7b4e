"""A local S3-compatible server for the store tests and bench: moto's server mode (the `moto`
package of the test extra), its own process on 127.0.0.1 and a free port, stopped by the caller.

`S3Server().start()` waits until it answers; `.env` holds the AWS variables a client process
needs (AWS_ENDPOINT_URL and throwaway credentials: moto accepts any); `.client()` is a boto3
client for setting up and tampering in tests.
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import time
import urllib.request

BUCKET = "assay-runs"
# a throwaway credential that must appear in no output and no file (the tests grep for it)
SECRET = "assay-test-secret-Zq8w"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def have_moto() -> bool:
    try:
        import boto3  # noqa: F401
        import moto.server  # noqa: F401
    except ImportError:
        return False
    return True


class S3Server:
    def __init__(self) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.env = {"AWS_ENDPOINT_URL": self.url, "AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": SECRET,
                    "AWS_REGION": "us-east-1",
                    "AWS_CONFIG_FILE": os.devnull, "AWS_SHARED_CREDENTIALS_FILE": os.devnull}
        self.proc: subprocess.Popen | None = None

    def start(self, wait_s: float = 90.0) -> "S3Server":
        self.proc = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(self.port)],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + wait_s   # a loaded machine imports Flask and moto slowly
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"moto server exited {self.proc.returncode}")
            try:
                urllib.request.urlopen(self.url + "/moto-api/", timeout=2).close()
                return self
            except OSError:
                time.sleep(0.2)
        self.stop()
        raise RuntimeError(f"moto server did not answer on {self.url} within {wait_s} s")

    def client(self):
        import boto3
        return boto3.session.Session().client(
            "s3", endpoint_url=self.url, region_name="us-east-1", aws_access_key_id="testing",
            aws_secret_access_key=SECRET)

    def reset(self) -> "S3Server":
        """Every bucket and object gone, as on a server just started (moto's reset API): a module's
        tests share one server (~1 CPU s to start) and each starts from an empty store."""
        urllib.request.urlopen(urllib.request.Request(self.url + "/moto-api/reset", data=b"", method="POST"),
                               timeout=30).close()
        return self

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


@contextlib.contextmanager
def served(bucket: str, handler, server: S3Server | None = None):
    """A local S3 server with `bucket` made, and a FakeApp answering `handler` (both stopped on exit):
    the store tests' world. Yields (server, app). `server`: a running one (the module's `s3_server`
    fixture), reset to empty here and left running."""
    from fakeapp import FakeApp
    own = server is None
    server = S3Server().start() if own else server.reset()
    try:
        client = server.client()
        assert not client.list_buckets()["Buckets"], "the shared S3 server was not reset"
        client.create_bucket(Bucket=bucket)
        with FakeApp(handler) as app:
            yield server, app
    finally:
        if own:
            server.stop()
