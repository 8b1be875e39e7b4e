"""The paths an agent case's `expect.files` names, checked against its fixture before anything
runs (`agent_case_problems` asks this for the linter and the pre-flight alike): a path whose
check would hold whatever the agent does because it is misspelt.

`unchanged` compares with the fixture, so a plain path (no glob character) the fixture does not
have can never be changed. `absent` passes when the path is not there after the run, so a
misspelt path of a fixture file the agent must delete passes with the file still there: a path
the fixture lacks that is one or two letters from one it has (and not that path with a suffix,
like `calc.py.bak`, a file the agent must not leave) is named with the path it is close to, a
warning only (the linter's; the pre-flight lets it run): a file the agent must not create may be
named that close on purpose, and nothing tells the two apart.

`fixture_passes` names the entries the untouched fixture already passes (a `contains` text its file
holds, an `exists` path it has, an `unchanged` glob matching none of its files): an agent that does
nothing passes them; warnings only (the linter's), as the agent may have to keep that text or file.
`fixture_fails` names the entries it fails (what an agent that does nothing fails): a check the
untouched fixture passes is scored only beside one of those (assay.score.agent.score_check)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Mapping

from ..core.suggest import did_you_mean

GLOB = "*?["
# in the message of a path no workdir can hold (the linter's path_outside_workdir, an ERROR; the pre-flight's exit 3)
OUTSIDE_WORKDIR = "names a path outside the agent's workdir"
# in the message of an `exists`/`absent`/`contains` path written as a glob (the linter's glob_in_files_path,
# an ERROR; the pre-flight's exit 3): those keys take paths, each looked for as written
GLOB_IN_PATH = "is a glob, but"


def outside_workdir(path: str) -> bool:
    """An absolute path, or one that climbs out of the workdir (`../x`): the workdir is what is measured."""
    return os.path.isabs(path) or os.path.normpath(path).split(os.sep)[0] == ".."


def _outside_problems(files: Mapping[str, Any]) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    for key in ("exists", "absent", "unchanged", "contains"):
        value = files.get(key)
        paths = list(value) if isinstance(value, (list, Mapping)) else []
        for path in paths:
            if isinstance(path, str) and path and outside_workdir(path):
                holds = ("passes whatever the agent does" if key in ("absent", "unchanged")
                         else "fails whatever the agent does")
                out.append((f"expect.files.{key}", f"{path!r} {OUTSIDE_WORKDIR}: every path is relative to the "
                            f"workdir (a fresh copy of the fixture) and measured there, so this entry {holds}; "
                            f"write it relative to the fixture's root ({path.lstrip('/')!r} if that is meant)"))
    return out


def _glob_problems(files: Mapping[str, Any], fixture: Path) -> list[tuple[str, str]]:
    """An `exists`, `absent` or `contains` path with a glob character (`*.bak`) that the fixture does not
    hold as written: it is looked for as a file of that very name, so `absent` passes whatever the agent
    leaves and `exists`/`contains` fail whatever it writes."""
    out: list[tuple[str, str]] = []
    for key in ("exists", "absent", "contains"):
        value = files.get(key)
        for path in list(value) if isinstance(value, (list, Mapping)) else []:
            if isinstance(path, str) and any(c in path for c in GLOB) and not outside_workdir(path) \
                    and not os.path.lexists(fixture / path):
                holds = "passes whatever the agent leaves" if key == "absent" else "fails whatever the agent writes"
                use = ("; to assert that no file matching it was added, changed or removed, list it under "
                       "expect.files.unchanged" if key == "absent" else "")
                out.append((f"expect.files.{key}", f"{path!r} {GLOB_IN_PATH} expect.files.{key} takes paths, each "
                            f"looked for as written (a file named {path!r}), so this entry {holds}; name the "
                            f"path{use}"))
    return out


def fixture_paths(fixture: Path, limit: int = 5000) -> list[str]:
    """The fixture's paths relative to it (`.git` left out; the first `limit`), for a did-you-mean."""
    out: list[str] = []
    for dirpath, dirnames, filenames in os.walk(fixture):
        dirnames[:] = sorted(d for d in dirnames if d != ".git")
        rel = os.path.relpath(dirpath, fixture)
        out += [n if rel == "." else f"{rel}/{n}" for n in sorted(dirnames + filenames)]
        if len(out) >= limit:
            break
    return out[:limit]


def _edits(a: str, b: str, cap: int = 2) -> int:
    """Levenshtein distance of a and b, counted up to cap + 1."""
    if abs(len(a) - len(b)) > cap:
        return cap + 1
    prev = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        cur = [i]
        for j, cb in enumerate(b, 1):
            cur.append(min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (ca != cb)))
        if min(cur) > cap:
            return cap + 1
        prev = cur
    return prev[-1]


