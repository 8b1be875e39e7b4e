"""Hostile input never makes a traceback (docs/runner-contract.md, "Security"): hand-edited plans
(run_cases.py --dry-run) and hand-edited run files (run_cases.py --verify, gate.py, draft_report.py)
get exit 0/2/3/6 (gate: 0/1/2) with a JSON error, never exit 1 and never a traceback.

The commands run in this process (the same parser and command layer as the scripts) so a few
hundred mutations fit in a few seconds; the mutations are seeded, so a failure reproduces.
A longer hunt: ASSAY_FUZZ_SEED=<n> ASSAY_FUZZ_ROUNDS=<x> (a multiplier) pytest tests/test_hardening_fuzz.py
"""

from __future__ import annotations

import contextlib
import os
import importlib
import io
import json
import random
import shutil

import pytest

from assay.core.cli import run_command
from assay.core.casestore import scan
from rundir_util import read_artifact, write_artifact
from fakeapp import FakeApp, case, make_plan, make_state, run_runner, write_plan

SEED = int(os.environ.get("ASSAY_FUZZ_SEED", "20261130"))
ROUNDS = int(os.environ.get("ASSAY_FUZZ_ROUNDS", "1"))


def _deep(n: int) -> str:
    return "[" * n + "1" + "]" * n


def call(script: str, *argv) -> tuple[int, str, str]:
    mod = importlib.import_module(script)
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = run_command(mod.build_parser, mod.run, argv=[str(a) for a in argv], script=script)
    return rc, out.getvalue(), err.getvalue()


# Values a hand edit (or an attacker) may put anywhere; "RAW:" entries are spliced in as JSON text.
HOSTILE = [None, True, 0, -1, 1e300, -1e300, 2 ** 70, "", "x" * 5000, "${NOT_SET_ANYWHERE}", "../../../etc/passwd",
           "\u202e\u0000", {}, [], [[[]]], {"a": {"b": {"c": None}}}, "/(a+)+$/", "RAW:NaN", "RAW:Infinity",
           "RAW:" + _deep(150), "RAW:" + _deep(5000), "RAW:" + _deep(100000), "RAW:1" + "0" * 5000,
           "RAW:\"\\ud800\"", "RAW:1e400", "RAW:-1e400"]


def _paths(doc, prefix=()):
    """Every (path) to a value in a JSON document."""
    out = [prefix]
    if isinstance(doc, dict):
        for k, v in doc.items():
            out += _paths(v, prefix + (k,))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            out += _paths(v, prefix + (i,))
    return out


def _has(run_dir, rel: str) -> bool:
    if rel.startswith("cases/"):
        _, cid, name = rel.split("/", 2)
        return scan(run_dir).read(cid, name) is not None
    return (run_dir / rel).exists()


def _hand_edit(rel: str, raw: str, rng: random.Random, mutate_whole: bool, replacements: list[str]) -> str:
    """A run file as a person might leave it: one JSONL line mutated, or the whole document
    mutated (`mutate_whole`) or replaced by one of `replacements`."""
    if rel.endswith(".jsonl") or rel == "run.log":
        lines = raw.splitlines()
        k = rng.randrange(len(lines))
        lines[k] = _mutate(json.loads(lines[k]), rng)
        return "\n".join(lines) + "\n"
    return _mutate(json.loads(raw), rng) if mutate_whole else rng.choice(replacements)


def _mutate(doc, rng: random.Random) -> str:
    """One random edit of a JSON document, as text."""
    doc = json.loads(json.dumps(doc))
    paths = [p for p in _paths(doc) if p]
    path = rng.choice(paths)
    value = rng.choice(HOSTILE)
    parent = doc
    for part in path[:-1]:
        parent = parent[part]
    marker = "__HOSTILE__"
    how = rng.random()
    if how < 0.1 and isinstance(parent, dict):
        del parent[path[-1]]
        return json.dumps(doc)
    if how < 0.2 and isinstance(parent, dict):
        parent[str(path[-1]) + "x"] = 1    # an unknown key beside it
        return json.dumps(doc)
    parent[path[-1]] = marker
    text = json.dumps(doc)
    raw = value[4:] if isinstance(value, str) and value.startswith("RAW:") else json.dumps(value)
    return text.replace(json.dumps(marker), raw, 1)


