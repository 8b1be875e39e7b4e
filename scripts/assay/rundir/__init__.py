"""rundir."""
