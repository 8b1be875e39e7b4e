"""Run dirs in object storage (wave 4 §5): `s3://bucket/prefix` URLs, the one client, publishing
a finished run dir and reading runs back (whole, or only the files a reader needs).

Layout in the store: `<prefix>/<run-id>/` holds an unsharded (or merged) run's files,
`<prefix>/<run-id>/shard-<I>-of-<N>/` one shard's (I 1-based, as `--shard I`). Each is written
with its `manifest.yaml` last, so a prefix without one is a publish that did not finish.
The client is boto3, an optional extra (`pip install 'assay[s3]'`): `client` is the only
module that imports it.
"""