def _assert_clean(rc, out, err, allowed, what):
    assert rc in allowed, f"{what}: exit {rc}\n{out[:500]}\n{err[-2000:]}"
    assert "Traceback" not in err, f"{what}: traceback\n{err[-2000:]}"
    if rc not in (0, 1) or out.strip().startswith("{"):
        json.loads(out.strip().splitlines()[0])   # the error is one JSON object


def test_hand_edited_plans_never_make_a_traceback(tmp_path, monkeypatch):
    # Loading the CA store costs ~40 ms per dry run; one context serves every mutation here.
    from assay.invoke import http as http_invoker
    contexts = {False: http_invoker.tls_context(False), True: http_invoker.tls_context(True)}
    monkeypatch.setattr(http_invoker, "tls_context", lambda insecure: contexts[bool(insecure)])
    state = make_state(tmp_path)
    cases = [case("c-1", "hi", expect={"route": "billing", "answer": {"must_contain": ["/hi+/"]},
                                       "result": {"scalar": 3}}),
             case("c-2", "yo", split=("smoke", "canary"))]
    base = make_plan(state, cases, app_url="http://127.0.0.1:9", scoring={"oos_route": None, "call_budget": 15},
                     execution={"max_attempts": 2, "backoff_s": [0], "timeout_s": 5})
    rng = random.Random(SEED)
    plan_file = state / "work" / "fuzz.json"
    fixed = [_deep(100000), json.dumps(dict(base, manifest_extra={"x": json.loads(_deep(150))})),
             json.dumps(base).replace('"backoff_s": [0]', '"backoff_s": [1e300]'),
             json.dumps(base).replace('"timeout_s": 5', '"timeout_s": 1e300'),
             json.dumps(base)[:-7], "\xff\xfe", "", "null", "[]"]
    for i in range(160 * ROUNDS):
        text = fixed[i] if i < len(fixed) else _mutate(base, rng)
        plan_file.write_bytes(text.encode("utf-8", "surrogatepass"))
        rc, out, err = call("run_cases", "--plan", plan_file, "--dry-run")
        _assert_clean(rc, out, err, (0, 2, 3), f"plan mutation {i}: {text[:300]}")


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("fuzzrun")
    state = make_state(tmp)
    with FakeApp() as app:
        plan = make_plan(state, [case("c-1", "hello", expect={"route": "billing"}), case("c-2", "world"),
                                 case("c-3", "x", split=("smoke", "canary"))], app_url=app.url, k=2)
        out = state / "reports" / plan["run_id"]
        res = run_runner("--plan", write_plan(state, plan), "--out", out, "--progress", "never")
    assert res.rc == 0, res.stdout
    return out


RUN_FILES = ["manifest.yaml", "results.json", "verdicts.jsonl", "repeats.jsonl", "run.log",
             "cases/c-1/verdict.json", "cases/c-2/verdict.json", "cases/c-1/response.json",
             "cases/c-1/repeats/1/verdict.json", "reliability.json", "verdicts_for_stats.jsonl"]


def test_hand_edited_run_files_never_make_a_traceback(finished, tmp_path):
    rng = random.Random(SEED + 1)
    for i in range(24 * ROUNDS):
        work = tmp_path / f"r{i}" / finished.name
        shutil.copytree(finished, work)
        rel = RUN_FILES[i % len(RUN_FILES)]
        raw = read_artifact(work, rel)
        if rel.endswith(".jsonl") or rel == "run.log":
            lines = raw.splitlines()
            k = rng.randrange(len(lines))
            lines[k] = _mutate(json.loads(lines[k]), rng) if rng.random() < 0.7 else _deep(100000)
            text = "\n".join(lines) + "\n"
        else:
            text = _mutate(json.loads(raw), rng) if i % 4 else rng.choice([_deep(100000), _deep(900), raw[:40], ""])
        write_artifact(work, rel, text.encode("utf-8", "surrogatepass"))
        what = f"run-file mutation {i} of {rel}: {text[:300]}"
        _assert_clean(*call("run_cases", "--verify", work), (0, 2, 6), what + " (--verify)")
        _assert_clean(*call("gate", work, "--no-verify", "--json"), (0, 1, 2), what + " (gate)")
        _assert_clean(*call("draft_report", work, "-o", "-"), (0, 2), what + " (draft_report)")
        shutil.rmtree(tmp_path / f"r{i}")


