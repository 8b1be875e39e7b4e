"""The local viewer (wave 3 §4): a read-only web app over <state>/reports/, and a static bundle.

paths: safe reads under reports/ (no symlink followed); runs: the runs list; cases: one run's
case index, filters and pages; case: one case's documents; api: the JSON documents the pages
show (shared by the server and the bundle); server: the stdlib HTTP server; bundle: static files.
"""
