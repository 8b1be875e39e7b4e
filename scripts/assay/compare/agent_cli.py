"""The agent CLI versions and models each side of a comparison ran: an agent run's cases'
trajectory.json `agent_cli` (`{version, model}`, the transcript's init event: assay.traces.claude_code),
folded into one set per side as the pairs are made (compare.pair_all: the records the pair just read,
no second walk). A side that is not an agent run is not read (`None`: its trajectories carry no CLI).

Two sides whose sessions report different CLI versions or models are said in compare.json's `notes`
(`cli_notes`): what got better or broke between the runs is then partly the CLI's or the model's
doing. A side that reports none (a run written before trajectories recorded `agent_cli`, or a CLI
whose init event names no version) is unknown, never different: nothing is said.
"""

from __future__ import annotations

from typing import Any

from .sides import Side

KEYS = (("versions", "version"), ("models", "model"))


def is_agent_run(side: Side) -> bool:
    inv = side.manifest.get("invocation")
    return isinstance(inv, dict) and inv.get("mode") == "agent"


class CliFold:
    """`add(which, side, cid)` per case of each side; `of(which)`: `{versions, models}` sorted, or None
    when the side is not an agent run. A forked half is a `fresh()` fold, `merge`d back."""

    def __init__(self, reads: dict[str, bool]) -> None:
        self.reads = dict(reads)
        self.seen: dict[str, dict[str, set]] = {w: {"versions": set(), "models": set()} for w in self.reads}

    @classmethod
    def of_sides(cls, base: Side, cand: Side) -> "CliFold":
        return cls({"base": is_agent_run(base), "candidate": is_agent_run(cand)})

    def fresh(self) -> "CliFold":
        return CliFold(self.reads)

    def add(self, which: str, side: Side, cid: str) -> None:
        if not self.reads.get(which) or cid not in side.rows:
            return
        traj = side.json(cid, "trajectory.json")
        got = traj.get("agent_cli") if isinstance(traj, dict) else None
        if isinstance(got, dict):
            for many, one in KEYS:
                if isinstance(got.get(one), str) and got[one]:
                    self.seen[which][many].add(got[one])

    def merge(self, other: Any) -> None:
        if isinstance(other, CliFold):
            for w, sets in other.seen.items():
                for k, v in sets.items():
                    self.seen.setdefault(w, {"versions": set(), "models": set()})[k] |= v

    def of(self, which: str) -> dict[str, list[str]] | None:
        if not self.reads.get(which):
            return None
        return {k: sorted(v) for k, v in self.seen[which].items()}


def cli_notes(base: dict | None, cand: dict | None, chosen_by_arms: bool) -> list[str]:
    """What compare.json's `notes` say when the two sides' sessions ran on different CLI versions or
    models: both known and different (an unknown side says nothing). Two arms that set `program`,
    `command` or `env` choose the CLI on purpose: nothing said (lift._cli_caveats keeps the same rule)."""
    if base is None or cand is None or chosen_by_arms:
        return []
    out = []
    for key, what, whose, fix in (
            ("versions", "the agent's Claude Code CLI version", "CLI's",
             "pin the CLI (`make claude-cli`, or one `invocation.agent.program`) and run the base again on it"),
            ("models", "the agent's model", "model's", "run both with one model")):
        b, c = base.get(key) or [], cand.get(key) or []
        if b and c and b != c:
            out.append(f"{what} differs: base {', '.join(b)}, candidate {', '.join(c)} (the sessions' transcripts, "
                       f"trajectory.json agent_cli): what got better or broke may be the {whose} change, not only "
                       f"the app's; {fix} to see the app's change alone")
    return out
