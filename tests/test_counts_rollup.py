"""Pure pieces of the runner: rollup, repeat fold, counts, retry waits, templates, artifact table."""

from __future__ import annotations

import itertools

import pytest

from assay.core.vocab import LAYER_ORDER
from assay.rundir import artifacts
from assay.invoke import templates
from assay.invoke.outcome import RETRY_AFTER_CAP_S, decode_body, parse_retry_after, retry_wait
from assay.score.rollup import case_verdict, fold_repeats
from assay.stats.counts import summarize


def layers(**given):
    out = {name: "n/a" for name in LAYER_ORDER}
    out.update(given)
    return out


@pytest.mark.parametrize("given, expected", [
    ({"http": "infra_error"}, "infra_error"),
    ({"http": "pass", "trajectory": "infra_incomplete", "answer": "fail"}, "infra_incomplete"),
    ({"http": "pass", "answer": "fail", "routing": "pass"}, "fail"),
    ({"http": "pass", "answer": "pass"}, "pass"),
    ({"http": "pass"}, "unscored"),                                    # hollow: nothing beyond liveness
    ({"http": "pass", "answer": "unscored"}, "unscored"),              # http alone never passes a case
    ({"http": "pass", "execution": "unscorable"}, "unscored"),
    ({"http": "pass", "loops": "pass"}, "unscored"),                   # hollow: liveness only
    ({"http": "pass", "answer": "error", "routing": "fail"}, "unscored"),  # a scorer error: not quotable
    ({"http": "fail", "answer": "pass"}, "fail"),
])
def test_case_rollup_first_match_wins(given, expected):
    assert case_verdict(layers(**given), skipped=False) == expected


def test_skipped_rollup_and_layer_dicts_accepted():
    assert case_verdict(layers(), skipped=True) == "skipped"
    assert case_verdict({"http": {"verdict": "pass"}, "answer": {"verdict": "fail"}}, skipped=False) == "fail"


@pytest.mark.parametrize("vs, expected", [
    (["pass", "pass", "pass"], "pass"),
    (["pass", "fail", "pass"], "fail"),
    (["pass", "infra_error", "pass"], "infra_error"),
    (["infra_incomplete", "pass", "unscored"], "infra_incomplete"),
    (["infra_incomplete", "infra_error", "fail"], "fail"),
    (["pass", "unscored"], "unscored"),
    (["skipped", "skipped"], "skipped"),
])
def test_fold_repeats_is_order_free(vs, expected):
    for perm in itertools.permutations(vs):
        assert fold_repeats(list(perm)) == expected


def rec(cid, verdict, **kw):
    r = {"case_id": cid, "verdict": verdict, "canary": False, "holdout": False, "gating": True,
         "crashed": False, "repeated_5xx": None, "scorer_errors": 0, "layers": {}}
    r.update(kw)
    return r


def test_counts_table():
    records = [
        rec("a", "pass"), rec("b", "fail"), rec("c", "fail", gating=False), rec("d", "skipped"),
        rec("e", "infra_error", crashed=True, repeated_5xx={"status": 503, "attempts": 3}),
        rec("f", "unscored"), rec("k1", "pass", canary=True), rec("k2", "infra_error", canary=True, crashed=True),
        rec("h", "fail", holdout=True),
    ]
    s = summarize(records, status="ok", missing_artifacts=[])
    assert s["n"] == 7                       # non-canary, skipped and infra in
    assert s["attempted"] == 8               # sent: canaries in, skipped out
    assert (s["passes"], s["failures"], s["gating_failures"]) == (1, 3, 2)
    assert s["skipped"] == 1 and s["infra_errors"] == 1 and s["unscored"] == 1
    assert s["infra_rate"] == round(1 / 6, 6)  # infra_errors / (n - skipped)
    assert s["crashes"] == 2 and s["crash_rate"] == round(2 / 8, 6)
    assert s["canaries"] == {"n": 2, "passed": 1, "failed": 0, "not_verified": 1}
    assert s["holdout"]["n"] == 1 and s["holdout"]["gating_failures"] == 1
    assert s["holdout"]["gating_failures"] <= s["gating_failures"]
    assert s["repeated_5xx"] == 1
    # order never matters
    assert summarize(list(reversed(records)), status="ok", missing_artifacts=[]) == s


