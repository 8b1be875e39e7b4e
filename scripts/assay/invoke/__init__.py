"""invoke."""
