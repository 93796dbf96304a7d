"""Attestations: the chain spec -> environment -> run -> report as in-toto statements
(ITE-6, `https://in-toto.io/Statement/v1`; a run's predicate is SLSA provenance v1), each in a
DSSE envelope signed with a local ed25519 key (securesystemslib). `repro attest` writes one
beside its object, `repro verify` checks the signatures and every digest against the bytes on
disk and names the first link that does not hold.
"""
