"""label.py's page driven in a real headless Chromium (Playwright) as a person would: a held key
labels one item, never the items after it the person never saw; the same page open in two tabs
keeps the labels given in both (neither tab saves over the other's); the judge's view is nowhere on
the page, nor in its DOM or source, until the person has labelled the item, and a label stands once
the person has seen it."""

from __future__ import annotations

import json
import time

import pytest

from chromium import CHROMIUM, FLAGS, NEEDS_CHROMIUM
from helpers import run_script
from test_label import judged_run

from assay.calibrate.label_page import page_items

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


# what the judge said of the fixture's items (test_label.judge_doc): its reasons and evidence quotes
JUDGE_WORDS = ("reason for", "quote for")
# the keys of the judge's view and the canary flags in the page's data (the script names them as code)
SEALED_KEYS = ('"judge_label"', '"evidence"', '"reason"', '"canary"', '"expected"')


def test_the_judges_view_is_hidden_until_the_person_has_labelled_the_item(page_url, context, tmp_path):
    """A reviewer with 30 seconds an item agrees with what is in front of them: the page showed the
    judge's verdict, evidence and reason beside the answer (and keys to 'agree'), its DOM and source
    held them for every item, so the measured agreement was partly the judge's own. Now the first
    screen, the DOM and the source hold none of it; the person labels, then may look (v), and the label
    then stands."""
    source = page_url.removeprefix("file://")
    page = _open(context, page_url)
    page.screenshot(path=str(tmp_path / "first-screen.png"))
    first = _shown(page)
    seen = page.inner_text("body")
    dom = page.content()
    with open(source, encoding="utf-8") as fh:
        raw = fh.read()
    for words in JUDGE_WORDS:
        assert words not in seen and words not in dom and words not in raw, words
    data = page.text_content("#assay-data")
    for key in SEALED_KEYS:
        assert key not in data, key
    for verdict in ("pass", "fail", "unknown"):   # nothing in the item's data says the judge's verdict
        assert f'"{verdict}"' not in data, verdict
    assert page.is_hidden("#judge-box") and page.is_hidden("#btn-judge")
    assert "Hidden until you have labelled this item" in page.text_content("#judge-hint")
    assert "agree" not in page.text_content("header")
    page.keyboard.press("a")                      # the old 'agree' key labels nothing
    assert "p (pass) or f (fail)" in page.text_content("#msg") and "0 labelled" in page.text_content("#progress")
    page.keyboard.press("v")                      # looking before labelling: refused
    assert page.is_hidden("#judge-box") and "Label this item first" in page.text_content("#msg")
    page.keyboard.press("f")
    page.keyboard.press("k")                      # back on the item labelled: still hidden until asked
    assert _shown(page) == first and page.is_hidden("#judge-box") and page.is_visible("#btn-judge")
    page.keyboard.press("v")
    page.screenshot(path=str(tmp_path / "revealed.png"), full_page=True)
    judged = {(it["case_id"], it["node_id"]): it for it in page_items(raw)[1]}[first]
    assert page.is_visible("#judge-box") and page.text_content("#judge") == judged["judge_label"]
    assert page.text_content("#reason") == f"reason for {first[1]}"
    for key in ("p", "s"):                        # the label given blind stands once the judge was seen
        page.keyboard.press(key)
        assert "your label stands" in page.text_content("#msg") and _shown(page) == first
    page.reload()
    page.wait_for_function("document.body.getAttribute('data-ready') === '1'")
    assert page.is_visible("#judge-box")          # still seen, still locked after a reload
    page.keyboard.press("p")
    lines = _exported(page)
    assert [(x["label"], x["judge_label"]) for x in lines] == [("fail", judged["judge_label"])]


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


@pytest.mark.parametrize("key", ["p", "f"])
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


def _store_key(page) -> str:
    return "assay-label-" + json.loads(page.text_content("#assay-data"))["batch"]


def _stored_items(page) -> set:
    raw = page.evaluate(f"window.localStorage.getItem({json.dumps(_store_key(page))})") or "{}"
    saved = json.loads(raw)
    return set((saved["labels"] if saved.get("v") == 2 else saved).keys())


def _deaf(context, url):
    """A tab whose page adds no storage listener: it never hears of another tab's saves."""
    page = context.new_page()
    page.add_init_script("(function (add) { window.addEventListener = function (type) {"
                         " if (type !== 'storage') return add.apply(this, arguments); }; })(window.addEventListener);")
    page.goto(url)
    page.wait_for_function("document.body.getAttribute('data-ready') === '1'")
    return page


