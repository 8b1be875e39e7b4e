"""The suite version: `case_sha256` per case and `suite_sha256` per run (runner contract §10.6, §20.2).

Two runs' verdicts on a case are comparable only if the case asked the same thing and was
scored against the same expectation. `case_sha256` is a SHA-256 over canonical JSON of
everything that decides that for one case, and nothing else:

- the converted case, minus its bookkeeping (CASE_BOOKKEEPING: who reviewed it, which split
  selects it, where it came from, its title and notes: none of them changes what is sent or
  how it is scored);
- the content of every rubric version it pins (rubric id, version, nodes, reference_guided:
  what the judge is shown; the Markdown body is for people and is not shown to the judge);
- the adapter fields that shape its request (REQUEST_KEYS of `invocation`: the endpoint, the
  body template, headers as written with `${VAR}` unresolved, identity_map, the conversation
  block, the entrypoint or command; not `base_url`, which says where the app runs, not what
  it is asked);
- for a case with a rubric, the judge's identity (`assay.judge.identity`);
- for a simulated-user case, the simulator's identity (`assay.simulate.config.identity`);
- for an agent case (`invocation.mode: agent`), the fixture it starts from (AgentFixtures): its
  path relative to the app repo (the case's `input.fixture`, else `invocation.agent.workdir`) and
  the digest of its files (`assay.invoke.fixture_digest`): the repo the agent is asked to
  work in, and the check programs it holds, are part of what the case asks. The rest of
  `invocation.agent` (plugins, MCP config, env, permissions, the command) is the app under test,
  the same for every case, and in neither hash: two runs that differ there (a lift's arms) are
  two runs of one suite. A case of any other mode hashes as it did before.

`suite_sha256` covers the whole run's suite: every selected case's `case_sha256` (by id) plus
what scores all of them alike: the adapter's response readers (READING_KEYS), the capability
matrix, the scoring settings and the judge identity. Its parts are recorded too
(`suite_parts_sha256`), so a comparison can say *what* changed.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterator, Mapping

from ..core.jsonio import sha256_json
from ..core.runplan import CaseTable

# Case fields that never change what is sent or how it is scored.
CASE_BOOKKEEPING = ("title", "split", "review", "origin", "dataset_version_added", "metamorphic_parent",
                    "template_id", "instantiation_params", "difficulty", "notes", "test_type", "unit", "gating",
                    "no_op_justification")
# invocation fields that shape a case's request.
REQUEST_KEYS = ("mode", "endpoint", "request_body", "headers", "identity_map", "conversation", "entrypoint",
                "command", "stdin", "cwd", "env_allowlist")
# invocation fields that read the response (the same for every case: part of the suite, not the case).
READING_KEYS = ("response_body", "route_from_response", "route_from_status", "clarify_from_response",
                "result_from_tool", "result_from_response", "result_pattern")


def rubric_content(rubric: Mapping[str, Any]) -> dict[str, Any]:
    """What the judge is shown of a rubric version (its body is for people)."""
    return {"rubric_id": rubric.get("rubric_id"), "version": rubric.get("version"),
            "reference_guided": bool(rubric.get("reference_guided", False)),
            "nodes": [{"id": n.get("id"), "criterion": n.get("criterion"),
                       "reference_guided": bool(n.get("reference_guided", False))}
                      for n in rubric.get("nodes") or [] if isinstance(n, Mapping)]}


def case_pins_of(case: Mapping[str, Any]) -> list[str]:
    from ..judge.rubrics import case_pins
    return sorted(set(case_pins(case)))


def request_shape(adapter: Mapping[str, Any]) -> dict[str, Any]:
    inv = adapter.get("invocation") if isinstance(adapter.get("invocation"), Mapping) else {}
    return {k: inv[k] for k in REQUEST_KEYS if k in inv}


def judge_identity_of(plan: Mapping[str, Any]) -> dict[str, Any] | None:
    block = plan.get("judge") if isinstance(plan.get("judge"), Mapping) else {}
    config = block.get("config") if isinstance(block.get("config"), Mapping) else None
    if not config:
        return None
    from ..judge.identity import judge_identity   # the judge's modules: only for a plan with a judge
    return judge_identity(config)


def simulator_identity_of(plan: Mapping[str, Any]) -> dict[str, Any] | None:
    block = plan.get("simulator") if isinstance(plan.get("simulator"), Mapping) else {}
    config = block.get("config") if isinstance(block.get("config"), Mapping) else None
    if not config:
        return None
    from ..simulate.config import identity   # the simulator's modules: only for a plan with one
    return identity(dict(config))


class AgentFixtures:
    """The fixture each case of an agent plan starts from, as the case hash takes it: {path (relative
    to the app repo, `/`-separated, as the agent's request.json names it), sha256 (its files'
    digest, None when it is not there)}. Each distinct fixture is read once."""

    def __init__(self, plan: Mapping[str, Any], adapter: Mapping[str, Any], inv: Mapping[str, Any],
                 digests: Any = None) -> None:
        """`digests`: an `assay.invoke.fixture_digest.FixtureDigests` to share (the run's agent invoker's,
        whose requests name the same digests), else one of its own."""
        from ..invoke.approot import app_root
        from ..invoke.fixture_digest import FixtureDigests
        paths = plan.get("paths") if isinstance(plan.get("paths"), Mapping) else {}
        state = paths.get("state_dir")
        self.root = app_root(adapter, Path(state)) if isinstance(state, str) and state else None
        agent = inv.get("agent") if isinstance(inv.get("agent"), Mapping) else {}
        self.workdir = agent.get("workdir")
        self._digests = digests if digests is not None else FixtureDigests()
        self._seen: dict[Any, dict[str, Any]] = {}   # a fixture as written -> what the hash takes

    def __call__(self, case: Mapping[str, Any]) -> dict[str, Any]:
        inp = case.get("input") if isinstance(case.get("input"), Mapping) else {}
        own = inp.get("fixture")
        given = own if isinstance(own, str) and own else self.workdir
        key = given if isinstance(given, str) else None
        if key not in self._seen:
            self._seen[key] = self._resolve(key)
        return dict(self._seen[key])

    def _resolve(self, given: str | None) -> dict[str, Any]:
        import os
        if not given or self.root is None:
            return {"path": given, "sha256": None}
        p = Path(given)
        where = (p if p.is_absolute() else self.root / p).resolve()
        rel = os.path.relpath(where, self.root.resolve()).replace(os.sep, "/")
        return {"path": rel, "sha256": self._digests(where)}   # two spellings of one fixture are read once


def case_sha256(case: Mapping[str, Any], *, rubrics: Mapping[str, Any], request: Mapping[str, Any],
                judge: Mapping[str, Any] | None, simulator: Mapping[str, Any] | None = None,
                fixture: Any = None) -> str:
    """`fixture`: an agent plan's AgentFixtures (None for any other mode: the hash is as before)."""
    from ..core.casekind import is_simulated
    pins = case_pins_of(case)
    doc = {"case": {k: v for k, v in case.items() if k not in CASE_BOOKKEEPING},
           "rubrics": {p: rubric_content(rubrics[p]) if isinstance(rubrics.get(p), Mapping) else None for p in pins},
           "request": dict(request),
           "judge": dict(judge) if pins and judge else None}
    if is_simulated(case):   # a simulated user is part of what the case asks
        doc["simulator"] = dict(simulator) if simulator else None
    if fixture is not None:   # an agent case: the repo it is asked to work in is part of what it asks
        doc["agent_fixture"] = fixture(case)
    return sha256_json(doc)