# ---------------------------------------------------------------- the inputs the issue reported
def test_a_too_deep_plan_names_the_key(tmp_path):
    state = make_state(tmp_path)
    plan = make_plan(state, [case("c-1")])
    plan["manifest_extra"] = {"dataset_version": 1, "x": json.loads(_deep(150))}
    path = write_plan(state, plan)
    rc, out, err = call("run_cases", "--plan", path, "--out", state / "reports" / plan["run_id"])
    _assert_clean(rc, out, err, (2,), "150-deep manifest_extra")
    assert "manifest_extra.x" in json.loads(out)["error"] and "deeper than 100" in json.loads(out)["error"]
    path.write_text(json.dumps(plan).replace(json.dumps(plan["manifest_extra"]["x"]), _deep(100000)))
    rc, out, err = call("run_cases", "--plan", path, "--dry-run")
    _assert_clean(rc, out, err, (2,), "100,000-deep plan")
    assert str(path) in json.loads(out)["error"]


@pytest.mark.parametrize("execution", [{"max_attempts": 2, "backoff_s": [1e300]},
                                       {"timeout_s": 1e300, "max_attempts": 1, "backoff_s": []}])
def test_absurd_numbers_are_refused_before_anything_is_sent(tmp_path, execution):
    state = make_state(tmp_path)
    with FakeApp() as app:
        plan = make_plan(state, [case("c-1")], app_url=app.url, execution=execution)
        out_dir = state / "reports" / plan["run_id"]
        rc, out, err = call("run_cases", "--plan", write_plan(state, plan), "--out", out_dir)
        assert app.count() == 0
    _assert_clean(rc, out, err, (2,), str(execution))
    assert "execution." in json.loads(out)["error"] and not out_dir.exists()


def test_deep_run_files_are_defects_not_tracebacks(finished, tmp_path):
    work = tmp_path / finished.name
    shutil.copytree(finished, work)
    write_artifact(work, "cases/c-1/verdict.json", _deep(100000).encode())
    rc, out, err = call("run_cases", "--verify", work)
    _assert_clean(rc, out, err, (6,), "100,000-deep verdict.json")
    assert any(p.startswith("cases/c-1/verdict.json") for p in json.loads(out)["missing_artifacts"])
    shutil.rmtree(work)
    shutil.copytree(finished, work)
    write_artifact(work, "cases/c-1/verdict.json", json.dumps({"case_id": json.loads(_deep(150))}).encode())
    rc, out, err = call("run_cases", "--verify", work)
    _assert_clean(rc, out, err, (6,), "150-deep verdict.json")
    for text in (_deep(100000), json.dumps({"summary": {"x": json.loads(_deep(150))}})):
        (work / "results.json").write_text(text)
        for script, argv in (("gate", ["--no-verify"]), ("draft_report", ["-o", "-"])):
            rc, out, err = call(script, work, *argv)
            _assert_clean(rc, out, err, (2,), f"deep results.json ({script})")
            assert "results.json" in json.loads(out)["error"]


# ---------------------------------------------------------------- more readers of hand-edited files
@pytest.fixture(scope="module")
def sharded(tmp_path_factory):
    """One plan run as two shards (to merge) and as one run (to resume), each k=2."""
    tmp = tmp_path_factory.mktemp("fuzzshards")
    state = make_state(tmp)
    cases = [case("c-1", "hello", expect={"route": "billing"}), case("c-2", "world"),
             case("c-3", "x", split=("smoke", "canary")), case("c-4", "four")]
    with FakeApp() as app:
        from assay.shard.assign import add_shards
        plan = add_shards(make_plan(state, cases, app_url=app.url, k=2), 2)
        path = write_plan(state, plan)
        shards = []
        for i in (1, 2):
            out = state / "reports" / f"{plan['run_id']}.shard-{i}"
            res = run_runner("--plan", path, "--out", out, "--shard", i, "--progress", "never")
            assert res.rc == 0, res.stdout
            shards.append(out)
    return state, plan, path, shards


