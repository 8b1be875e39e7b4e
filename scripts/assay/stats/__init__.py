"""assay.stats"""
