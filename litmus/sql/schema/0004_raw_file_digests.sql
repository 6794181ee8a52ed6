-- raw_file_digests: what ingestion derived from each raw file
-- Schema version 3. One row per (raw file, derived table, configuration): how many rows
-- ingestion stored from the file and a digest of them (litmus.trust.derivation), written in
-- the file's ingestion transaction; ``scheme`` names the digest function. quarantine rows have
-- no configuration (NULL), and every file has one, with 0 rows when nothing was quarantined.
-- Labeling refuses a configuration whose rows no longer give these digests; receipts list
-- them; `litmus verify` ingests the raw store again and compares the rows themselves.
CREATE TABLE IF NOT EXISTS raw_file_digests (
    file_hash VARCHAR NOT NULL,
    table_name VARCHAR NOT NULL,
    partition_key VARCHAR,
    n_rows BIGINT NOT NULL,
    digest VARCHAR NOT NULL,
    scheme VARCHAR NOT NULL
);
-- Files ingested before this version get their digests from their rows as stored at the next
-- run (trust on first use: litmus.trust.derivation.record_pending); until then they are marked
-- 'pending'. A file with no row here at all is refused, never trusted anew.
INSERT INTO raw_file_digests SELECT file_hash, 'pending', NULL, 0, '', '' FROM raw_files;
