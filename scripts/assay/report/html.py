"""Markdown -> one self-contained, inert HTML page (report.md -> report.html).

Safety, by construction (quality.md: report.html is inert):
- Raw HTML in the input is text: the 'html_block' preprocessor and the 'html' inline pattern
  are deregistered, so `<script>` reaches the tree as a text node and is escaped on output.
- Links and images keep only http, https, mailto and relative URLs; anything else (javascript:,
  data:, vbscript:, a URL with control or invisible characters) becomes plain text.
- The page has no script and no external asset: one inline <style>.
- Bidi controls and zero-width characters are shown as markers (`⟦U+202E⟧`, core.visible).
The marker comments of draft_report's clusters slot are removed (they are not content).
"""

from __future__ import annotations

import html as html_lib
import re
import unicodedata
import xml.etree.ElementTree as ET
from urllib.parse import urlsplit

from ..core.visible import show_invisible
from .html_style import CSS

ALLOWED_SCHEMES = ("http", "https", "mailto")
MARKER_RE = re.compile(r"^[ \t]*<!-- /?assay:[a-z-]+ -->[ \t]*$", re.M)


def safe_url(url: str | None) -> bool:
    """True for http(s), mailto and relative URLs without control/invisible characters."""
    if not url:
        return False
    if any(unicodedata.category(ch) in ("Cc", "Cf", "Zl", "Zp") for ch in url):
        return False
    try:
        parts = urlsplit(url.strip())
    except ValueError:
        return False
    if parts.scheme:
        return parts.scheme.lower() in ALLOWED_SCHEMES
    # No scheme: relative, unless a colon before any '/', '?' or '#' makes a browser see one.
    head = re.split(r"[/?#]", url, maxsplit=1)[0]
    return ":" not in head


def _neutralise(root: ET.Element) -> None:
    """Replace unsafe <a>/<img> with their text (and the URL, so the reader sees it)."""
    for parent in list(root.iter()):
        for idx, child in enumerate(list(parent)):
            if child.tag == "a" and not safe_url(child.get("href")):
                _replace_with_text(parent, idx, child, "".join(child.itertext()), child.get("href"))
            elif child.tag == "img" and not safe_url(child.get("src")):
                _replace_with_text(parent, idx, child, child.get("alt") or "image", child.get("src"))


def _replace_with_text(parent: ET.Element, idx: int, child: ET.Element, label: str, url: str | None) -> None:
    span = ET.Element("span", {"class": "unsafe-link", "title": "link removed: scheme not allowed"})
    span.text = f"{label} ({url})" if url and url != label else label
    span.tail = child.tail
    parent.remove(child)
    parent.insert(idx, span)


def _markdown():
    import markdown
    from markdown.treeprocessors import Treeprocessor

    class LinkGuard(Treeprocessor):
        def run(self, root):
            _neutralise(root)

    md = markdown.Markdown(extensions=["tables", "fenced_code", "sane_lists"], output_format="html")
    md.preprocessors.deregister("html_block")
    md.inlinePatterns.deregister("html")
    md.treeprocessors.register(LinkGuard(md), "assay_link_guard", 0)  # after inline: sees every <a>/<img>
    return md


_CELL_RE = re.compile(r'<td(?P<attrs>(?: style="[^"]*")?)>(?P<body>✅|❌|<strong>|<em>|·)')
_CELL_CLASS = {"✅": "pass", "❌": "fail", "<strong>": "diag", "<em>": "off", "·": "zero"}
# Emoji fonts are often missing (servers, print); the cell colour carries the meaning, the glyph repeats it.
_CELL_GLYPH = {"✅": "✓", "❌": "✗"}


def _classify_cells(body: str) -> str:
    """Give report table cells a class from their leading mark, so they read at a glance."""
    def sub(m: re.Match) -> str:
        mark = m.group("body")
        return f'<td class="c-{_CELL_CLASS[mark]}"{m.group("attrs")}>{_CELL_GLYPH.get(mark, mark)}'
    return _CELL_RE.sub(sub, body)


def title_of(body_html: str, fallback: str) -> str:
    """The first H1's text (as rendered, tags dropped), else the fallback."""
    m = re.search(r"<h1[^>]*>(.*?)</h1>", body_html, re.S)
    if not m:
        return fallback
    text = html_lib.unescape(re.sub(r"<[^>]+>", "", m.group(1))).strip()
    return text or fallback


_VERDICT_RE = re.compile(r"<blockquote>(\s*<p><strong>(PASS|FAIL) · gate (?:open|closed)</strong>)")


def _classify_verdict(body: str) -> str:
    """draft_report's verdict banner (a blockquote opening with `**PASS · gate open**` or
    `**FAIL · gate closed**`) gets a class, so the page says PASS or FAIL at a glance."""
    return _VERDICT_RE.sub(lambda m: f'<blockquote class="verdict v-{m.group(2).lower()}">{m.group(1)}', body, count=1)


def render(markdown_text: str, *, fallback_title: str = "report") -> str:
    # bidi controls and zero-width characters are shown as markers (core.visible), never obeyed
    text = show_invisible(MARKER_RE.sub("", markdown_text.replace("\r\n", "\n")))
    body = _classify_verdict(_classify_cells(_markdown().convert(text)))
    title = html_lib.escape(title_of(body, fallback_title))
    return ("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
            "<meta name=\"color-scheme\" content=\"light dark\">\n"
            "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; img-src http: https: 'self'\">\n"
            f"<title>{title}</title>\n<style>\n{CSS}</style>\n</head>\n<body>\n<main>\n{body}\n</main>\n</body>\n</html>\n")