def test_counts_layers_unscorable_unjudged():
    r = rec("a", "unscored", layers={
        "execution": {"verdict": "unscorable", "blocked_by": "no oracle"},
        "judged": {"verdict": "unscored", "reason": "unjudged (mode: smoke)"}})
    s = summarize([r, rec("k", "pass", canary=True, layers={"execution": {"verdict": "unscorable", "blocked_by": "x"}})],
                  status="ok", missing_artifacts=["x"])
    assert s["unscorable_layers"] == {"execution": {"cases": 1, "blocked_by": "no oracle"}}
    assert s["unjudged"] == {"unjudged (mode: smoke)": 1}
    assert s["layers"]["execution"] == {"unscorable": 1}
    assert s["missing_artifacts"] == ["x"]


def test_retry_wait_honours_retry_after_up_to_60s():
    assert retry_wait([1, 4], 0, None) == 1
    assert retry_wait([1, 4], 1, None) == 4
    assert retry_wait([1, 4], 0, "7") == 7
    assert retry_wait([1, 4], 0, "3600") == RETRY_AFTER_CAP_S == 60
    assert retry_wait([1, 4], 0, "garbage") == 1
    assert parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT", now=1445412480.0 - 10) == pytest.approx(10, abs=1)


def test_http_dates_parse_as_the_email_package_parses_them():
    """http_date parses the usual forms itself (a case worker never imports email); every form, the
    obsolete ones and the invalid ones included, gets the email package's answer."""
    import email.utils
    import uuid

    from assay.core.ids import new_uuid4
    from assay.invoke.outcome import http_date
    for value in ["Wed, 21 Oct 2015 07:28:00 GMT", "Sun, 06 Nov 1994 08:49:37 GMT", "Wed, 21-Oct-2015 07:28:00 GMT",
                  "Tue, 29 Feb 2028 23:59:59 GMT", "Sunday, 06-Nov-94 08:49:37 GMT", "Sun Nov  6 08:49:37 1994",
                  "Wed, 31 Feb 2015 07:28:00 GMT", "Wed, 21 Foo 2015 07:28:00 GMT", "Wed, 21-Oct 2015 07:28:00 GMT",
                  "garbage", "  Wed, 21 Oct 2015 07:28:00 GMT "]:
        try:
            expected = email.utils.parsedate_to_datetime(value).timestamp()
        except (TypeError, ValueError, IndexError):
            expected = None
        assert http_date(value) == expected, value
    ids = {new_uuid4() for _ in range(200)}
    assert len(ids) == 200
    for text in ids:   # what str(uuid.uuid4()) gives: version 4, the RFC 4122 variant, 36 characters
        u = uuid.UUID(text)
        assert str(u) == text and u.version == 4 and u.variant == uuid.RFC_4122


def test_decode_body_never_raises():
    text, doc, ok, notes = decode_body(b"\xff\xfe{", False)
    assert not ok and doc is None and notes and "UTF-8" in notes[0]
    deep = b"[" * 10000 + b"]" * 10000
    text, doc, ok, notes = decode_body(deep, False)
    assert not ok and "nested" in notes[0]
    text, doc, ok, notes = decode_body(b'{"a": 1}', False)
    assert ok and doc == {"a": 1}
    text, doc, ok, notes = decode_body(b"{not json", False)
    assert not ok and notes == []


def test_templates_typed_values_and_paths():
    tmpl = {"message": "<user turn>", "meta": {"case": "id=<case id>", "persona": "<persona>"}, "n": 3}
    out = templates.fill(tmpl, {"<user turn>": "hi", "<case id>": "c-1", "<persona>": {"role": "admin"}})
    assert out == {"message": "hi", "meta": {"case": "id=c-1", "persona": {"role": "admin"}}, "n": 3}
    assert templates.find_mark({"data": [{"x": "<answer>"}]}, "<answer>") == ["data", 0, "x"]
    assert templates.lookup({"a": {"b": [1, {"c": 5}]}}, "a.b[1].c") == (True, 5)
    assert templates.lookup({"a": {"b": [1, {"c": 5}]}}, "a.b.1.c") == (True, 5)
    assert templates.lookup({"a": 1}, "a.b") == (False, None)
    assert templates.as_text(0) == "0" and templates.as_text(None) is None


