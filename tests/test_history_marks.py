"""Issue 24 D7: history keeps rescores out of a series, never draws a run the gate closed on
infra or unscored cases as a clean point, `gate --latest` never picks an aborted rescore, and
shard dirs are named as shards (not "not a run id")."""

from __future__ import annotations

from helpers import run_script
from rundir_util import make_run

from assay.history.runs import history


def cases(passes, fails=0, **extra):
    return ([{"id": f"c-p{i}"} for i in range(passes)] + [{"id": f"c-f{i}", "verdict": "fail"} for i in range(fails)]
            + [{"id": f"c-x{i}", **spec} for i, spec in enumerate(extra.get("others", []))])


def rescore_of(run_id):
    return {"manifest_extra": {"dataset_version": 1, "rescored_from": {"run_id": run_id, "run_dir": f"reports/{run_id}"}}}


def test_a_rescored_run_is_not_a_series_point_and_never_drifts(tmp_path):
    reports = tmp_path / "reports"
    for i in range(3):
        make_run(reports, cases(20), run_id=f"regression-2026113{i}T100000Z")
    # a rescore with a rubric fix flips most cases: as a series point it "drifted"
    make_run(reports, cases(4, 16), run_id="regression-20261201T100000Z", manifest=rescore_of("regression-20261130T100000Z"))
    doc = history(tmp_path, verify=False)
    (series,) = doc["series"]
    assert [r["run_id"] for r in series["runs"]] == [f"regression-2026113{i}T100000Z" for i in range(3)]
    assert series["drift"]["flagged"] is False and doc["drift_flagged"] == []
    assert doc["rescored_runs"] == [{"run_id": "regression-20261201T100000Z", "rescored_from": "regression-20261130T100000Z",
                                     "pass_rate": 0.2, "scored": 20, "series": series["name"]}]
    page = run_script("run_history", tmp_path, "--no-verify", "--html", tmp_path / "h.html")
    assert page.rc == 0, page.stdout + page.stderr
    html = (tmp_path / "h.html").read_text()
    assert "Rescored runs" in html and "regression-20261201T100000Z" in html


def test_a_run_closed_on_infra_or_unscored_is_not_drawn_green(tmp_path):
    reports = tmp_path / "reports"
    make_run(reports, cases(5), run_id="smoke-20261130T100000Z")
    make_run(reports, cases(5, others=[{"verdict": "infra_error"}] * 3), run_id="smoke-20261130T110000Z")
    make_run(reports, cases(5, others=[{"verdict": "unscored"}] * 2), run_id="smoke-20261130T120000Z")
    doc = history(tmp_path, verify=False)
    runs = {r["run_id"]: r for r in doc["series"][0]["runs"]}
    assert runs["smoke-20261130T100000Z"]["clean"] is True
    assert runs["smoke-20261130T110000Z"]["clean"] is False and "3 infra" in runs["smoke-20261130T110000Z"]["not_clean"]
    assert runs["smoke-20261130T120000Z"]["clean"] is False and "2 unscored" in runs["smoke-20261130T120000Z"]["not_clean"]
    run_script("run_history", tmp_path, "--no-verify", "--html", tmp_path / "h.html")
    html = (tmp_path / "h.html").read_text()
    green = html.count('fill="#17633a"') + html.count('stroke="#17633a"')   # --no-verify: hollow, not verified
    assert green == 1, html  # only the clean run is a green point
    assert "smoke-20261130T110000Z: 100.0 % of scored (not clean: 3 infra" in html


def test_gate_latest_skips_an_aborted_rescore(tmp_path):
    reports = tmp_path / "reports"
    make_run(reports, cases(3), run_id="regression-20261130T100000Z")
    make_run(reports, cases(1), run_id="regression-20261201T100000Z", status="aborted_infra", exit_code=5,
             manifest=rescore_of("regression-20261130T100000Z"))
    g = run_script("gate", "--latest", reports, "--no-verify")
    assert g.stdout.startswith("regression-20261130T100000Z: PASS"), g.stdout
    assert "skipped regression-20261201T100000Z (a rescore that did not finish" in g.stderr, g.stderr


def test_shard_dirs_are_named_as_shards(tmp_path):
    reports = tmp_path / "reports"
    make_run(reports, cases(3), run_id="regression-20261130T100000Z")
    (reports / "regression-20261201T100000Z.shard-2").mkdir()
    doc = history(tmp_path, verify=False)
    (ex,) = doc["excluded_runs"]
    assert ex["run_id"] == "regression-20261201T100000Z.shard-2"
    assert ex["reason"].startswith("shard 2 of run regression-20261201T100000Z: a slice of a run")
    assert "merge_runs.py" in ex["reason"] and "not a run id" not in ex["reason"]
