"""The store's refusals that need no server: a missing s3 extra is one line naming the install
command, a bad URL is exit 2 naming the fix, both before a run sends its first case; and a process
sets up one S3 client, not one per store operation."""

from __future__ import annotations

import os

import pytest

from fakeapp import case, make_plan, make_state, write_plan
from helpers import run_script

from assay.core.errors import AssayError
from assay.store import url


def no_boto3(tmp_path):
    shadow = tmp_path / "shadow" / "boto3"
    shadow.mkdir(parents=True, exist_ok=True)
    (shadow / "__init__.py").write_text("raise ImportError(\"No module named 'boto3'\")\n")
    return {"PYTHONPATH": str(shadow.parent)}


def test_a_missing_extra_is_one_line_naming_the_install(tmp_path):
    state = make_state(tmp_path)
    r = run_script("publish_run", state / "reports", "s3://assay-runs/ci", env=no_boto3(tmp_path))
    assert r.rc == 2 and r.json["error"] == "s3:// store URLs need the s3 extra (boto3): pip install 'assay[s3]'"
    assert "Traceback" not in r.stderr
    plan = write_plan(state, make_plan(state, [case("c-1")]))
    r = run_script("run_cases", "--plan", plan, "--out", state / "reports" / "smoke-20261129T101500Z",
                   "--publish", "s3://assay-runs/ci", env=no_boto3(tmp_path))
    assert r.rc == 2 and "pip install 'assay[s3]'" in r.json["error"]
    assert not any((state / "reports").iterdir())   # refused before the run
    r = run_script("merge_runs", "--plan", plan, "--out", state / "reports" / "x", "s3://assay-runs/ci/x/",
                   env=no_boto3(tmp_path))
    assert r.rc == 2 and "shards block" in r.json["error"]   # the plan's own refusal comes first


@pytest.mark.parametrize("text, said", [
    ("/tmp/runs", "not an s3:// URL"),
    ("s3://A_B/x", "is not a bucket name"),
    ("s3://ab/x", "is not a bucket name"),
    ("s3://assay-runs/a/../b", "'.' and '..'"),
    # --publish "s3://assay-runs/runs " published under the prefix "runs /" (ASSAY_STORE is trimmed)
    ("s3://assay-runs/runs ", "the prefix part 'runs ' starts or ends with white space"),
    ("s3://assay-runs/ ci/x", "give s3://assay-runs/ci/x"),
])
def test_bad_urls_are_named(text, said):
    with pytest.raises(AssayError) as err:
        url.parse(text)
    assert err.value.code == 2 and said in err.value.message


def test_an_unexpanded_kubernetes_variable_is_named(tmp_path):
    # a Job's `args: [--publish, $(ASSAY_SHARDS)]` with the env var misspelled: Kubernetes passes it literally
    state = make_state(tmp_path)
    plan = write_plan(state, make_plan(state, [case("c-1")]))
    r = run_script("run_cases", "--plan", plan, "--out", state / "reports" / "smoke-20261129T101500Z",
                   "--publish", "$(ASSAY_SHARDS)")
    assert r.rc == 2 and r.json["error"] == (
        "--publish '$(ASSAY_SHARDS)': $(ASSAY_SHARDS) was never expanded: Kubernetes leaves a `$(VAR)` in a "
        "container's command or args as it is when VAR is not defined in that container's env. Define "
        "ASSAY_SHARDS in the Job's env (or fix the name to one that is), so the argument becomes "
        "s3://<bucket>/<prefix>"), r.stdout + r.stderr
    assert not any((state / "reports").iterdir())   # refused before the run
    with pytest.raises(AssayError, match=r"\$\(BUCKET\) was never expanded"):
        url.parse("s3://$(BUCKET)/ci")   # a reference inside an s3:// URL is named as such, not as a bad bucket


def test_publish_run_names_its_store_positional_not_run_cases_flag(tmp_path):
    """publish_run.py RUN STORE with a bad STORE said "--publish ...", key --publish: a flag it has not."""
    state = make_state(tmp_path)
    r = run_script("publish_run", state / "reports", "http://minio.local/assay")
    assert r.rc == 2 and r.json["key"] == "store", r.stdout + r.stderr
    assert r.json["error"].startswith("store 'http://minio.local/assay': not an s3:// URL"), r.json
    assert "--publish" not in r.stdout


