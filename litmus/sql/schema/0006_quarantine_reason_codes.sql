-- quarantine reason codes: what programs match (the reason text is for people)
-- Schema version 6. Every quarantine row carries a reason code
-- (litmus.ingestion.run_files.ReasonCode); a loaded suite cures the rows whose code says the
-- suite, its version or the instance was unknown, whatever the reason's wording. Rows written
-- before this version get their code from their field and reason, read this once.
ALTER TABLE quarantine ADD COLUMN IF NOT EXISTS reason_code VARCHAR;
UPDATE quarantine SET reason_code = CASE
    WHEN field = 'suite' AND starts_with(reason, 'unknown suite ') THEN 'unknown_suite'
    WHEN field = 'suite_version' AND starts_with(reason, 'suite/version mismatch')
        THEN 'unknown_suite_version'
    WHEN field = 'instance_id' AND starts_with(reason, 'unknown instance_id ')
        THEN 'unknown_instance'
    WHEN starts_with(reason, 'duplicate (run_id, instance_id, epoch) = ') THEN 'duplicate'
    WHEN field = '<record>' AND starts_with(reason, 'line of ')
        AND contains(reason, ' bytes per record; not read') THEN 'oversized'
    WHEN field = '<record>' AND (
        starts_with(reason, 'blank line')
        OR starts_with(reason, 'not valid UTF-8')
        OR starts_with(reason, 'malformed JSON')
        OR starts_with(reason, 'JSON nested deeper')
        OR starts_with(reason, 'non-standard JSON constant')
        OR starts_with(reason, 'a record must be a JSON object')
        OR reason IN ('record nested too deeply', 'string contains an unpaired UTF-16 surrogate')
    ) THEN 'malformed'
    WHEN starts_with(reason, 'duplicate key ') THEN 'malformed'
    WHEN starts_with(reason, 'sample ') THEN 'unmapped'
    ELSE 'invalid'
END
WHERE reason_code IS NULL;