def _context(plan: Mapping[str, Any], digests: Any = None) -> dict[str, Any]:
    """What every case's case_sha256 takes beside the case: rubrics, request shape, judge, simulator,
    and an agent plan's fixtures (`digests`: AgentFixtures')."""
    adapter = plan.get("adapter") if isinstance(plan.get("adapter"), Mapping) else {}
    block = plan.get("judge") if isinstance(plan.get("judge"), Mapping) else {}
    rubrics = block.get("rubrics") if isinstance(block.get("rubrics"), Mapping) else {}
    inv = adapter.get("invocation") if isinstance(adapter.get("invocation"), Mapping) else {}
    return {"rubrics": rubrics, "request": request_shape(adapter), "judge": judge_identity_of(plan),
            "simulator": simulator_identity_of(plan),
            "fixture": AgentFixtures(plan, adapter, inv, digests) if inv.get("mode") == "agent" else None}


def _parts(plan: Mapping[str, Any], judge: Any, cases_sha256: str) -> dict[str, Any]:
    adapter = plan.get("adapter") if isinstance(plan.get("adapter"), Mapping) else {}
    inv = adapter.get("invocation") if isinstance(adapter.get("invocation"), Mapping) else {}
    parts = {"cases": cases_sha256,
             "reading": sha256_json({k: inv[k] for k in READING_KEYS if k in inv}),
             "capability_matrix": sha256_json(plan.get("capability_matrix") or {}),
             "scoring": sha256_json(plan.get("scoring") or {}),
             "judge": sha256_json(judge)}
    return {"suite_sha256": sha256_json(parts), "suite_parts_sha256": parts}


