"""Over time and in money: run history (series, flaky cases, drift) and cost, over finished run dirs only."""
