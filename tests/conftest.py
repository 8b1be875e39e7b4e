import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts"))

import os

# Scripts driven by tests run in the test venv, which has every dependency; a test that
# simulates a missing package must get the exit-2 message, not a bootstrapped venv.
# tests/test_bootstrap.py removes this to prove the bootstrap itself.
os.environ.setdefault("ASSAY_NO_BOOTSTRAP", "1")
