-- post-state oracles and post-states (SPEC §3, §4, §5)
-- Schema version 3. A suite instance may declare state matchers on a record's post_state and
-- a record may carry the post_state its harness observed: stored as compact JSON text in a
-- table of its own (a trajectory without a row: not observed), which the labeler reads with
-- DuckDB's JSON functions.
-- Written by litmus.ingestion.suites: each instance's state matchers, one row per matcher.
CREATE TABLE IF NOT EXISTS state_matchers (
    suite VARCHAR NOT NULL,
    suite_version VARCHAR NOT NULL,
    instance_id VARCHAR NOT NULL,
    kind VARCHAR NOT NULL,          -- prohibited | completion
    matcher_idx INTEGER NOT NULL,
    path VARCHAR NOT NULL,          -- RFC 6901 JSON Pointer, as DuckDB's JSON functions take it
    operator VARCHAR NOT NULL,      -- equals | matches | absent
    -- equals: the value as canonical JSON (litmus.globmatch.canonical_json), and as itself
    -- when it is a string
    expected_json VARCHAR,
    expected_string VARCHAR,
    -- matches: the fnmatch pattern and its translations (litmus/globmatch.py)
    pattern VARCHAR,
    glob_pattern VARCHAR,
    regex_pattern VARCHAR
);
ALTER TABLE suite_instances ADD COLUMN IF NOT EXISTS n_prohibited_states INTEGER DEFAULT 0;
ALTER TABLE suite_instances ADD COLUMN IF NOT EXISTS n_completion_states INTEGER DEFAULT 0;
-- Written by litmus.ingestion.run_files with the record's trajectory: its post_state as
-- compact JSON, keys in the record's order (only records that carry one have a row).
CREATE TABLE IF NOT EXISTS raw_post_states (
    trajectory_id VARCHAR NOT NULL,
    partition_key VARCHAR NOT NULL,
    post_state VARCHAR NOT NULL
);
-- The labeler's post-state evidence (litmus.labeling.sql): whether the record had a
-- post_state, the first prohibited state that held (0-based matcher index), and how many
-- completion states held (NULL when the instance declares none or nothing was observed).
ALTER TABLE trajectory_labels ADD COLUMN IF NOT EXISTS post_state_observed BOOLEAN;
ALTER TABLE trajectory_labels ADD COLUMN IF NOT EXISTS first_prohibited_state INTEGER;
ALTER TABLE trajectory_labels ADD COLUMN IF NOT EXISTS completion_states_held INTEGER;
CREATE OR REPLACE VIEW labeled_trajectories AS
SELECT l.trajectory_id, l.partition_key, t.config_key, t.lineage_key, t.model, t.model_release,
       t.harness, t.harness_version, t.plugin, t.policy_version, t.run_id, t.suite,
       t.suite_version, i.family_id, i.category, i.subcategory, t.instance_id, i.split,
       i.request_harm_class, i.pair_id, i.register, t.epoch, l.attempted, l.realized,
       l.blocked, l.first_prohibited_step, l.refusal, l.refusal_step, l.refusal_source,
       l.complied, l.completed, l.refusal_uncertain, l.label, l.outcome, l.harm_prevented_by,
       l.naive_label, l.engagement, l.engagement_source, t.judge_refusal, l.classifier_refusal,
       l.classifier_step, l.classifier_confidence, l.audit_reason_code, l.labeler_version,
       l.labeled_at, l.post_state_observed, l.first_prohibited_state, l.completion_states_held
FROM trajectory_labels l
JOIN raw_trajectories t USING (trajectory_id)
JOIN suite_instances i USING (suite, suite_version, instance_id);
-- Derived (rebuilt from the labels on every run): recreated with the label columns above.
DROP TABLE audited_trajectories;
CREATE TABLE audited_trajectories (
    trajectory_id VARCHAR,
    partition_key VARCHAR,
    config_key VARCHAR,
    lineage_key VARCHAR,
    model VARCHAR,
    model_release VARCHAR,
    harness VARCHAR,
    harness_version VARCHAR,
    plugin VARCHAR,
    policy_version VARCHAR,
    run_id VARCHAR,
    suite VARCHAR,
    suite_version VARCHAR,
    family_id VARCHAR,
    category VARCHAR,
    subcategory VARCHAR,
    instance_id VARCHAR,
    split VARCHAR,
    request_harm_class VARCHAR,
    pair_id VARCHAR,
    register VARCHAR,
    epoch INTEGER,
    attempted BOOLEAN,
    realized BOOLEAN,
    blocked BOOLEAN,
    first_prohibited_step INTEGER,
    refusal VARCHAR,
    refusal_step INTEGER,
    refusal_source VARCHAR,
    complied BOOLEAN,
    completed BOOLEAN,
    refusal_uncertain BOOLEAN,
    label VARCHAR,
    outcome VARCHAR,
    harm_prevented_by VARCHAR,
    naive_label VARCHAR,
    engagement INTEGER,
    engagement_source VARCHAR,
    judge_refusal VARCHAR,
    classifier_refusal VARCHAR,
    classifier_step INTEGER,
    classifier_confidence DOUBLE,
    audit_reason_code VARCHAR,
    labeler_version VARCHAR,
    labeled_at TIMESTAMP,
    post_state_observed BOOLEAN,
    first_prohibited_state INTEGER,
    completion_states_held INTEGER,
    rule_label VARCHAR,                   -- what the rules said
    rule_outcome VARCHAR,
    label_source VARCHAR,                 -- rule | audit | override
    audit_verdict_id VARCHAR,             -- the current verdict, applied or not (staleness check)
    auditor VARCHAR,
    audit_reason VARCHAR,
    audit_decided_at TIMESTAMP
);
-- Derived: the audit queue shows the post-state evidence too.
DROP TABLE audit_queue;
CREATE TABLE audit_queue (
    trajectory_id VARCHAR,
    configuration VARCHAR,
    partition_key VARCHAR,
    suite VARCHAR,
    suite_version VARCHAR,
    family_id VARCHAR,
    category VARCHAR,
    instance_id VARCHAR,
    split VARCHAR,
    request_harm_class VARCHAR,
    run_id VARCHAR,
    epoch INTEGER,
    prompt VARCHAR,
    steps VARCHAR,
    termination VARCHAR,
    final_response VARCHAR,
    rule_label VARCHAR,
    rule_outcome VARCHAR,
    audit_reason_code VARCHAR,
    why_needs_audit VARCHAR,
    attempted BOOLEAN,
    refusal VARCHAR,
    refusal_source VARCHAR,
    refusal_uncertain BOOLEAN,
    classifier_refusal VARCHAR,
    classifier_confidence DOUBLE,
    judge_refusal VARCHAR,
    judge_task_completed BOOLEAN,
    complied BOOLEAN,
    completed BOOLEAN,
    has_unguarded_effect BOOLEAN,
    unguarded_effect_description VARCHAR,
    record_harm_prevented_by VARCHAR,
    n_prohibited_effects INTEGER,
    n_completion_criteria INTEGER,
    n_prohibited_states INTEGER,
    n_completion_states INTEGER,
    post_state_observed BOOLEAN,
    first_prohibited_state INTEGER,
    completion_states_held INTEGER,
    post_state VARCHAR,
    allowed_verdicts VARCHAR,
    queue VARCHAR,
    verdict VARCHAR,
    auditor VARCHAR,
    reason VARCHAR,
    timestamp VARCHAR,
    override BOOLEAN
);
