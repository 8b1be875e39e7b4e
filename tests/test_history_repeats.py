"""Regressions, fixes and flaky cases at k = 2, over five real runs of a local app (run_cases.py against it
on a free port): `c-breaks` passes both repeats in runs 1-2 and fails both in runs 3-5 (a regression since
run 3, never flaky), `c-broke-fixed` fails both repeats in run 3 only (a break then its fix: a fix, its
repeats agreed in every run), `c-wobbles` answers wrong on every second call (its repeats disagree in
every run: flaky, though its pass^k verdict never flips), `c-breaks-flaking` passes both repeats in runs 1-2,
one of two in run 3 and neither after (it flaked as it broke, and stayed broken: a regression since run 3,
which the history called "flaky"). run_history.py, its page and the viewer's
/api/history say so; so does `run_history.py --store` over the same runs published, which mirrored only
the verdict files and not reliability.json: it listed no flaky case at all and called the break that was
fixed "flaky"."""

from __future__ import annotations

import json
import re
import urllib.request

import pytest

from fakeapp import Reply, case, make_state, run_series
from helpers import run_script, view_server
from s3server import BUCKET, have_moto, served

pytestmark = pytest.mark.slow

RUNS = [f"smoke-2026120{i}T100000Z" for i in range(1, 6)]
REGRESSION = ("c-breaks", "regression", RUNS[2], ["pass", "pass", "fail", "fail", "fail"])
FIX = ("c-broke-fixed", "fix", RUNS[3], ["pass", "pass", "fail", "pass", "pass"])
# passes both repeats in runs 1-2, one of two in run 3 (it flaked as it broke), neither in runs 4-5: a regression
SPLIT_BREAK = ("c-breaks-flaking", "regression", RUNS[2], ["pass", "pass", "fail", "fail", "fail"])


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("history-k2")
    state = make_state(tmp)
    cases = [case("c-breaks", "breaks"), case("c-broke-fixed", "broke fixed"), case("c-steady", "steady"),
             case("c-breaks-flaking", "breaks flaking"), case("c-wobbles", "wobbles")]

    def wrong(run_id: str, msg: str, n: int) -> bool:
        return ((msg == "breaks" and run_id in RUNS[2:]) or (msg == "broke fixed" and run_id == RUNS[2])
                or (msg == "breaks flaking" and (run_id in RUNS[3:] or (run_id == RUNS[2] and n == 2)))
                or (msg == "wobbles" and n % 2 == 0))

    run_series(state, RUNS, lambda run_id: cases, wrong, lambda run_id: 2)
    return state


def _words(doc: dict) -> tuple[list, list]:
    (series,) = doc["series"]
    return ([(f["case_id"], f["flips"], f["repeats_disagreed_in"]) for f in series["flaky"]],
            [(c["case_id"], c["kind"], c["since_run"], c["sequence"]) for c in series["changed"]])


FLAKY = [("c-wobbles", 0, RUNS)]
CHANGED = [REGRESSION, SPLIT_BREAK, FIX]


def test_a_break_that_stayed_at_k2_is_a_regression_and_disagreeing_repeats_are_flaky(runs, tmp_path):
    r = run_script("run_history", runs, "-o", tmp_path / "h.json", "--html", tmp_path / "h.html")
    assert r.rc == 0 and r.json["flaky_cases"] == 1 and r.json["excluded_runs"] == 0, r.stdout + r.stderr
    doc = json.loads((tmp_path / "h.json").read_text(encoding="utf-8"))
    assert _words(doc) == (FLAKY, CHANGED)
    assert [c["case_id"] for c in doc["changed_cases"]] == ["c-breaks", "c-breaks-flaking", "c-broke-fixed"]
    page = (tmp_path / "h.html").read_text(encoding="utf-8")
    flaky_table, changed_table = page.split("<h3>Flaky cases (1)</h3>")[1].split("<h3>Regressions and fixes")
    assert "c-wobbles" in flaky_table and "c-breaks" not in flaky_table and "c-broke-fixed" not in flaky_table
    assert "<code>c-breaks</code></td><td>regression</td>" in changed_table
    assert f"<code>c-breaks-flaking</code></td><td>regression</td><td><code>{RUNS[2]}</code>" in changed_table
    assert f"(its repeats split in <code>{RUNS[2]}</code> as it changed)" in changed_table
    with view_server(runs) as url:
        with urllib.request.urlopen(url + "/api/history", timeout=300) as resp:
            api = json.loads(resp.read().decode("utf-8"))
    assert _words(api) == (FLAKY, CHANGED)


def test_a_series_with_no_cost_says_so_in_words_and_draws_its_latency(runs, tmp_path):
    """The fake app's runs have no trace to price: the page's cost chart is words, never an empty chart or a 0;
    every run was timed, so the p95 latency is a line through the five runs with the latest in words."""
    r = run_script("run_history", runs, "--no-verify", "-o", tmp_path / "h.json", "--html", tmp_path / "h.html")
    assert r.rc == 0, r.stdout + r.stderr
    (series,) = json.loads((tmp_path / "h.json").read_text(encoding="utf-8"))["series"]
    assert [x["cost_per_case"] for x in series["runs"]] == [None] * 5
    rate, cost, latency = re.findall(r"<figure>.*?</figure>", (tmp_path / "h.html").read_text(encoding="utf-8"), re.S)
    assert "<svg" not in cost and "no cost in this series: no run priced its cases" in cost, cost
    assert "currency unknown" in cost
    assert latency.count("<circle") == 5 and latency.count("<polyline") == 1 and "latest <strong>" in latency
    assert rate.count("<circle") == 5


