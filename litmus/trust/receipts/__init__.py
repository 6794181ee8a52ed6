"""Result receipts (SPEC §10): what a published leaderboard was computed from, and its check.

A receipt records, for one publication of the leaderboard:

- the SHA-256 of every raw input file, and the suites (name, version, content hash);
- the code that scored them: LITMUS, labeler, refusal-classifier and metric-code versions,
  the git commit when the project is a git checkout, and the bootstrap settings;
- per configuration: its run fingerprints, the publication gate results (or "not evaluated"),
  a digest of its audited labels, its audit verdicts (count, auditors, verdict files, digest)
  and whether it was published or withheld;
- every leaderboard row with the digest of its canonical JSON, and the policy versions;
- who published it and when, and an Ed25519 signature when a signing key is configured.

``verify_receipt`` recomputes all of it from the warehouse and the raw store and describes
every difference in plain words. A receipt proves that the published numbers follow from
those inputs under that code; it does not prove the judge or the inputs were right.

The package holds four ideas, one module each: :mod:`~litmus.trust.receipts.digests` (canonical
digests), :mod:`~litmus.trust.receipts.code_identity` (which code, who),
:mod:`~litmus.trust.receipts.keys` (signing keys and signatures),
:mod:`~litmus.trust.receipts.verify` (the check); with
:mod:`~litmus.trust.receipts.document` (the receipt file as strict models) and
:mod:`~litmus.trust.receipts.build` (the facts read from the warehouse). This module re-exports
what callers use.
"""

from litmus.trust.receipts.build import NOT_EVALUATED, build_receipt
from litmus.trust.receipts.code_identity import (
    METRIC_CODE_GLOBS,
    PROJECT_DIR,
    PUBLISHER_ENV,
    code_versions,
    git_commit,
    metric_code_digest,
    publisher_identity,
)
from litmus.trust.receipts.digests import (
    board_rows,
    leaderboard_table_rows,
    row_digest,
    rows_digest,
    short,
)
from litmus.trust.receipts.document import (
    RECEIPT_FILE_NAME,
    RECEIPT_KIND,
    RECEIPT_VERSION,
    ReceiptDocument,
    ReceiptEnvelope,
    ReceiptError,
    load_receipt,
    write_receipt,
)
from litmus.trust.receipts.keys import (
    SIGNATURE_ALGORITHM,
    SIGNED_CONTENT,
    SIGNING_KEY_ENV,
    SIGNING_KEY_PASSWORD_ENV,
    UNSIGNED_NOTE,
    configured_signing_key,
    generate_keypair,
    key_id,
    load_private_key,
    load_public_key,
    public_key_raw,
    sign_receipt,
    signing_payload,
    write_keypair,
)
from litmus.trust.receipts.verify import (
    Verification,
    verify_receipt,
)

__all__ = [
    "METRIC_CODE_GLOBS",
    "NOT_EVALUATED",
    "PROJECT_DIR",
    "PUBLISHER_ENV",
    "RECEIPT_FILE_NAME",
    "RECEIPT_KIND",
    "RECEIPT_VERSION",
    "SIGNATURE_ALGORITHM",
    "SIGNED_CONTENT",
    "SIGNING_KEY_ENV",
    "SIGNING_KEY_PASSWORD_ENV",
    "UNSIGNED_NOTE",
    "ReceiptDocument",
    "ReceiptEnvelope",
    "ReceiptError",
    "Verification",
    "board_rows",
    "build_receipt",
    "code_versions",
    "configured_signing_key",
    "generate_keypair",
    "git_commit",
    "key_id",
    "leaderboard_table_rows",
    "load_private_key",
    "load_public_key",
    "load_receipt",
    "metric_code_digest",
    "public_key_raw",
    "publisher_identity",
    "row_digest",
    "rows_digest",
    "short",
    "sign_receipt",
    "signing_payload",
    "verify_receipt",
    "write_keypair",
    "write_receipt",
]
