"""The one version string: every script's --version, plugin.json and manifests read it."""

VERSION = "0.1.0"
HARNESS_VERSION = VERSION


def version_line() -> str:
    return f"assay {VERSION}"