def files_problems(files: Mapping[str, Any], fixture: Path) -> list[tuple[str, str]]:
    """(key, message) for each `unchanged` or `absent` path that would pass whatever the agent does, each
    `expect.files` path outside the workdir (absolute, or climbing out with `..`: OUTSIDE_WORKDIR) and
    each `exists`/`absent`/`contains` path written as a glob (GLOB_IN_PATH)."""
    out: list[tuple[str, str]] = _outside_problems(files)
    if not fixture.is_dir():
        return out
    out += _glob_problems(files, fixture)
    plain = {key: [p for p in (files.get(key) if isinstance(files.get(key), list) else [])
                   if isinstance(p, str) and p and not any(c in p for c in GLOB) and not outside_workdir(p)
                   and not os.path.lexists(fixture / p)] for key in ("unchanged", "absent")}
    known = fixture_paths(fixture) if plain["unchanged"] or plain["absent"] else []
    for path in plain["unchanged"]:
        out.append(("expect.files.unchanged", f"{path!r} is not in the fixture {fixture}"
                    f"{did_you_mean(path, known)}: unchanged compares with the fixture, so a "
                    "misspelt path passes whatever the agent changes; fix it, or list a path the agent must "
                    "not create under expect.files.absent"))
    for path in plain["absent"]:
        near = [k for k in known if not path.startswith(k) and _edits(path, k) <= 2]
        if near:
            out.append(("expect.files.absent", f"{path!r} is not in the fixture {fixture}, which has {near[0]!r}: "
                        "absent passes when the path is not there after the run, so a misspelt path of a file the "
                        "agent must remove passes with the file still there; fix it, unless it names a file the "
                        "agent must not create (then this warning is the only word on it)"))
    return out


def _fixture_text(fixture: Path, rel: str) -> str | None:
    """The fixture file's text (None: not a regular file inside the fixture)."""
    target = fixture / rel
    try:
        target.resolve().relative_to(fixture.resolve())
        return target.read_bytes().decode("utf-8", errors="replace") if target.is_file() else None
    except (ValueError, OSError):
        return None


def _entries(files: Mapping[str, Any]) -> tuple[list[tuple[str, str]], list[str], list[str]]:
    """The case's `contains` (path, text) pairs and its `exists` and `absent` paths (non-empty strings)."""
    contains = files.get("contains") if isinstance(files.get("contains"), Mapping) else {}
    pairs = [(str(rel), t) for rel, texts in contains.items() if isinstance(texts, list)
             for t in texts if isinstance(t, str) and t]
    paths = [[p for p in (files.get(key) if isinstance(files.get(key), list) else []) if isinstance(p, str) and p]
             for key in ("exists", "absent")]
    return pairs, paths[0], paths[1]


def _passed(files: Mapping[str, Any], fixture: Path) -> tuple[list[tuple[str, str]], list[str]]:
    """The `contains` pairs the fixture's file holds and the `exists` paths it has: what the untouched
    fixture passes (one reading of the fixture, for fixture_passes and fixture_fails alike)."""
    pairs, exists, _ = _entries(files)
    texts = {rel: _fixture_text(fixture, rel) or "" for rel in {rel for rel, _ in pairs}}
    return ([(rel, t) for rel, t in pairs if t in texts[rel]],
            [p for p in exists if os.path.lexists(fixture / p)])


def fixture_fails(files: Mapping[str, Any], fixture: Path) -> dict[str, Any]:
    """The `expect.files` entries the untouched fixture fails, so an agent that changes nothing fails
    them too: a `contains` text its file lacks ({path: [text]}), an `exists` path it lacks, an `absent`
    path it has. `unchanged` never counts (an agent that changes nothing passes it). Only the keys
    that hold an entry; {} when none does (or the fixture is not a directory: nothing is known)."""
    if not fixture.is_dir():
        return {}
    pairs, exists, absent = _entries(files)
    held, there = _passed(files, fixture)
    contains: dict[str, list[str]] = {}
    for rel, t in pairs:
        if (rel, t) not in held:
            contains.setdefault(rel, []).append(t)
    out = {"contains": contains, "exists": [p for p in exists if p not in there],
           "absent": [p for p in absent if os.path.lexists(fixture / p)]}
    return {key: value for key, value in out.items() if value}


def fixture_passes(files: Mapping[str, Any], fixture: Path) -> list[tuple[str, str]]:
    """(key, message) for each `expect.files` entry the untouched fixture already passes, so an agent
    that does nothing passes it too: a `contains` text the fixture's file holds, an `exists` path the
    fixture has, an `unchanged` glob that matches none of its files (a change to the files meant is
    not seen). Warnings only (the linter's): the agent may have to keep that text or file."""
    out: list[tuple[str, str]] = []
    if not fixture.is_dir():
        return out
    held, there = _passed(files, fixture)
    if held:
        out.append(("expect.files.contains", f"the fixture {fixture} already holds " + "; ".join(
            f"{rel}: {t!r}" for rel, t in held) + ", so an agent that changes nothing passes it; assert what "
            "the agent must ADD or CHANGE (a text the fixture lacks), unless the agent must keep that text "
            "(then this warning is the only word on it)"))
    if there:
        out.append(("expect.files.exists", f"the fixture {fixture} already has {', '.join(map(repr, there))}, "
                    "so an agent that creates nothing passes it; assert a path the agent must ADD, or a text it "
                    "must write (expect.files.contains), unless the agent must keep that file (then this warning "
                    "is the only word on it)"))
    globs = [g for g in (files.get("unchanged") if isinstance(files.get("unchanged"), list) else [])
             if isinstance(g, str) and g and any(c in g for c in GLOB)]
    if globs:
        from .workdir import covers, tree
        have = sorted(tree(fixture))
        for g in globs:
            if not any(covers(g, p) for p in have):
                out.append(("expect.files.unchanged", f"the glob {g!r} matches no file in the fixture {fixture} "
                            f"(its files: {', '.join(have[:6])}{', ...' if len(have) > 6 else ''}), so a change "
                            "to the files it means (a test deleted or edited) passes; use a glob that matches "
                            "the fixture's files, unless it names files the agent must not create"))
    return out
