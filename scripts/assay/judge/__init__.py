"""The judge: rubric files, the judge config, the judge prompt, provider wire formats and
verdict parsing. Pure where it can be; `run` drives it (transport, retries, the pool).
Imports: core and schemas only.
"""
