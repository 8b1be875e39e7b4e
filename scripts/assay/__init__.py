"""assay: the library every pipeline script calls.

Arrows point one way: scripts/* -> assay/*; run -> score, stats, schemas, core;
score -> core only. Nothing imports a script.
"""
