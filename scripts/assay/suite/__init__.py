"""assay.suite"""
