"""Simulated users: a conversation case driven by a persona and a goal (`input.simulated_user`),
the user's side written turn by turn by the simulator model (`<state>/simulator/simulator.yaml`),
scored on the conversation's end state."""
