"""How a simulated conversation ended: the named outcomes (one definition). Pure.

| outcome | meaning | the case |
|---|---|---|
| `goal_reached` | the user sent the stop token: stop_when held | scored on its end state |
| `app_stopped` | an app turn failed or had an outage (the scripted stop rule) | that turn's verdict |
| `simulator_outage` | the simulator did not answer (transport, non-2xx, budget spent) | infra_error |
| `simulator_unparseable` | its reply was not a user turn, twice | infra_error |
| `simulator_broke_character` | its message failed the character check (never sent) | infra_error |
| `max_turns_reached` | max_turns user turns sent and stop_when never held | infra_error |

The last four are the harness's failures, never the app's: infra_error with the outcome named
first in the reason, counted apart in the gate (`by_kind.simulated.outcomes`).
"""

from __future__ import annotations

from ..core.vocab import SIM_APP_STOPPED as APP_STOPPED
from ..core.vocab import SIM_GOAL_REACHED as GOAL_REACHED
from ..core.vocab import SIM_HARNESS_OUTCOMES as HARNESS_OUTCOMES
from ..core.vocab import SIM_OUTCOMES as OUTCOMES

SIMULATOR_OUTAGE, SIMULATOR_UNPARSEABLE, SIMULATOR_BROKE_CHARACTER, MAX_TURNS_REACHED = HARNESS_OUTCOMES
__all__ = ["GOAL_REACHED", "APP_STOPPED", "HARNESS_OUTCOMES", "OUTCOMES", "SIMULATOR_OUTAGE", "SIMULATOR_UNPARSEABLE",
           "SIMULATOR_BROKE_CHARACTER", "MAX_TURNS_REACHED", "infra_reason"]


def infra_reason(outcome: str, reason: str | None) -> str:
    """`simulator_outage: <why>`: the infra_reason of a conversation the simulator ended."""
    return f"{outcome}: {reason or 'no detail'}"
