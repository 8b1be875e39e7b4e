"""The report page's one inline stylesheet: light and dark, print, tables that read at a glance."""

CSS = """
:root {
  --bg: #fbfbfa; --fg: #1d1f23; --muted: #5f6670; --rule: #e3e4e8; --panel: #ffffff;
  --code-bg: #f2f3f5; --accent: #3451b2;
  --pass-bg: #e3f5e8; --pass-fg: #17633a; --fail-bg: #fde7e7; --fail-fg: #a12020;
  --diag-bg: #dcebfd; --diag-fg: #1d4f91; --off-bg: #fff1d6; --off-fg: #8a5300;
  --quote-bg: #fff8e1; --quote-rule: #e0a800;
}
@media (prefers-color-scheme: dark) {
  :root {
    --bg: #15171a; --fg: #e6e7ea; --muted: #9aa1ab; --rule: #2c3036; --panel: #1c1f23;
    --code-bg: #23272d; --accent: #8fa8ff;
    --pass-bg: #143222; --pass-fg: #7ddc9f; --fail-bg: #3b1719; --fail-fg: #ff9a9a;
    --diag-bg: #16304f; --diag-fg: #9cc6ff; --off-bg: #3a2a0c; --off-fg: #ffc46b;
    --quote-bg: #2b2510; --quote-rule: #b38600;
  }
}
* { box-sizing: border-box; }
html { background: var(--bg); }
body { margin: 0; color: var(--fg); background: var(--bg);
  font: 15px/1.55 -apple-system, BlinkMacSystemFont, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif; }
main { max-width: 920px; margin: 0 auto; padding: 32px 24px 64px; }
h1 { font-size: 1.7em; margin: 0 0 4px; letter-spacing: -0.01em; }
h1 + p { color: var(--muted); font-size: 0.9em; margin-top: 0; }
h1 + p + p { font-size: 1.08em; margin: 14px 0 8px; padding: 12px 16px; background: var(--panel);
  border: 1px solid var(--rule); border-radius: 10px; }
h2 { font-size: 1.25em; margin: 2.2em 0 0.6em; padding-bottom: 6px; border-bottom: 1px solid var(--rule); }
h3 { font-size: 1.02em; margin: 1.6em 0 0.4em; }
p, ul, ol { margin: 0.5em 0 0.9em; }
li { margin: 0.2em 0; }
a { color: var(--accent); }
.unsafe-link { color: var(--muted); text-decoration: line-through dotted; }
code { font: 0.88em/1.4 ui-monospace, SFMono-Regular, Menlo, Consolas, monospace;
  background: var(--code-bg); padding: 1px 5px; border-radius: 4px; }
pre { background: var(--code-bg); border: 1px solid var(--rule); border-radius: 8px;
  padding: 12px 14px; overflow-x: auto; white-space: pre-wrap; word-break: break-word; }
pre code { background: none; padding: 0; font-size: 0.84em; }
blockquote { margin: 1em 0; padding: 10px 16px; background: var(--quote-bg);
  border-left: 4px solid var(--quote-rule); border-radius: 0 8px 8px 0; }
blockquote p { margin: 0.3em 0; }
blockquote.verdict { font-size: 1.05em; border-left-width: 8px; padding: 12px 18px; }
blockquote.verdict > p:first-child strong:first-child { font-size: 1.3em; letter-spacing: 0.02em; }
blockquote.v-fail { background: var(--fail-bg); border-left-color: var(--fail-fg); }
blockquote.v-fail > p:first-child strong:first-child { color: var(--fail-fg); }
blockquote.v-pass { background: var(--pass-bg); border-left-color: var(--pass-fg); }
blockquote.v-pass > p:first-child strong:first-child { color: var(--pass-fg); }
hr { border: 0; border-top: 1px solid var(--rule); margin: 2.5em 0 1em; }
hr + p { color: var(--muted); font-size: 0.85em; }
table { border-collapse: separate; border-spacing: 0; margin: 0.8em 0 1.4em; font-size: 0.9em;
  font-variant-numeric: tabular-nums; background: var(--panel); border: 1px solid var(--rule);
  border-radius: 8px; overflow: hidden; }
th, td { padding: 6px 12px; border-bottom: 1px solid var(--rule); }
tr:last-child td { border-bottom: 0; }
th { background: var(--code-bg); font-weight: 600; text-align: left; white-space: nowrap; }
td:first-child { font-weight: 500; white-space: nowrap; }
tbody tr:hover td { filter: brightness(0.97); }
td.c-pass { background: var(--pass-bg); color: var(--pass-fg); font-weight: 600; }
td.c-fail { background: var(--fail-bg); color: var(--fail-fg); font-weight: 700; }
td.c-diag { background: var(--diag-bg); color: var(--diag-fg); }
td.c-off { background: var(--off-bg); color: var(--off-fg); font-weight: 700; }
td.c-off em { font-style: normal; }
td.c-zero { color: var(--muted); }
@media print {
  :root { --bg: #fff; --fg: #000; --panel: #fff; --code-bg: #f3f3f3; }
  body { font-size: 11pt; }
  main { max-width: none; padding: 0; }
  h2, h3 { break-after: avoid; }
  table, pre, blockquote { break-inside: avoid; }
  blockquote.verdict { -webkit-print-color-adjust: exact; print-color-adjust: exact; }
  td.c-pass, td.c-fail, td.c-diag, td.c-off { -webkit-print-color-adjust: exact; print-color-adjust: exact; }
  a { color: inherit; }
  a[href^="http"]::after { content: " (" attr(href) ")"; font-size: 0.85em; color: #555; }
}
"""
