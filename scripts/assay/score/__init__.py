"""assay.score"""
