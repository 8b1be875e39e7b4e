"""assay.lint"""
