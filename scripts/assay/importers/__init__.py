"""Importers: other tools' suites become an assay state dir (promptfoo configs today)."""