def test_layout():
    base = url.parse("s3://assay-runs/ci/")
    assert str(base) == "s3://assay-runs/ci/"
    assert str(url.run_location(base, "smoke-20261129T101500Z", None)) == "s3://assay-runs/ci/smoke-20261129T101500Z/"
    loc = url.run_location(base, "smoke-20261129T101500Z", {"index": 2, "count": 16})
    assert loc.key("manifest.yaml") == "ci/smoke-20261129T101500Z/shard-2-of-16/manifest.yaml"
    assert url.configured(None, {"ASSAY_STORE": "s3://assay-runs/x"}) == url.parse("s3://assay-runs/x")
    assert url.configured(None, {}) is None


def test_an_endpoint_with_credentials_in_it_is_never_printed():
    from s3server import free_port, have_moto
    if not have_moto():
        pytest.skip("needs boto3 (pip install -e '.[test]')")
    endpoint = f"http://admin:hunter2-Zq8w@127.0.0.1:{free_port()}"   # nothing listens there
    from assay.store.client import Store, _first_line
    assert "hunter2" not in _first_line(ValueError(f"Could not connect to the endpoint URL: \"{endpoint}/x\""))
    import os
    saved = {k: os.environ.get(k) for k in ("AWS_ENDPOINT_URL", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY")}
    os.environ.update({"AWS_ENDPOINT_URL": endpoint, "AWS_ACCESS_KEY_ID": "k", "AWS_SECRET_ACCESS_KEY": "s"})
    try:
        store = Store(url.parse("s3://assay-runs/ci"))
        store.client.meta.config.retries["max_attempts"] = 1
        with pytest.raises(AssayError) as err:
            store.listing("ci")
    finally:
        for k, v in saved.items():
            os.environ.pop(k, None) if v is None else os.environ.__setitem__(k, v)
    assert err.value.code == 5 and "hunter2" not in err.value.message and "AWS_ENDPOINT_URL" in err.value.message


def test_a_token_in_the_endpoints_query_is_never_printed(tmp_path):
    """AWS_ENDPOINT_URL with a credential in its query (a presigned-style `?X-Amz-Security-Token=`, a
    gateway's `?key=`): botocore refuses it as no valid URI and quotes it whole. Only a `user:pw@` was
    masked, so `view.py --store` printed the token, and said "retry" (exit 5, which a Kubernetes index
    retries) for an endpoint no retry mends. Now the query is redacted, the error is exit 2 naming
    AWS_ENDPOINT_URL and the shape it takes."""
    from s3server import free_port, have_moto
    if not have_moto():
        pytest.skip("needs boto3 (pip install -e '.[test]')")
    token = "sk-ant-TESTSECRET-endpoint-4f9a1c77e0b2"
    env = {"AWS_ENDPOINT_URL": f"http://admin:hunter2-Zq8w@127.0.0.1:{free_port()}/?X-Amz-Security-Token={token}",
           "AWS_ACCESS_KEY_ID": "k", "AWS_SECRET_ACCESS_KEY": "s", "AWS_REGION": "us-east-1", "AWS_MAX_ATTEMPTS": "1",
           "AWS_CONFIG_FILE": "/dev/null", "AWS_SHARED_CREDENTIALS_FILE": "/dev/null"}
    r = run_script("view", "--store", "s3://assay-runs/ci", "--serve-seconds", "1", env=env)
    out = r.stdout + r.stderr
    assert "TESTSECRET" not in out and "hunter2" not in out, out
    assert r.rc == 2, out
    assert "AWS_ENDPOINT_URL" in r.json["error"] and "scheme://host[:port]" in r.json["error"], r.json
    assert "<redacted>" in r.json["error"] and "127.0.0.1" in r.json["error"], r.json   # what was wrong stays said


def test_a_credential_pasted_into_the_store_url_is_refused_and_never_printed(tmp_path):
    """A newcomer gives the store as a presigned URL, an `https://user:secret@host/bucket` MinIO address,
    or `s3://KEY:SECRET@bucket/prefix`. Each refusal quoted the URL whole (the signature, the session
    token, the secret in the job's log), and `s3://bucket/prefix?X-Amz-Signature=...` was published,
    exit 0, under a prefix holding the signature. Now each is exit 2 naming the AWS variables, the
    credential redacted, nothing uploaded."""
    from s3server import BUCKET, have_moto, served
    if not have_moto():
        pytest.skip("needs boto3 and moto (pip install -e '.[test,s3]')")
    from fakeapp import Reply, adapter, run_runner
    sig, token, secret = "SIGc0ffee9d2a7", "TOKq8Zr2Lw9", "KEYx7Pm3Vb1"
    with served(BUCKET, lambda req: Reply(200, {"message": "re: hello", "route": "r"})) as (server, app):
        state = make_state(tmp_path)
        run_id = "regression-20261201T100000Z"
        plan = write_plan(state, make_plan(state, [case("c-1", split=["full"])], adapter_doc=adapter(app.url),
                                           run_id=run_id, mode="regression", selecting_split="full"))
        run = state / "reports" / run_id
        assert run_runner("--plan", plan, "--out", run, "--progress", "never", env=server.env).rc == 0
        for store in (f"s3://{BUCKET}/runs?X-Amz-Signature={sig}&X-Amz-Security-Token={token}",
                      f"https://{BUCKET}.s3.amazonaws.com/runs?X-Amz-Signature={sig}",
                      f"http://admin:{secret}@127.0.0.1:9000/{BUCKET}/runs",
                      f"s3://AKIAEXAMPLE:{secret}@{BUCKET}/runs"):
            for r in (run_script("publish_run", run, store, env=server.env),
                      run_script("compare_runs", "auto", run, env=dict(server.env, ASSAY_STORE=store)),
                      run_runner("--plan", plan, "--out", tmp_path / "again", "--publish", store, env=server.env)):
                out = r.stdout + r.stderr
                assert r.rc == 2 and "AWS_ACCESS_KEY_ID" in r.json["error"], out
                assert "<redacted>" in r.json["error"], out
                assert sig not in out and token not in out and secret not in out, out
        assert "Contents" not in server.client().list_objects_v2(Bucket=BUCKET)   # nothing was uploaded


def test_one_s3_client_per_process_and_aws_environment(monkeypatch):
    """A pod with --publish made a boto3 session and client for its pre-flight check, another for its
    claim, another for its publish (a merge: its listing, fetch and look fold), each reloading botocore's
    S3 model (~60-100 ms CPU). Every Store of a process now shares one client per AWS environment; a
    changed endpoint, credential or region gets its own (never a client set up for other settings)."""
    from s3server import free_port, have_moto
    if not have_moto():
        pytest.skip("needs boto3 (pip install -e '.[test]')")
    import boto3
    from assay.store.client import Store
    made = []
    real = boto3.session.Session

    class Counting(real):
        def client(self, *args, **kwargs):
            made.append(kwargs.get("region_name"))
            return super().client(*args, **kwargs)

    monkeypatch.setattr(boto3.session, "Session", Counting)
    endpoint = f"http://127.0.0.1:{free_port()}"   # nothing listens there: no request is sent
    for k, v in {"AWS_ENDPOINT_URL": endpoint, "AWS_ACCESS_KEY_ID": "k", "AWS_SECRET_ACCESS_KEY": "s",
                 "AWS_REGION": "us-east-1", "AWS_CONFIG_FILE": "/dev/null",
                 "AWS_SHARED_CREDENTIALS_FILE": "/dev/null"}.items():
        monkeypatch.setenv(k, v)
    first, second = Store(url.parse("s3://assay-runs/ci")), Store(url.parse("s3://other-bucket/x"))
    assert first.client is second.client and len(made) == 1   # before: two sessions, two clients
    monkeypatch.setenv("AWS_REGION", "eu-west-1")
    third = Store(url.parse("s3://assay-runs/ci"))
    assert third.client is not first.client and made == ["us-east-1", "eu-west-1"]
    assert third.client.meta.region_name == "eu-west-1"
    monkeypatch.setenv("AWS_ENDPOINT_URL", f"http://127.0.0.1:{free_port()}")
    assert Store(url.parse("s3://assay-runs/ci")).client.meta.endpoint_url == os.environ["AWS_ENDPOINT_URL"]
    assert len(made) == 3