def test_a_tab_that_never_heard_of_the_other_tabs_labels_saves_without_losing_them(page_url, context):
    """The race the two-tab test meets by chance, made certain: tab two's page never hears the storage
    event of tab one's labels (its listener stopped), then labels item 4. Saving its own map wrote
    {item 4} over tab one's two labels, lost at the next reload (CI met it under load: tab two labelled
    before the event of tab one's labels reached it). Now a save merges with what is stored."""
    one, two = _open(context, page_url), _deaf(context, page_url)
    one.keyboard.press("p")
    one.keyboard.press("f")
    _until(lambda: _stored_items(two) == {"0", "1"}, "tab two's store holds tab one's labels")
    assert "0 labelled" in two.text_content("#progress")   # the page itself never heard of them
    for _ in range(3):
        two.keyboard.press("j")
    two.keyboard.press("p")
    assert _stored_items(two) == {"0", "1", "3"}
    _until(lambda: "3 labelled" in one.text_content("#progress"), "tab one shows tab two's item 4")
    one.reload()
    one.wait_for_function("document.body.getAttribute('data-ready') === '1'")
    assert {(x["case_id"], x["node_id"]) for x in _exported(one)} == {_at(one, i) for i in (0, 1, 3)}


def test_a_label_given_after_the_judges_view_was_seen_stands_against_another_tab(page_url, context):
    """Tab one labelled item 1 and looked at the judge's view (the label then stands); tab two, not yet
    told, labels item 1 otherwise: the store keeps the label given before the judge was seen, and tab
    two shows it."""
    one, two = _open(context, page_url), _deaf(context, page_url)
    one.keyboard.press("f")
    one.keyboard.press("k")
    one.keyboard.press("v")
    _until(lambda: _stored_items(two) == {"0"}, "tab two's store holds tab one's label")
    two.keyboard.press("p")
    assert [x["label"] for x in _exported(two)] == ["fail"]
    assert [x["label"] for x in _exported(one)] == ["fail"]


def test_two_tabs_whose_saves_crossed_merge_back_to_both_tabs_labels(page_url, context):
    """Both tabs saved before either heard of the other (the store then held whichever wrote last): the
    storage event of the other's save merges it with this tab's labels and writes back what the store
    lacked, so the two tabs end with the same four labels and a skip made in one tab is kept as a skip."""
    one, two = _open(context, page_url), _open(context, page_url)
    key = json.dumps(_store_key(one))
    # tab one's save, written as the page writes it, lands after tab two's: the store loses tab two's label
    two.keyboard.press("p")                                    # item 1 (pass)
    _until(lambda: "1 labelled" in one.text_content("#progress"), "tab one hears tab two")
    label = {"label": "fail", "critique": "", "ts": "2026-01-01T00:00:00.000Z", "at": 1}
    stale = {"v": 2, "labels": {"2": label, "3": label}, "gone": {}}
    one.evaluate(f"window.localStorage.setItem({key}, {json.dumps(json.dumps(stale))})")   # tab two hears it
    for page in (one, two):
        _until(lambda: _stored_items(page) == {"0", "2", "3"}, "the store holds both tabs' labels")
        _until(lambda: "3 labelled" in page.text_content("#progress"), "each tab shows all 3 labels")
    two.keyboard.press("k")
    two.keyboard.press("s")                                    # tab two skips item 1 again: a later change
    for page in (one, two):
        _until(lambda: "2 labelled" in page.text_content("#progress"), "the skip reaches both tabs")
        assert {(x["case_id"], x["node_id"]) for x in _exported(page)} == {_at(page, 2), _at(page, 3)}


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


# a 1 MB answer whose failure is past the first screen (and past the old 20,000-character cut)
LONG_HEAD = "Your refund RF-2 of 20.00 USD is being processed. "
LONG_TAIL = "FAILURE: the refund went to account 0000-WRONG. " + "<img src=x onerror=\"document.title='PWNED'\">"


