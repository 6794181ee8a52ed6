"""Trust (SPEC §10): run fingerprints and signed result receipts."""

trust_assets: list = []
