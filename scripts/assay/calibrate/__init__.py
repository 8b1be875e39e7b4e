"""Judge calibration: agreement statistics between human labels and the judge, and the
calibration sidecar the runner reads (`<state>/judge/calibration.json`).

Nothing in `assay.run` imports this package except to read the sidecar.
"""