def suite_version(plan: Mapping[str, Any], known: Mapping[str, str] | None = None, *,
                  digests: Any = None) -> dict[str, Any]:
    """{"cases": {id: case_sha256}, "suite_sha256": ..., "suite_parts_sha256": {...}} for a plan.
    `known`: case hashes already taken where the cases ran (merge_runs.py: an agent case's fixture
    is hashed by the shard that ran it, not read again on the machine that merges). `digests`: the
    fixture digests to share (a run's agent invoker's: `assay.invoke.fixture_digest.FixtureDigests`)."""
    ctx = _context(plan, digests)
    known = known or {}
    cases = {c["id"]: known.get(c["id"]) or case_sha256(c, **ctx) for c in plan["cases"]}
    return {"cases": cases, **_parts(plan, ctx["judge"], sha256_json(cases))}


class CompactVersion:
    """suite_version of a run's plan (a CaseTable of distinct string ids) without its {id: hash}
    map: 32 bytes per case, by plan index. suite_sha256 and its parts are suite_version's (the hash
    of the map is taken over its canonical JSON, streamed in sorted id order)."""

    def __init__(self, plan: Mapping[str, Any], table: CaseTable, digests: Any = None) -> None:
        import hashlib
        import json
        ctx = _context(plan, digests)
        self._digests = bytearray()
        for case in table:
            self._digests += bytes.fromhex(case_sha256(case, **ctx))
        ids = table.ids
        whole = hashlib.sha256(b"{")
        batch: list[str] = []
        for n, i in enumerate(sorted(range(len(ids)), key=ids.__getitem__)):
            batch.append(f'{"," if n else ""}{json.dumps(ids[i], ensure_ascii=False)}:"{self.case_sha256(i)}"')
            if len(batch) >= 1024:
                whole.update("".join(batch).encode("utf-8"))
                batch = []
        whole.update(("".join(batch) + "}").encode("utf-8"))
        version = _parts(plan, ctx["judge"], whole.hexdigest())
        self.suite_sha256, self.suite_parts_sha256 = version["suite_sha256"], version["suite_parts_sha256"]

    @classmethod
    def of(cls, plan: Mapping[str, Any], digests: Any = None) -> "CompactVersion | None":
        table = plan.get("cases")
        if not isinstance(table, CaseTable) or not table.shaped or len(set(table.ids)) != len(table):
            return None
        return cls(plan, table, digests)

    def case_sha256(self, i: int) -> str:
        return self._digests[32 * i:32 * i + 32].hex()


def manifest_cases(plan: Mapping[str, Any], case_set, version: Mapping[str, Any] | None = None) -> list[dict]:
    """The manifest's `cases` rows: id, set, the plan case's own sha256 and its case_sha256."""
    version = version or suite_version(plan)
    cases = plan["cases"]
    if isinstance(cases, CaseTable):   # a run's plan: each case's hash was taken once, at load
        return [{"id": h["id"], "set": case_set(h), "sha256": cases.sha256(i), "case_sha256": version["cases"][h["id"]]}
                for i, h in enumerate(cases.heads())]
    return [{"id": c["id"], "set": case_set(c), "sha256": sha256_json(c), "case_sha256": version["cases"][c["id"]]}
            for c in cases]


def manifest_rows(table: CaseTable, case_set, version: CompactVersion) -> Iterator[dict]:
    """manifest_cases' rows of a run's plan, one at a time (never a list of 100,000 dicts)."""
    for i, head in enumerate(table.heads()):
        yield {"id": head["id"], "set": case_set(head), "sha256": table.sha256(i), "case_sha256": version.case_sha256(i)}
