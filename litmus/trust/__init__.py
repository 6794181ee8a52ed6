"""Trust (SPEC §10): publishing the board and its receipt together or not at all, and the receipts
themselves."""
