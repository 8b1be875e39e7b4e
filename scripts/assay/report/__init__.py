"""assay.report"""
