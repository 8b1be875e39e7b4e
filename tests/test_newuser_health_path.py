"""A new user's health check names a path the app does not have (`/health` for an app serving
`/healthz`), or puts the endpoint's path into base_url (`http://host/chat` + `POST /chat`), so the
health path lands under it. The app answered 404 and pre-flight asked "is the app healthy?" under
the key `expect_status`: the app was healthy and the path was wrong. Now the 404 (and a 405) says the
app is up and names the key to fix. run_cases.py runs as a subprocess against a real app on its own
port.
"""

from __future__ import annotations

from fakeapp import FakeApp, Reply, adapter, case, make_plan, make_state, write_plan, run_runner


def health(req) -> Reply:
    if req.method == "GET" and req.path == "/healthz":
        return Reply(200, {"ok": True})
    if req.path == "/api/chat" and req.method == "POST":
        return Reply(200, {"message": "hello there", "route": None})
    return Reply(405 if req.path == "/healthz" else 404, {"detail": "no"})


def preflight(tmp_path, base: str, **hc) -> tuple:
    state = make_state(tmp_path)
    with FakeApp(health) as app:
        plan = make_plan(state, [case("c-1")], adapter_doc=adapter(app.url + base, health_check=hc))
        out = state / "reports" / plan["run_id"]
        r = run_runner("--plan", write_plan(state, plan), "--out", out)
        posts = app.count(path="/api/chat")
    assert r.rc == 3 and posts == 0 and not (out / "results.json").exists(), r.stdout + r.stderr
    return r.json


def test_a_health_path_the_app_lacks_names_the_path_not_the_apps_health(tmp_path):
    doc = preflight(tmp_path, "", method="GET", path="/health", expect_status=[200])
    assert doc["key"] == "invocation.health_check.path" and doc["status"] == 404, doc
    assert "returned 404, not one of [200]; the app answered, so it is up, but it has no route there: set " \
           "invocation.health_check.path in adapter.yaml" in doc["error"], doc["error"]
    assert "is the app healthy" not in doc["error"]


def test_a_base_url_holding_the_endpoints_path_is_named(tmp_path):
    doc = preflight(tmp_path, "/api", method="GET", path="/healthz", expect_status=[200])
    assert doc["key"] == "invocation.health_check.path", doc
    assert "(base_url holds a path of its own, put before this path and the endpoint's: is it part of the " \
           "endpoint? then base_url ends at the port)" in doc["error"], doc["error"]


def test_a_method_the_route_does_not_take_names_the_method(tmp_path):
    doc = preflight(tmp_path, "", method="POST", path="/healthz", expect_status=[200])
    assert doc["key"] == "invocation.health_check.method" and doc["status"] == 405, doc
    assert "that route does not take POST: set invocation.health_check.method" in doc["error"], doc["error"]


def test_a_declared_health_path_without_expect_status_is_still_checked(tmp_path):
    """`health_check: {path: /health}` with no expect_status: the app answered 404 there and pre-flight
    took any status as up, so a typo'd health route never said so. A declared path now must be a route
    the app has (404 / 405 refused); an undeclared probe of base_url still takes any status."""
    doc = preflight(tmp_path, "", method="GET", path="/health")
    assert doc["key"] == "invocation.health_check.path" and doc["status"] == 404, doc
    assert "returned 404 (no expect_status, but a declared path must be a route the app has)" in doc["error"]
    assert "set invocation.health_check.path in adapter.yaml" in doc["error"], doc["error"]
    doc = preflight(tmp_path / "m", "", method="POST", path="/healthz")
    assert doc["key"] == "invocation.health_check.method" and doc["status"] == 405, doc