def test_a_long_answer_shows_its_first_screen_and_the_rest_when_asked(browser, tmp_path):
    """A 1 MB answer was shown cut at 20,000 characters with '… (N more characters)', and no way to read
    the rest, while answer_sha256 (written with the label) covered the whole answer: a failure late in
    the answer was never seen and the item labelled pass counted. Now the first screen holds the first
    20,000 characters and a control (Tab-reachable button, or r) shows the rest in place, as text; a
    label given without it is exported saw_whole_answer false (and score_agreement does not count it),
    one given after it true."""
    import hashlib
    run = judged_run(tmp_path)
    answer = LONG_HEAD + "lorem ipsum dolor sit amet " * 38_000 + LONG_TAIL
    assert len(answer) > 1_000_000
    (run / "cases" / "c-2" / "answer.txt").write_text(answer, encoding="utf-8")
    page_file = tmp_path / "label.html"
    r = run_script("label", run, "-o", page_file, "--reviewer", "Dana Whitfield", "--seed", "3")
    assert r.rc == 0, r.stdout
    ctx = browser.new_context()
    try:
        page = _open(ctx, page_file.as_uri())
        if _shown(page)[0] != "c-2":
            page.keyboard.press("p")                             # a short answer, labelled
        while _shown(page)[0] != "c-2":
            page.keyboard.press("j")
        item = _shown(page)
        shown = page.text_content("#answer")
        assert shown == answer[:20_000] and "FAILURE" not in page.inner_text("body")
        assert len(page.inner_text("main")) < 25_000            # the first screen stays light
        # said on the first screen, above the answer, with its control; and again after the part shown
        words = f"its first 20,000 of {len(answer):,} characters are below; {len(answer) - 20_000:,} more characters"
        assert words in page.text_content("#answer-left"), page.text_content("#answer-more")
        box = page.locator("#answer-rest").bounding_box()
        assert page.is_visible("#answer-rest") and box["y"] + box["height"] <= page.viewport_size["height"], box
        assert f"{len(answer) - 20_000:,} more characters not shown" in page.text_content("#answer-end")
        page.screenshot(path=str(tmp_path / "long-first-screen.png"))
        page.keyboard.press("p")                                 # labelled on the first screen only
        assert "saw_whole_answer false" in page.text_content("#msg")
        page.keyboard.press("k")
        assert "given before the rest" in page.text_content("#mine-note")
        lines = {(x["case_id"], x["node_id"]): x for x in _exported(page)}
        assert lines[item]["saw_whole_answer"] is False
        assert lines[item]["answer_sha256"] == hashlib.sha256(answer.encode()).hexdigest()
        for _ in range(40):                                      # the control is reachable by Tab
            page.keyboard.press("Tab")
            if page.evaluate("document.activeElement && document.activeElement.id") == "answer-rest":
                break
        else:
            pytest.fail("Tab never reached the 'show the rest' button")
        page.keyboard.press("Enter")
        assert page.text_content("#answer") == answer
        assert page.is_hidden("#answer-more") and page.is_hidden("#answer-end")
        assert "FAILURE: the refund went to account 0000-WRONG." in page.inner_text("#answer")
        assert page.locator("#answer img").count() == 0 and "PWNED" not in page.title()   # inert text
        assert "label it again" in page.text_content("#msg")
        page.screenshot(path=str(tmp_path / "long-rest-shown.png"))
        page.evaluate("window.scrollTo(0, document.getElementById('answer').getBoundingClientRect().bottom"
                      " + window.scrollY - 400)")
        page.screenshot(path=str(tmp_path / "long-rest-end.png"))
        page.keyboard.press("f")                                 # relabelled on the whole answer
        lines = {(x["case_id"], x["node_id"]): x for x in _exported(page)}
        assert lines[item]["saw_whole_answer"] is True and lines[item]["label"] == "fail"
        other = [x for x in lines.values() if x["case_id"] != "c-2"]
        assert other and all("saw_whole_answer" not in x for x in other)   # short answers: the whole was shown
        # the other node of c-2 shares the material: the rest stays shown for it
        page.keyboard.press("k")
        while _shown(page)[0] != "c-2" or _shown(page) == item:
            page.keyboard.press("j")
        assert page.text_content("#answer") == answer
        # and r shows the rest on a fresh page too
        fresh = browser.new_context()
        try:
            page2 = _open(fresh, page_file.as_uri())
            while _shown(page2)[0] != "c-2":
                page2.keyboard.press("j")
            page2.keyboard.press("r")
            assert page2.text_content("#answer") == answer
        finally:
            fresh.close()
    finally:
        ctx.close()