def test_required_case_files_follow_conditions():
    sent = {"verdict": "pass", "k": 1, "sent": True, "has_result_expect": True}
    assert set(artifacts.required_case_files(sent)) == {
        "request.json", "response.json", "expect.json", "answer.txt", "verdict.json", "actual.json"}
    skipped = {"verdict": "skipped", "k": 3, "sent": False}
    assert artifacts.required_case_files(skipped) == ["expect.json", "verdict.json"]
    k3 = {"verdict": "pass", "k": 3, "sent": True, "trace_collected": True}
    files = artifacts.required_case_files(k3)
    assert "repeats/3/verdict.json" in files and "trace.json" in files and "actual.json" not in files


def test_derived_files_refresh_in_batches_not_per_case(tmp_path):
    from assay.rundir.derived import DerivedFiles
    manifest = {"run_id": "smoke-20261129T101500Z", "mode": "smoke", "gate": "soft", "selecting_split": "smoke",
                "k": 1, "harness_version": "0.1.0", "dataset_version": 1, "started_at": "t"}
    d = DerivedFiles(tmp_path, manifest, 1000)
    refreshes = 0
    for i in range(1000):
        d.add(999 - i, rec(f"c-{999 - i:04d}", "pass", layers={"http": {"verdict": "pass"}}))
        if d.due():
            d.refresh()
            refreshes += 1
    assert refreshes <= 12            # geometric growth: O(log n) refreshes, O(n) rows written in total
    d.refresh()
    rows = (tmp_path / "verdicts.jsonl").read_text().splitlines()
    assert len(rows) == 1000 and rows[0].startswith('{"canary": false, "case_id": "c-0000"')  # plan order


def test_secret_resolution_names_every_missing_var():
    from assay.core.errors import AssayError
    from assay.core import secrets
    adapter = {"invocation": {"base_url": "${B}", "auth": {"type": "bearer", "token_env": "T"},
                              "request_body": '{"k": "${A}"}'}}
    names = secrets.env_refs(adapter["invocation"]) | secrets.auth_env_names(adapter)
    assert names == {"A", "B", "T"}
    with pytest.raises(AssayError) as info:
        secrets.resolve(names, {"B": "x", "A": ""})
    assert info.value.code == 3 and info.value.fields["missing_env"] == ["A", "T"]
    assert secrets.expand("${B}/p", {"B": "http://h"}) == "http://h/p"


def test_slim_records_count_and_derive_like_full_ones():
    from assay.rundir import derived, routing_files
    full = rec("c-1", "fail", layers={
        "http": {"verdict": "pass", "status": 200, "expected_status": None},
        "routing": {"verdict": "fail", "expected": "a", "observed": "b", "acceptable": ["a"], "clarify_ok": False,
                    "clarified": None, "observed_from": "response", "extra": [1] * 100},
        "answer": {"verdict": "pass", "checks": [{"check": "must_contain", "entry": "x", "status": "pass"}] * 50},
        "execution": {"verdict": "unscorable", "blocked_by": "no oracle"},
        "judged": {"verdict": "unscored", "reason": "unjudged (mode: smoke)"}},
        k=1, sent=True, skip_reason=None, repeats=None)
    s = derived.slim(full)
    assert summarize([s], status="ok", missing_artifacts=[]) == summarize([full], status="ok", missing_artifacts=[])
    assert routing_files.routing_rows([s]) == routing_files.routing_rows([full])
    assert derived.results_rows([s]) == derived.results_rows([full])
    assert derived.verdict_row(s) == derived.verdict_row(full)
    assert "checks" not in s["layers"]["answer"]


def test_cases_phrase_is_one_wording():
    from assay.stats.counts import cases_phrase
    assert cases_phrase(12, 2) == "12 cases + 2 canaries"
    assert cases_phrase(1, 1) == "1 case + 1 canary"
    assert cases_phrase(0, 0) == "0 cases + 0 canaries"
    assert cases_phrase("x", None) == "n/a cases + n/a canaries"


