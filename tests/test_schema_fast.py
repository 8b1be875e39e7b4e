"""assay.schemas.fast (the yes/no check without jsonschema) agrees with jsonschema on every shipped
schema: on the example's own documents, and on thousands of documents drawn from each schema and
then mutated (a key dropped, a type changed, an unknown key added, a value swapped), so both the
valid and the invalid side are exercised, including if/then/else, oneOf and cross-file $refs."""

from __future__ import annotations

import copy
import functools
import json
import random

import pytest
import yaml

from helpers import ROOT

from assay import schemas
from assay.schemas import fast

EXAMPLE = ROOT / "examples" / "helpdesk" / ".assay"
NAMES = schemas.schema_names()


def jsonschema_valid(doc, name) -> bool:
    return not any(True for _ in schemas._validator(name).iter_errors(doc))


def strings_of(node, out: set) -> None:
    if isinstance(node, str):
        out.add(node)
    elif isinstance(node, dict):
        for k, v in node.items():
            out.add(k)
            strings_of(v, out)
    elif isinstance(node, list):
        for v in node:
            strings_of(v, out)


def example_docs() -> list[tuple[str, object]]:
    docs = []
    for path, name in [("adapter.yaml", "adapter"), ("profile.yaml", "profile"),
                       ("datasets/dataset.yaml", "dataset"), ("judge/judge.yaml", "judge"),
                       ("simulator/simulator.yaml", "simulator")]:
        if (EXAMPLE / path).is_file():
            docs.append((name, yaml.safe_load((EXAMPLE / path).read_text(encoding="utf-8"))))
    for case in sorted((EXAMPLE / "datasets").glob("c-*.yaml")):
        docs.append(("case", yaml.safe_load(case.read_text(encoding="utf-8"))))
    from assay.suite.convert import convert_state_dir
    docs.append(("converted", convert_state_dir(EXAMPLE)))
    return docs


def run_docs(tmp_path) -> list[tuple[str, object]]:
    """A real run's plan, manifest, results and verdicts (the fake app, the runner in this process)."""
    from fakeapp import FakeApp, _run_runner_in_process, case, make_plan, make_state, write_plan
    state = make_state(tmp_path)
    with FakeApp() as app:
        cases = [case("c-aaaa0001", "hello"), case("c-aaaa0002", "bye", expect={"answer": {"must_contain": ["nope"]}})]
        plan = make_plan(state, cases, app_url=app.url)
        out = state / "reports" / plan["run_id"]
        r = _run_runner_in_process("--plan", write_plan(state, plan), "--out", out)
    assert r.rc in (0, 1), r.stdout + r.stderr
    docs = [("plan", plan), ("manifest", yaml.safe_load((out / "manifest.yaml").read_text(encoding="utf-8"))),
            ("results", json.loads((out / "results.json").read_text(encoding="utf-8")))]
    for verdict in out.glob("cases/*/verdict.json"):
        docs.append(("verdict", json.loads(verdict.read_text(encoding="utf-8"))))
    journal = out / "cases.jsonl"   # the case journal: each line carries its case's verdict record
    if journal.is_file():
        for line in journal.read_text(encoding="utf-8").splitlines():
            docs.append(("verdict", json.loads(line)["verdict"]))
    assert sum(1 for name, _ in docs if name == "verdict") == 2
    return docs


@functools.cache
def pool() -> list[str]:
    """The strings documents are drawn from: a few fixed ones and every string of the example's
    documents (built when a test first draws, not at collection, which every parallel worker repeats)."""
    strings: set = {"", "a", "c-0123abcd", "x" * 70, "1", "https://example.invalid/v1", "smoke",
                    "billing", "pass", "fail", "2026-11-30", "sha256:" + "0" * 64, "${VAR}", "true"}
    for _name, doc in example_docs():
        strings_of(doc, strings)
    return sorted(strings)
SCALARS = [None, True, False, 0, 1, -1, 1.0, 0.5, 2, 100, 10**6]


