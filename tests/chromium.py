"""Debian's chromium for the pages a person clicks through (Playwright drives it: no browser
download): its path, the flags every browser test launches it with, and the mark that skips a
test, saying why, where it is absent."""

from __future__ import annotations

import os

import pytest

CHROMIUM = "/usr/bin/chromium"
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--no-first-run"]
NEEDS_CHROMIUM = pytest.mark.skipif(not os.path.exists(CHROMIUM), reason=f"{CHROMIUM} is absent (Debian's chromium)")
