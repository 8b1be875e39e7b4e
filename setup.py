"""The package list only (everything else is pyproject.toml): every package under scripts/assay,
found (never a hand-kept list), plus assay._commands, which pyproject.toml maps to scripts/ so the
commands (scripts/*.py) ship in the wheel beside the library."""

from setuptools import find_packages, setup

setup(packages=find_packages("scripts", include=["assay", "assay.*"]) + ["assay._commands"])