@pytest.mark.skipif(not have_moto(), reason="needs boto3 and moto (pip install -e '.[test,s3]')")
def test_history_from_the_store_reads_the_repeats_as_the_local_read_does(runs, s3_server, tmp_path):
    with served(BUCKET, lambda req: Reply(200, {"ok": True}), s3_server) as (server, _):
        store = f"s3://{BUCKET}/runs"
        for run_id in RUNS:
            r = run_script("publish_run", runs / "reports" / run_id, store, env=server.env)
            assert r.rc == 0, r.stdout + r.stderr
        r = run_script("run_history", tmp_path, "--store", store, "-o", tmp_path / "h.json", env=server.env)
    assert r.rc == 0 and r.json["runs_used"] == len(RUNS), r.stdout + r.stderr
    doc = json.loads((tmp_path / "h.json").read_text(encoding="utf-8"))
    assert _words(doc) == (FLAKY, CHANGED), _words(doc)
    assert r.json["flaky_cases"] == 1, r.stdout
    assert doc["checked_here"] == [] and doc["method"]["verified"].startswith("at publish"), doc["method"]


def _passing(rel: str, data: bytes) -> bytes:
    """A run's file as a user's edit leaves it: every fail a pass, results.json's counts to match."""
    if rel in ("verdicts.jsonl", "verdicts_for_stats.jsonl"):
        return data.replace(b'"fail"', b'"pass"')
    if rel == "results.json":
        doc = json.loads(data)
        s = doc["summary"]
        s["passes"], s["failures"], s["gating_failures"] = s["passes"] + s["failures"], 0, 0
        for row in doc.get("cases") or []:
            row["verdict"], row["failed_layers"] = "pass", []
        return json.dumps(doc).encode("utf-8")
    return data


@pytest.mark.skipif(not have_moto(), reason="needs boto3 and moto (pip install -e '.[test,s3]')")
def test_history_from_the_store_checks_runs_put_there_by_hand(runs, s3_server, tmp_path):
    """`aws s3 sync reports/ s3://.../` instead of publish_run.py: the layout is a published run's, but nothing
    checked it. run_history.py --store took such a run as "verified at publish" (its gate open, every case a pass,
    for a run whose verdicts were edited); so it did a published run whose verdict files were synced over
    by hand. Now a run without a matching publish record is downloaded whole and checked: an edited one is an
    excluded run naming the fix, an unedited one counts (checked here), the published ones are read as before."""
    with served(BUCKET, lambda req: Reply(200, {"ok": True}), s3_server) as (server, _):
        store, client = f"s3://{BUCKET}/runs", server.client()
        for run_id in (RUNS[0], RUNS[1], RUNS[4]):
            assert run_script("publish_run", runs / "reports" / run_id, store, env=server.env).rc == 0

        def by_hand(run_id: str, edit, only=None) -> None:   # `aws s3 cp --recursive` of the run dir, edited
            for path in sorted((runs / "reports" / run_id).rglob("*")):
                rel = path.relative_to(runs / "reports" / run_id).as_posix()
                if path.is_file() and (only is None or rel in only):
                    client.put_object(Bucket=BUCKET, Key=f"runs/{run_id}/{rel}", Body=edit(rel, path.read_bytes()))
        by_hand(RUNS[2], _passing)                                     # never published, edited
        by_hand(RUNS[3], lambda rel, data: data)                       # never published, as the runner wrote it
        by_hand(RUNS[4], _passing, only=("verdicts.jsonl", "verdicts_for_stats.jsonl", "results.json"))
        r = run_script("run_history", tmp_path, "--store", store, "-o", tmp_path / "h.json",
                       "--html", tmp_path / "h.html", env=server.env)
    assert r.rc == 0, r.stdout + r.stderr
    doc = json.loads((tmp_path / "h.json").read_text(encoding="utf-8"))
    used = {run["run_id"]: run for s in doc["series"] for run in s["runs"]}
    assert sorted(used) == [RUNS[0], RUNS[1], RUNS[3]], (sorted(used), doc["excluded_runs"])
    assert all(run["gate"] == "closed" for run in used.values())   # c-wobbles fails in every run
    assert used[RUNS[3]]["verified"] is True
    # the published runs were checked at publish on these bytes: verified, never "not verified" on the page
    assert all(used[r]["verified"] is True and used[r]["verified_at"] == "publish" for r in (RUNS[0], RUNS[1]))
    assert doc["runs_verified"] == doc["runs_used"] == 3
    excluded = {x["run_id"]: x["reason"] for x in doc["excluded_runs"]}
    assert sorted(excluded) == [RUNS[2], RUNS[4]], excluded
    assert "run_cases.py --verify exit 6" in excluded[RUNS[2]] and "no .assay-published.json" in excluded[RUNS[2]]
    assert "not the ones published and checked (results.json, verdicts.jsonl" in excluded[RUNS[4]], excluded[RUNS[4]]
    assert all("publish_run.py RUN_DIR" in why and "not aws s3 sync" in why for why in excluded.values())
    assert [x["run_id"] for x in doc["checked_here"]] == [RUNS[2], RUNS[3], RUNS[4]]
    assert "checked here in full" in doc["method"]["verified"]
    page = (tmp_path / "h.html").read_text(encoding="utf-8")
    assert "not aws s3 sync" in page
    assert "not verified (run_cases.py --verify not run on it)" not in page and "0 not verified" in page
