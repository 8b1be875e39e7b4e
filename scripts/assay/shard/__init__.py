"""Shards: split a plan across CI machines (assign) and make one run directory of them (merge).

`assign` deals cases onto shards (round-robin in plan order, or packed by a previous
run's per-case latency); `merge` checks the shard run dirs against the plan fail-closed
and rebuilds every derived file with the runner's own functions. The plan's `shards`
block itself (its rules, a shard's slice of the plan) is `assay.plan.shards`.
"""
