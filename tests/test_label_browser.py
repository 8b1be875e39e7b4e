"""label.py's page driven in a real headless Chromium (Playwright) as a person would: a held key
labels one item, never the items after it the person never saw; the same page open in two tabs
keeps the labels given in both (neither tab saves over the other's)."""

from __future__ import annotations

import json
import time

import pytest

from chromium import CHROMIUM, FLAGS, NEEDS_CHROMIUM
from helpers import run_script
from test_label import judged_run

pytestmark = [pytest.mark.slow, NEEDS_CHROMIUM]
playwright_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed (pip install -e '.[test]')")


@pytest.fixture(scope="module")
def page_url(tmp_path_factory):
    """One judged run and its page for the module: each test opens it in a context of its own (its own
    localStorage, so no test sees another's labels)."""
    tmp = tmp_path_factory.mktemp("label-page")
    run = judged_run(tmp)
    page = tmp / "label.html"
    r = run_script("label", run, "-o", page, "--reviewer", "Dana Whitfield", "--seed", "3")
    assert r.rc == 0 and r.json["to_label"] == 5, r.stdout
    return page.as_uri()


@pytest.fixture(scope="module")
def browser():
    with playwright_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS, headless=True)
        try:
            yield b
        finally:
            b.close()


@pytest.fixture
def context(browser):
    ctx = browser.new_context()
    try:
        yield ctx
    finally:
        ctx.close()


def _open(context, url):
    page = context.new_page()
    page.goto(url)
    page.wait_for_function("document.body.getAttribute('data-ready') === '1'")
    return page


def _until(check, what: str, timeout: float = 20.0) -> None:
    """Poll from here: the page's CSP forbids the eval a page-side wait_for_function polls with."""
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, f"never: {what}"
        time.sleep(0.05)


def _exported(page) -> list[dict]:
    page.keyboard.press("e")
    return [json.loads(x) for x in page.input_value("#export").splitlines()]


def _shown(page) -> tuple[str, str]:
    return page.text_content("#case").split(" ")[0], page.text_content("#node")


@pytest.mark.parametrize("key", ["a", "p", "f"])
def test_a_held_key_labels_the_item_shown_never_the_ones_after_it(page_url, context, key):
    page = _open(context, page_url)
    first = _shown(page)
    page.keyboard.down(key)
    for _ in range(4):           # the key held: the browser sends it again as auto-repeats
        page.keyboard.down(key)
    page.keyboard.up(key)
    lines = _exported(page)
    assert [(x["case_id"], x["node_id"]) for x in lines] == [first]
    assert page.text_content("#progress").startswith("item 2 of 5 \u00b7 1 labelled")
    page.keyboard.press("j")      # moving may repeat: a held j walks the queue
    page.keyboard.down("k")
    page.keyboard.down("k")
    page.keyboard.up("k")
    assert page.text_content("#progress").startswith("item 1 of 5")
    # a held s skips one item: it never deletes the labels of the items after it
    page.keyboard.press("j")
    page.keyboard.press("p")      # item 2 labelled, item 3 shown
    page.keyboard.press("k")
    page.keyboard.press("k")      # back on item 1
    page.keyboard.down("s")
    page.keyboard.down("s")
    page.keyboard.up("s")
    assert [(x["case_id"], x["node_id"]) for x in _exported(page)] == [_at(page, 1)]


def _at(page, index: int) -> tuple[str, str]:
    data = json.loads(page.text_content("#assay-data"))
    item = data["items"][index]
    return item["case_id"], item["node_id"]


def test_two_tabs_of_one_page_keep_both_tabs_labels_across_a_reload(page_url, context):
    one, two = _open(context, page_url), _open(context, page_url)
    one.keyboard.press("p")
    one.keyboard.press("f")       # tab one: items 1 and 2
    for _ in range(3):
        two.keyboard.press("j")
    two.keyboard.press("p")       # tab two, opened before tab one labelled: item 4
    # each tab learns of the other's labels (a storage event, soon after); before, tab two saved its
    # own {item 4} over tab one's two labels and tab one never showed item 4
    for page in (one, two):
        _until(lambda: "3 labelled" in page.text_content("#progress"), "each tab shows all 3 labels")
    one.keyboard.press("f")       # tab one labels item 3 after tab two saved: it keeps tab two's item 4
    _until(lambda: "4 labelled" in two.text_content("#progress"), "tab two shows tab one's item 3")
    want = {_at(one, 0): "pass", _at(one, 1): "fail", _at(one, 2): "fail", _at(one, 3): "pass"}
    for page in (one, two):
        assert {(x["case_id"], x["node_id"]): x["label"] for x in _exported(page)} == want
    one.reload()
    one.wait_for_function("document.body.getAttribute('data-ready') === '1'")
    assert {(x["case_id"], x["node_id"]): x["label"] for x in _exported(one)} == want


def test_the_export_shown_stays_the_labels_given_since(page_url, browser, tmp_path):
    """Exported after two labels, then three more and one skip: the download link and the box hold all
    the labels as they are now (they held the first two, and a person who clicked the link lost the
    rest)."""
    ctx = browser.new_context(accept_downloads=True)
    try:
        page = _open(ctx, page_url)
        page.keyboard.press("p")
        page.keyboard.press("f")
        page.keyboard.press("e")
        assert len(page.input_value("#export").splitlines()) == 2
        for key in ("p", "f", "p"):
            page.keyboard.press(key)
        page.keyboard.press("s")          # item 5 (the last stays shown) labelled, then skipped: not exported
        want = {_at(page, i): label for i, label in enumerate(("pass", "fail", "pass", "fail"))}
        assert "(4 lines)" in page.text_content("#download")
        with page.expect_download() as download:
            page.click("#download")
        saved = tmp_path / download.value.suggested_filename
        download.value.save_as(saved)
        for text in (saved.read_text(), page.input_value("#export")):
            got = {(x["case_id"], x["node_id"]): x["label"] for x in map(json.loads, text.splitlines())}
            assert got == want
        page.fill("#reviewer", "")        # no reviewer: nothing to download rather than a stale file
        assert page.input_value("#export") == "" and page.get_attribute("#download", "href") is None
    finally:
        ctx.close()