def test_one_routing_pass_gives_what_the_separate_passes_gave():
    """The finalize reads a run streamed from disk once for the holdout seal, whether any routing row
    exists and the conversations left out (rundir.routing_files.RoutingPass); each was a pass of its
    own. On every mix of holdout / canary / conversation / scorable the answers are the same."""
    from assay.rundir import routing_files as rf

    def rec(i, holdout, canary, multi, verdict):
        return {"case_id": f"c-{i}", "holdout": holdout, "canary": canary, "multi_turn": multi,
                "layers": {"routing": {"verdict": verdict, "expected": "a", "observed": "b"}}}
    combos = list(itertools.product((False, True), (False, True), (False, True), ("pass", "fail", "n/a")))
    for size in (0, 1, 5, len(combos)):
        records = [rec(i, *c) for i, c in enumerate(combos[:size] + combos[::-1][:size])]
        seen = rf.RoutingPass(records)
        assert seen.sealed == rf.sealed_ids(records)
        assert seen.rows == len(rf.routing_rows(records))
        assert seen.left_out == sum(1 for r in records if r["multi_turn"] and not r["canary"]
                                    and r["layers"]["routing"]["verdict"] in ("pass", "fail"))
        assert rf.routing_report_doc(records, None, seen) == rf.routing_report_doc(records, None)
    assert rf.RoutingPass([rec(0, True, False, True, "pass")]).left_out == 1   # the loop above reaches each kind


@pytest.mark.parametrize("with_holdout", [False, True])
def test_the_runners_routing_lines_write_the_bytes_the_records_give(tmp_path, with_holdout):
    """The runner keeps each routing row's line as its case finishes (DerivedFiles.routing) and the
    finalize writes routing_results.jsonl and routing_report.json from them; the shard merge and
    --verify derive both from the records. Same bytes, in finish order or not; a holdout row (its id
    sealed by an order known only at the end) sends the runner down the records path."""
    from assay.rundir import derived
    manifest = {"run_id": "smoke-20261129T101500Z", "mode": "smoke", "gate": "soft", "selecting_split": "smoke",
                "k": 1, "harness_version": "0.1.0", "dataset_version": 1, "started_at": "t"}
    routes = ["billing", "tech", "oos", None]
    records = []
    for i in range(60):
        layer = {"verdict": ("pass", "fail", "n/a")[i % 3], "expected": routes[i % 4], "observed": routes[(i * 7) % 4],
                 "acceptable": ["tech"] if i % 5 == 0 else [], "clarify_ok": i % 6 == 0, "observed_from": "response"}
        r = rec(f"c-{i:03d}", layer["verdict"] if layer["verdict"] != "n/a" else "pass", layers={"routing": layer})
        r.update(canary=i % 11 == 0, multi_turn=i % 9 == 0, holdout=with_holdout and i % 13 == 1)
        records.append(r)
    (tmp_path / "fast").mkdir()
    d = derived.DerivedFiles(tmp_path / "fast", manifest, len(records))
    for i in sorted(range(len(records)), key=lambda i: (i * 37) % len(records)):   # finish order != plan order
        d.add(i, records[i])
    assert d.routing.usable is (not with_holdout) and d.routing.rows > 0 and d.routing.left_out > 0
    (tmp_path / "slow").mkdir()
    fast = derived.write_run_reports(tmp_path / "fast", d.ordered(), k=1, oos_route="oos", baseline=None,
                                     routing=d.routing)
    slow = derived.write_run_reports(tmp_path / "slow", [derived.slim(r) for r in records], k=1, oos_route="oos",
                                     baseline=None)
    assert fast == slow
    for name in ("routing_results.jsonl", "routing_report.json"):
        assert (tmp_path / "fast" / name).read_bytes() == (tmp_path / "slow" / name).read_bytes(), name
    d.close()


def test_a_calibrated_rubric_that_never_ran_beside_a_provisional_one_is_unscored():
    """A judged layer is a chosen unscored only when every pin is provisional: a calibrated pin
    that never ran (the judge timed out) beside a provisional one is a check that never ran, so
    the case is unscored and closes the gate, never a pass on its other layers."""
    from assay.report.gate_case import unscored_closes
    judged = {"verdict": "unscored", "reason": "refund-v2@1: the judge timed out", "provisional": False,
              "rubrics": [{"pin": "tone-v1@1", "provisional": True, "verdict": "pass"},
                          {"pin": "refund-v2@1", "provisional": False, "verdict": "unscored"}]}
    layers = {"http": {"verdict": "pass"}, "answer": {"verdict": "pass"}, "judged": judged}
    assert case_verdict(layers, skipped=False) == "unscored"
    assert unscored_closes({"case_id": "c", "verdict": "unscored"}, {"layers": layers})
    only_provisional = dict(judged, rubrics=[judged["rubrics"][0]], provisional=True)
    assert case_verdict(dict(layers, judged=only_provisional), skipped=False) == "pass"
