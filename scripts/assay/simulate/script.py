"""A simulated user as the conversation driver's script (assay.invoke.script.Script): each user
turn is asked of the simulator with the transcript so far, until it sends the stop token, fails,
or has sent max_turns messages (then it is asked once more, to see whether stop_when holds).

After the driver returns, `ending` is (outcome, reason) of the attempt that counted, or None when
the driver stopped on an app turn (outcomes.APP_STOPPED); `sims[i]` is the simulator's work for
sent turn i+1, and `final` the call that ended the conversation (not a sent turn).
"""

from __future__ import annotations

from typing import Any, Iterator, Mapping

from ..core.writer import clip
from ..invoke.conversation import TurnSpec
from . import outcomes as oc
from .prompt import Transcript
from .runtime import Simulated, SimulatorRuntime
from .scenario import Scenario

# what a simulated turn checks on its own: the app answered (the case's http / exit_code, else 2xx)
TURN_KEYS = ("http", "exit_code")


class SimulatedScript:
    def __init__(self, runtime: SimulatorRuntime, scenario: Scenario, case: Mapping[str, Any],
                 ref: dict | None = None, through: Any = None) -> None:
        self.runtime = runtime
        self.scenario = scenario
        self.total = scenario.max_turns
        self.ref = ref
        self.through = through     # the record/replay cache's hook for this case (assay.run.simulated)
        expect = case.get("expect") if isinstance(case.get("expect"), Mapping) else {}
        self.turn_expect = {k: expect[k] for k in TURN_KEYS if k in expect}
        self.ending: tuple[str, str | None] | None = None
        self.sims: list[Simulated] = []
        self.final: Simulated | None = None

    def turns(self, sent: list[Any]) -> Iterator[TurnSpec]:
        self.ending, self.sims, self.final = None, [], None
        for n in range(1, self.scenario.max_turns + 2):
            transcript = Transcript(tuple((t.spec.user, (t.scored or {}).get("answer_text")) for t in sent))
            sim = self.runtime.next_turn(self.scenario, transcript, self.ref, self.through)
            if sim.outcome is not None:
                self.final, self.ending = sim, (sim.outcome, sim.reason)
                return
            if n > self.scenario.max_turns:
                self.final = sim
                self.ending = (oc.MAX_TURNS_REACHED, f"{self.scenario.max_turns} user turn(s) sent and stop_when never "
                               f"held (the user's next message: {clip(sim.turn.message, 200)!r})" if sim.turn else None)
                return
            self.sims.append(sim)
            yield TurnSpec(n=n, user=sim.turn.message if sim.turn else "", expect=dict(self.turn_expect),
                           checkpoint=False)

    def outcome(self) -> tuple[str, str | None]:
        return self.ending if self.ending is not None else (oc.APP_STOPPED, "an app turn ended the conversation")