def test_hand_edited_shards_never_make_a_traceback_in_merge_runs(sharded, tmp_path):
    state, plan, plan_path, shards = sharded
    rng = random.Random(SEED + 2)
    files = ["manifest.yaml", "results.json", "verdicts.jsonl", "run.log", "cases/c-1/verdict.json",
             "cases/c-1/repeats/1/verdict.json", "repeats.jsonl"]
    for i in range(14 * ROUNDS):
        root = tmp_path / f"m{i}" / "app" / ".assay" / "reports"
        work = [root / s.name for s in shards]
        for s, w in zip(shards, work):
            shutil.copytree(s, w)
        rel = files[i % len(files)]
        holder = next((w for w in work if _has(w, rel)), None)
        if holder is None:
            continue
        raw = read_artifact(holder, rel)
        text = _hand_edit(rel, raw, rng, bool(i % 3), ['"x"', "[]", "null", raw[:30]])
        write_artifact(holder, rel, text.encode("utf-8", "surrogatepass"))
        merged_plan = dict(plan, paths=dict(plan["paths"], state_dir=str(root.parent)))
        mp = root.parent / "plan.json"
        mp.write_text(json.dumps(merged_plan))
        rc, out, err = call("merge_runs", "--plan", mp, "--out", root / plan["run_id"], *work)
        _assert_clean(rc, out, err, (0, 2, 3, 6), f"shard mutation {i} of {rel}: {text[:300]}")
        shutil.rmtree(tmp_path / f"m{i}")


def test_hand_edited_run_files_never_make_a_traceback_in_rescore_cost_and_budgets(finished, tmp_path):
    rng = random.Random(SEED + 3)
    for i in range(22 * ROUNDS):
        reports = tmp_path / f"s{i}" / "app" / ".assay" / "reports"
        work = reports / finished.name
        shutil.copytree(finished, work)
        rel = RUN_FILES[i % len(RUN_FILES)]
        raw = read_artifact(work, rel)
        text = _hand_edit(rel, raw, rng, bool(i % 3), ['"x"', "[]", "null", "1e400", raw[:40]])
        write_artifact(work, rel, text.encode("utf-8", "surrogatepass"))
        what = f"run-file mutation {i} of {rel}: {text[:300]}"
        _assert_clean(*call("rescore", work, "--out", reports / "smoke-20261201T000000Z"), (0, 2, 3, 5, 6, 7),
                      what + " (rescore)")
        _assert_clean(*call("score_cost", work), (0, 2), what + " (score_cost)")
        _assert_clean(*call("gate", work, "--json", "--max-cost-per-case", "1", "--max-p95-latency-s", "5"),
                      (0, 1, 2), what + " (gate with budgets)")
        shutil.rmtree(tmp_path / f"s{i}")


@pytest.mark.parametrize("text", ['"x"', "[]", "null", "1e400", "-1e400", '{"x": 1}'])
def test_a_hand_edited_verdict_is_never_a_traceback(finished, tmp_path, text):
    work = tmp_path / "app" / ".assay" / "reports" / finished.name
    shutil.copytree(finished, work)
    write_artifact(work, "cases/c-1/verdict.json", text.encode())
    for script, argv, allowed in (("gate", ["--json", "--max-cost-per-case", "1", "--max-p95-latency-s", "5"], (1, 2)),
                                  ("draft_report", ["-o", "-"], (0, 2)), ("score_cost", [], (0, 2)),
                                  ("run_cases", ["--verify"], (6,))):
        rc, out, err = call(script, *([work] if script != "run_cases" else []), *argv,
                            *([work] if script == "run_cases" else []))
        _assert_clean(rc, out, err, allowed, f"{text} as verdict.json ({script})")


def test_resume_with_a_hand_edited_plan_never_makes_a_traceback(tmp_path):
    rng = random.Random(SEED + 4)
    with FakeApp() as app:
        st = make_state(tmp_path / "base")
        base = make_plan(st, [case("c-1", "hello", expect={"route": "billing"}), case("c-2", "world")],
                         app_url=app.url, k=2)
        done = st / "reports" / base["run_id"]
        assert run_runner("--plan", write_plan(st, base), "--out", done, "--progress", "never").rc == 0
        fixed = [json.dumps(base).replace('"k": 2', '"k": 1e400'), json.dumps(base).replace('"k": 2', '"k": -1e400'),
                 json.dumps(base).replace('"max_attempts": 3', '"max_attempts": 1e400'),
                 json.dumps(base).replace('"k": 2', '"k": 2.0000000001')]
        backup = tmp_path / "backup"
        shutil.copytree(done, backup)
        for i in range(12 * ROUNDS):
            text = fixed[i] if i < len(fixed) else _mutate(base, rng)
            (st / "work" / "plan.json").write_bytes(text.encode("utf-8", "surrogatepass"))
            rc, o, err = call("run_cases", "--plan", st / "work" / "plan.json", "--out", done, "--resume")
            _assert_clean(rc, o, err, (0, 2, 3, 4, 5, 6, 7), f"resume with plan mutation {i}: {text[:300]}")
            shutil.rmtree(done)
            shutil.copytree(backup, done)
