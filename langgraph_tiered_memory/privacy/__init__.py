"""What is held about whom: redaction, ownership, provenance, history and erasure rules.

Pure rules and records (no I/O): `redaction` masks personal data before it is stored,
`ownership` and `erasure` say which namespaces belong to a user, `provenance` which users
a memory came from, `history` the events of a memory and who caused them.
"""
