"""Human audit (SPEC §8): the audit queue and its export, loading verdicts back, the audited labels
they produce, and the spot-checks that measure labeling error."""