class Drawer:
    """Draws a document from a schema (mostly the shape it describes, sometimes not)."""

    def __init__(self, rnd: random.Random, name: str) -> None:
        self.rnd, self.name = rnd, name

    def resolve(self, doc: str, ref: str):
        target, _, pointer = ref.partition("#")
        target = target[len(fast.BASE):] if target.startswith(fast.BASE) else target
        name = target[: -len(".schema.json")] if target else doc
        node = schemas.load_schema(name)
        for part in [p for p in pointer.split("/") if p]:
            node = node[part]
        return name, node

    def draw(self, doc: str, s, depth: int = 0):
        r = self.rnd
        if depth > 7 or not isinstance(s, dict) or r.random() < 0.03:
            return r.choice(SCALARS + pool()[:20] + [[], {}])
        if "$ref" in s and r.random() < 0.9:
            d2, node = self.resolve(doc, s["$ref"])
            return self.draw(d2, node, depth + 1)
        if "const" in s:
            return copy.deepcopy(s["const"])
        if "enum" in s:
            return copy.deepcopy(r.choice(s["enum"]))
        for key in ("oneOf", "anyOf", "allOf"):
            if key in s and r.random() < 0.8:
                return self.draw(doc, r.choice(s[key]), depth + 1)
        if "if" in s and r.random() < 0.5:
            merged = dict(s)
            merged.pop("if")
            for part in (s.get("if"), s.get("then")):
                if isinstance(part, dict):
                    for k, v in part.items():
                        if k == "properties":
                            merged["properties"] = {**merged.get("properties", {}), **v}
                        elif k == "required":
                            merged["required"] = list(merged.get("required", [])) + list(v)
            merged.pop("then", None)
            merged.pop("else", None)
            return self.draw(doc, merged, depth + 1)
        t = s.get("type")
        if isinstance(t, list):
            t = r.choice(t)
        if t is None:
            t = "object" if "properties" in s else r.choice(["string", "integer", "object"])
        if t == "object":
            out = {}
            props = s.get("properties") or {}
            required = set(s.get("required") or ())
            for k, sub in props.items():
                if k in required or r.random() < 0.5:
                    out[k] = self.draw(doc, sub, depth + 1)
            extra = s.get("additionalProperties")
            if isinstance(extra, dict) and r.random() < 0.5:
                out[r.choice(pool())] = self.draw(doc, extra, depth + 1)
            return out
        if t == "array":
            items = s.get("items", {})
            n = r.choice([0, 1, 2, 3]) if "minItems" not in s else max(s["minItems"], r.choice([0, 1, 2]))
            return [self.draw(doc, items, depth + 1) for _ in range(n)]
        if t == "string":
            return r.choice(pool())
        if t == "integer":
            lo = s.get("minimum", s.get("exclusiveMinimum", 0))
            return r.choice([lo, lo + 1, lo + 5, lo - 1, 3])
        if t == "number":
            return r.choice([0, 0.25, 1, 1.5, -0.5, 100])
        if t == "boolean":
            return r.choice([True, False])
        return None

    def mutate(self, doc):
        r = self.rnd
        doc = copy.deepcopy(doc)
        holders = []

        def walk(node):
            if isinstance(node, (dict, list)):
                holders.append(node)
                for v in (node.values() if isinstance(node, dict) else node):
                    walk(v)
        walk(doc)
        if not holders:
            return r.choice(SCALARS + [{}, []])
        node = r.choice(holders)
        if isinstance(node, dict):
            op = r.randrange(4)
            if op == 0 and node:
                node.pop(r.choice(list(node)))
            elif op == 1:
                node[r.choice(pool())] = r.choice(SCALARS + pool()[:10])
            elif node:
                node[r.choice(list(node))] = r.choice(SCALARS + pool()[:30] + [[], {}])
        elif node:
            i = r.randrange(len(node))
            node[i] = r.choice(SCALARS + pool()[:30] + [[], {}])
        else:
            node.append(r.choice(SCALARS + pool()[:10]))
        return doc


def test_every_shipped_schema_is_compiled():
    assert NAMES and all(schemas.fast_checker(n) is not None for n in NAMES)


@pytest.fixture(scope="module")
def real_docs(tmp_path_factory):
    return example_docs() + run_docs(tmp_path_factory.mktemp("fastrun"))


def test_agrees_on_real_documents(real_docs):
    assert {name for name, _ in real_docs} == set(NAMES) - {"rubric"}   # rubric files are markdown front matter
    for name, doc in real_docs:
        assert schemas.fast_checker(name)(doc) is True is jsonschema_valid(doc, name), name


def test_agrees_with_jsonschema_on_drawn_and_mutated_documents(real_docs):
    for name in NAMES:
        rnd = random.Random(f"fast-{name}")
        drawer = Drawer(rnd, name)
        check = schemas.fast_checker(name)
        seeds = [doc for n, doc in real_docs if n == name]
        seen = {True: 0, False: 0}
        big = max((len(json.dumps(d)) for d in seeds), default=0) > 10_000   # the converted suite
        for i in range(12 if big else 60):
            doc = rnd.choice(seeds) if seeds and i % 2 else drawer.draw(name, schemas.load_schema(name))
            once = drawer.mutate(doc)
            for candidate in (doc, once, drawer.mutate(once), drawer.mutate(drawer.mutate(once))):
                want = jsonschema_valid(candidate, name)
                assert check(candidate) is want, (name, json.dumps(candidate)[:2000])
                seen[want] += 1
        # both sides exercised: valid documents (the seeds and mutations that keep them valid), invalid ones
        assert seen[False] > (5 if big else 25) and seen[True] > (5 if big else 25 if seeds else 0), (name, seen)


def test_equality_is_jsonschemas():
    assert fast.equal(1, 1.0) and not fast.equal(True, 1) and not fast.equal(0, False)
    assert fast.equal({"a": [1, True]}, {"a": [1.0, True]}) and not fast.equal([1], [True])
    assert fast.TYPES["integer"](2.0) and not fast.TYPES["integer"](True) and not fast.TYPES["number"](False)


def test_a_keyword_it_does_not_know_falls_back_to_jsonschema(monkeypatch):
    schemas.fast_checker.cache_clear()
    real = schemas.load_schema

    def with_format(name):
        doc = copy.deepcopy(real(name))
        if name == "rubric":
            doc["properties"] = {**doc.get("properties", {}), "when": {"type": "string", "format": "date"}}
        return doc
    monkeypatch.setattr(schemas, "load_schema", with_format)
    try:
        assert schemas.fast_checker("rubric") is None and schemas.fast_checker("adapter") is not None
    finally:
        schemas.fast_checker.cache_clear()


def test_a_valid_document_never_imports_jsonschema(tmp_path):
    import subprocess
    import sys
    code = ("import sys, yaml; sys.path.insert(0, %r)\n"
            "from assay.schemas import validate\n"
            "validate(yaml.safe_load(open(%r)), 'adapter', source='adapter.yaml')\n"
            "print('jsonschema' in sys.modules)\n") % (str(ROOT / "scripts"), str(EXAMPLE / "adapter.yaml"))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"
    bad = code.replace("yaml.safe_load(open(%r))" % str(EXAMPLE / "adapter.yaml"), "{'mode': 7}")
    proc = subprocess.run([sys.executable, "-c", bad], capture_output=True, text=True)
    assert proc.returncode != 0 and "does not match its schema" in proc.stderr
