"""assay.run"""
