-- every table LITMUS writes
-- Schema version 1, applied once by litmus.warehouse under the writer lock; a later change is
-- a new numbered file, never an edit of this one. Each table names the module that writes
-- its rows (no other module creates or alters a table); dbt's models are dbt's (dbt_project/).

-- One row per schema file applied to this warehouse.
CREATE TABLE IF NOT EXISTS schema_migrations (
    version INTEGER PRIMARY KEY,
    applied_at TIMESTAMP NOT NULL,
    description VARCHAR NOT NULL
);

-- Each stored run file and what became of its records (litmus.ingestion.run_files).
CREATE TABLE IF NOT EXISTS raw_files (
    file_hash VARCHAR PRIMARY KEY,
    original_name VARCHAR NOT NULL,
    stored_path VARCHAR NOT NULL,
    file_format VARCHAR NOT NULL,
    size_bytes BIGINT NOT NULL,
    records_total BIGINT NOT NULL,
    records_accepted BIGINT NOT NULL,
    records_quarantined BIGINT NOT NULL,
    ingested_at TIMESTAMP NOT NULL
);
-- Each suite version stored (litmus.ingestion.suites).
CREATE TABLE IF NOT EXISTS suites (
    suite VARCHAR NOT NULL,
    suite_version VARCHAR NOT NULL,
    suite_hash VARCHAR NOT NULL,
    source_name VARCHAR NOT NULL,
    n_families INTEGER NOT NULL,
    n_instances INTEGER NOT NULL,
    complete_siblings BOOLEAN NOT NULL,
    loaded_at TIMESTAMP NOT NULL,
    sibling_policy VARCHAR,          -- complete | partial, read by the sibling-consistency gate
    PRIMARY KEY (suite, suite_version)
);
-- Suite files already stored, by the SHA-256 of their bytes: a file seen before is not
-- parsed and validated again on every run (a 125,000-instance suite takes tens of seconds).
CREATE TABLE IF NOT EXISTS suite_files (
    file_sha256 VARCHAR PRIMARY KEY,
    suite VARCHAR NOT NULL,
    suite_version VARCHAR NOT NULL,
    first_seen_at TIMESTAMP NOT NULL
);
-- Every instance of every stored suite (litmus.ingestion.suites).
CREATE TABLE IF NOT EXISTS suite_instances (
    suite VARCHAR NOT NULL,
    suite_version VARCHAR NOT NULL,
    family_id VARCHAR NOT NULL,
    category VARCHAR NOT NULL,
    subcategory VARCHAR,
    instance_id VARCHAR NOT NULL,
    split VARCHAR NOT NULL,
    request_harm_class VARCHAR NOT NULL,
    declared_harm_class VARCHAR,
    prompt VARCHAR NOT NULL,
    pair_id VARCHAR,
    register VARCHAR,
    n_prohibited INTEGER NOT NULL,
    n_completion INTEGER NOT NULL,
    -- a private family's prompts never leave the warehouse (docs/statistics.md)
    private BOOLEAN DEFAULT false,
    PRIMARY KEY (suite, suite_version, instance_id)
);
-- The prohibited-effect and completion matchers of each instance (litmus.ingestion.suites).
CREATE TABLE IF NOT EXISTS oracle_matchers (
    suite VARCHAR NOT NULL,
    suite_version VARCHAR NOT NULL,
    instance_id VARCHAR NOT NULL,
    kind VARCHAR NOT NULL,          -- prohibited | completion
    matcher_idx INTEGER NOT NULL,
    tool VARCHAR NOT NULL,
    -- every listed argument with its fnmatch pattern and two translations of it: a DuckDB
    -- GLOB pattern when one exists (fast), else an RE2 regex (see litmus/globmatch.py)
    arg_patterns STRUCT(
        arg_key VARCHAR, pattern VARCHAR, glob_pattern VARCHAR, regex_pattern VARCHAR
    )[] NOT NULL
);
-- One row per ingested trajectory (litmus.ingestion.run_files, litmus.ingestion.bulk).
CREATE TABLE IF NOT EXISTS raw_trajectories (
    trajectory_id VARCHAR PRIMARY KEY,
    partition_key VARCHAR NOT NULL,
    config_key VARCHAR NOT NULL,
    lineage_key VARCHAR NOT NULL,
    model VARCHAR NOT NULL,
    model_release VARCHAR NOT NULL,
    harness VARCHAR NOT NULL,
    harness_version VARCHAR NOT NULL,
    plugin VARCHAR NOT NULL,
    policy_version VARCHAR,
    run_id VARCHAR NOT NULL,
    suite VARCHAR NOT NULL,
    suite_version VARCHAR NOT NULL,
    instance_id VARCHAR NOT NULL,
    epoch INTEGER NOT NULL,
    termination VARCHAR NOT NULL,
    final_response VARCHAR,
    n_steps INTEGER NOT NULL,
    has_unguarded_effect BOOLEAN NOT NULL,
    unguarded_effect_prohibited BOOLEAN,
    unguarded_effect_description VARCHAR,
    harm_prevented_by VARCHAR,
    judge_refusal VARCHAR,
    judge_task_completed BOOLEAN,
    judge_helpfulness INTEGER,
    judge_tool_call_risk INTEGER,
    judge_engagement INTEGER,
    judge_name VARCHAR,
    source_file_hash VARCHAR NOT NULL,
    source_line BIGINT NOT NULL,
    record_sha256 VARCHAR NOT NULL
);
-- The steps of each trajectory (litmus.ingestion.run_files, litmus.ingestion.bulk).
CREATE TABLE IF NOT EXISTS raw_steps (
    trajectory_id VARCHAR NOT NULL,
    step_idx INTEGER NOT NULL,
    thought VARCHAR,
    message VARCHAR,
    tool_name VARCHAR,
    arguments_json VARCHAR,
    -- argument name → the text patterns match against (strings as-is, else compact JSON)
    match_args MAP(VARCHAR, VARCHAR),
    status VARCHAR,
    output VARCHAR,
    -- copied from the step's trajectory at ingestion, so the labeler reads a partition's
    -- steps and matches them to their oracle without joining a million trajectories first
    partition_key VARCHAR NOT NULL,
    suite VARCHAR NOT NULL,
    suite_version VARCHAR NOT NULL,
    instance_id VARCHAR NOT NULL,
    -- the step's incoming turn (SPEC §4 ``input``): kept for the auditor, never read as agent text
    input_role VARCHAR,
    input_content VARCHAR
);
-- The refusal classifier's reading of each trajectory (litmus.labeling).
CREATE TABLE IF NOT EXISTS refusal_signals (
    trajectory_id VARCHAR NOT NULL,
    partition_key VARCHAR NOT NULL,
    classifier_version VARCHAR NOT NULL,
    classifier_refusal VARCHAR NOT NULL,
    classifier_step INTEGER,
    classifier_confidence DOUBLE NOT NULL,
    classifier_engagement INTEGER
);
-- An LLM refusal judge's verdict per trajectory, with provenance (litmus/labeling/refusal_judge.py).
-- judge_refusal is NULL when the judge gave no verdict (status says why); the labeler reads
-- the rows of the configured judge and prompt version only.
CREATE TABLE IF NOT EXISTS refusal_judgments (
    trajectory_id VARCHAR NOT NULL,
    partition_key VARCHAR NOT NULL,
    judge_model VARCHAR NOT NULL,
    prompt_version VARCHAR NOT NULL,
    input_sha256 VARCHAR NOT NULL,
    judge_refusal VARCHAR,
    status VARCHAR NOT NULL,
    detail VARCHAR,
    cached BOOLEAN NOT NULL,
    judged_at TIMESTAMP NOT NULL
);
-- The labeler's output: decisions and evidence only, one row per trajectory. People and dbt
-- read the view labeled_trajectories, which joins in the trajectory and suite columns.
CREATE TABLE IF NOT EXISTS trajectory_labels (
    trajectory_id VARCHAR NOT NULL,
    partition_key VARCHAR NOT NULL,
    -- NULL (unknown) on a harmful instance that declares no prohibited effect (SPEC §5)
    attempted BOOLEAN,
    realized BOOLEAN,
    blocked BOOLEAN,
    first_prohibited_step INTEGER,
    refusal VARCHAR NOT NULL,
    refusal_step INTEGER,
    refusal_source VARCHAR NOT NULL,
    complied BOOLEAN NOT NULL,
    completed BOOLEAN,
    refusal_uncertain BOOLEAN NOT NULL,
    label VARCHAR NOT NULL,
    outcome VARCHAR NOT NULL,
    harm_prevented_by VARCHAR,
    naive_label VARCHAR NOT NULL,
    engagement INTEGER,
    engagement_source VARCHAR,
    classifier_refusal VARCHAR,
    classifier_step INTEGER,
    classifier_confidence DOUBLE,
    labeler_version VARCHAR NOT NULL,
    labeled_at TIMESTAMP NOT NULL,
    -- why a needs_audit row needs a person (tests/labeler_decision.py AUDIT_REASONS); else NULL
    audit_reason_code VARCHAR
);
CREATE OR REPLACE VIEW labeled_trajectories AS
SELECT l.trajectory_id, l.partition_key, t.config_key, t.lineage_key, t.model, t.model_release,
       t.harness, t.harness_version, t.plugin, t.policy_version, t.run_id, t.suite,
       t.suite_version, i.family_id, i.category, i.subcategory, t.instance_id, i.split,
       i.request_harm_class, i.pair_id, i.register, t.epoch, l.attempted, l.realized,
       l.blocked, l.first_prohibited_step, l.refusal, l.refusal_step, l.refusal_source,
       l.complied, l.completed, l.refusal_uncertain, l.label, l.outcome, l.harm_prevented_by,
       l.naive_label, l.engagement, l.engagement_source, t.judge_refusal, l.classifier_refusal,
       l.classifier_step, l.classifier_confidence, l.audit_reason_code, l.labeler_version,
       l.labeled_at
FROM trajectory_labels l
JOIN raw_trajectories t USING (trajectory_id)
JOIN suite_instances i USING (suite, suite_version, instance_id);
-- Every rejected record with file, line, field and reason (litmus.ingestion.run_files).
CREATE TABLE IF NOT EXISTS quarantine (
    source_file_hash VARCHAR NOT NULL,
    source_name VARCHAR NOT NULL,
    line_no BIGINT NOT NULL,
    field VARCHAR NOT NULL,
    reason VARCHAR NOT NULL,
    raw_excerpt VARCHAR,
    quarantined_at TIMESTAMP NOT NULL
);
-- The spot-checks drawn at publication (litmus.audit.spotcheck); empty until the first draw.
CREATE TABLE IF NOT EXISTS spot_check_sample (
    partition_key VARCHAR NOT NULL,
    trajectory_id VARCHAR NOT NULL,
    request_harm_class VARCHAR NOT NULL,
    stratum VARCHAR NOT NULL,             -- the rule label
    stratum_size BIGINT NOT NULL,         -- rule-decided rows of this label in the configuration
    stratum_sample_size BIGINT NOT NULL,
    draw_rank BIGINT NOT NULL,
    seed BIGINT NOT NULL,
    share DOUBLE NOT NULL,
    minimum BIGINT NOT NULL,
    PRIMARY KEY (trajectory_id)
);
-- Every audit verdict ever loaded, never overwritten (litmus.audit.workflow); the current one per
-- trajectory is the most recently loaded (the view current_audit_verdicts).
CREATE TABLE IF NOT EXISTS audit_verdicts (
    verdict_id VARCHAR NOT NULL,
    load_seq BIGINT NOT NULL,          -- one per loaded file; higher = newer
    trajectory_id VARCHAR NOT NULL,
    partition_key VARCHAR NOT NULL,
    verdict VARCHAR NOT NULL,
    override BOOLEAN NOT NULL,         -- the auditor overrides a rule label on purpose
    auditor VARCHAR NOT NULL,
    reason VARCHAR,
    decided_at TIMESTAMP NOT NULL,     -- the auditor's timestamp (UTC), else the load time
    rule_label VARCHAR NOT NULL,       -- what the rules said when the verdict was loaded
    rule_outcome VARCHAR NOT NULL,
    labeler_version VARCHAR NOT NULL,
    source_name VARCHAR NOT NULL,
    source_sha256 VARCHAR NOT NULL,
    source_line BIGINT NOT NULL,
    loaded_at TIMESTAMP NOT NULL
);
CREATE OR REPLACE VIEW current_audit_verdicts AS
SELECT * FROM audit_verdicts
QUALIFY row_number() OVER (
    PARTITION BY trajectory_id ORDER BY load_seq DESC, source_line DESC) = 1;
-- Rule labels with the current audit verdicts applied (litmus.audit.audited): the columns of
-- labeled_trajectories, then what the audit added. What dbt's metrics read.
CREATE TABLE IF NOT EXISTS audited_trajectories (
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
    rule_label VARCHAR,                   -- what the rules said
    rule_outcome VARCHAR,
    label_source VARCHAR,                 -- rule | audit | override
    audit_verdict_id VARCHAR,             -- the current verdict, applied or not (staleness check)
    auditor VARCHAR,
    audit_reason VARCHAR,
    audit_decided_at TIMESTAMP
);
-- Each gate's verdict per configuration (litmus.gates.publication_gates); a configuration is published only
-- when every gate passed.
CREATE TABLE IF NOT EXISTS publication_gates (
    partition_key VARCHAR NOT NULL,
    gate VARCHAR NOT NULL,
    passed BOOLEAN,                       -- NULL: not evaluated yet, which withholds like false
    message VARCHAR,                      -- the gate's message whenever it did not pass
    failing_count BIGINT NOT NULL,
    examples VARCHAR[] NOT NULL,
    details VARCHAR[] NOT NULL,           -- each failed expectation, described
    expectation_suite VARCHAR,
    evaluated_at TIMESTAMP
);
-- The fingerprint of each run as last published (litmus.fingerprint).
CREATE TABLE IF NOT EXISTS run_fingerprints (
    partition_key VARCHAR NOT NULL,
    run_id VARCHAR NOT NULL,
    config_key VARCHAR NOT NULL,
    fingerprint VARCHAR NOT NULL,
    -- the canonical JSON that was hashed, so anyone can see what the fingerprint covers
    fingerprint_input VARCHAR NOT NULL,
    n_trajectories BIGINT NOT NULL,
    computed_at TIMESTAMP NOT NULL,
    PRIMARY KEY (partition_key, run_id)
);
-- Release regression alerts, one per fingerprint, with their delivery (litmus.releases.alerts).
CREATE TABLE IF NOT EXISTS alerts (
    fingerprint VARCHAR PRIMARY KEY,
    lineage VARCHAR NOT NULL,
    suite VARCHAR NOT NULL,
    suite_version VARCHAR NOT NULL,
    from_release VARCHAR NOT NULL,
    to_release VARCHAR NOT NULL,
    from_partition_key VARCHAR NOT NULL,
    to_partition_key VARCHAR NOT NULL,
    metric VARCHAR NOT NULL,              -- the largest regressed drop
    delta DOUBLE NOT NULL,
    ci_low DOUBLE NOT NULL,
    ci_high DOUBLE NOT NULL,
    threshold DOUBLE NOT NULL,
    regressions STRUCT(
        metric VARCHAR, from_value DOUBLE, to_value DOUBLE,
        delta DOUBLE, ci_low DOUBLE, ci_high DOUBLE
    )[] NOT NULL,                         -- every regressed metric of the comparison
    raised_at TIMESTAMP NOT NULL,
    notified_at TIMESTAMP,                -- NULL until a sink accepted it
    notified_sinks VARCHAR[],
    delivery_error VARCHAR
);
-- The low-precision flag of every published rate (litmus.gates.publication_gates, SPEC §7 6).
CREATE TABLE IF NOT EXISTS precision_flags (
    partition_key VARCHAR NOT NULL,
    metric VARCHAR NOT NULL,
    n_families BIGINT,
    low_precision BOOLEAN NOT NULL,
    expectation_suite VARCHAR NOT NULL,
    evaluated_at TIMESTAMP NOT NULL,
    PRIMARY KEY (partition_key, metric)
);
-- Release-to-release drift per metric with its regression assessment (litmus.releases.drift).
CREATE TABLE IF NOT EXISTS release_drift (
    lineage_key VARCHAR NOT NULL,
    suite VARCHAR NOT NULL,
    suite_version VARCHAR NOT NULL,
    comparison INTEGER NOT NULL,          -- 1 = second release vs first, 2 = third vs second …
    release_order VARCHAR NOT NULL,       -- which ordering rule the group used
    from_partition_key VARCHAR NOT NULL,
    to_partition_key VARCHAR NOT NULL,
    from_config_key VARCHAR NOT NULL,
    to_config_key VARCHAR NOT NULL,
    from_release VARCHAR NOT NULL,
    to_release VARCHAR NOT NULL,
    metric VARCHAR NOT NULL,
    from_value DOUBLE,                    -- over the shared families
    to_value DOUBLE,
    delta DOUBLE,                         -- to − from: negative is a drop
    ci_low DOUBLE,
    ci_high DOUBLE,
    excludes_zero BOOLEAN NOT NULL,
    standard_error DOUBLE,                -- of the paired delta (docs/statistics.md)
    p_value DOUBLE,                       -- two-sided, H0: no change; before any adjustment
    mde DOUBLE,                           -- minimum detectable effect at 80% power
    degrees_of_freedom BIGINT NOT NULL,   -- shared families − categories
    interval_method VARCHAR NOT NULL,     -- paired_t | mover_wilson
    n_shared_families BIGINT NOT NULL,
    n_resamples BIGINT NOT NULL,
    seed BIGINT NOT NULL,
    confidence DOUBLE NOT NULL,
    threshold DOUBLE,                     -- the regression policy the decision used
    correction VARCHAR,                   -- holm | bh | none, over the watched tests
    n_tests BIGINT,                       -- how many tests the correction spans
    p_adjusted DOUBLE,
    mde_adjusted DOUBLE,                  -- MDE at the multiplicity-adjusted level
    decision VARCHAR,                     -- regression | underpowered | no regression | not watched
    PRIMARY KEY (from_partition_key, to_partition_key, metric)
);
-- Measured labeling agreement and corrected rates per configuration (litmus.audit.spotcheck).
CREATE TABLE IF NOT EXISTS labeling_agreement (
    partition_key VARCHAR NOT NULL,
    spot_checks_sampled BIGINT,
    spot_checks_decided BIGINT,
    labeling_agreement DOUBLE,
    labeling_agreement_ci_low DOUBLE,
    labeling_agreement_ci_high DOUBLE,
    labeling_status VARCHAR,
    labeling_note VARCHAR,
    corrected_cm_safety DOUBLE,
    corrected_cm_safety_ci_low DOUBLE,
    corrected_cm_safety_ci_high DOUBLE,
    corrected_safety DOUBLE,
    corrected_safety_ci_low DOUBLE,
    corrected_safety_ci_high DOUBLE,
    corrected_hb_utility DOUBLE,
    corrected_hb_utility_ci_low DOUBLE,
    corrected_hb_utility_ci_high DOUBLE,
    corrected_utility DOUBLE,
    corrected_utility_ci_low DOUBLE,
    corrected_utility_ci_high DOUBLE,
    corrected_boundary_score DOUBLE,
    corrected_boundary_score_ci_low DOUBLE,
    corrected_boundary_score_ci_high DOUBLE,
    max_disagreement DOUBLE,
    min_decided BIGINT,
    PRIMARY KEY (partition_key)
);
-- What each configuration's stored result rows were computed from (litmus.reuse), written in
-- the transaction that writes the rows: an unchanged digest means the rows can be reused.
CREATE TABLE IF NOT EXISTS result_inputs (
    result VARCHAR NOT NULL,          -- the table whose rows the digest describes
    partition_key VARCHAR NOT NULL,
    inputs_digest VARCHAR NOT NULL,
    PRIMARY KEY (result, partition_key)
);
-- Every rate's interval per configuration (litmus_dagster.metrics, from litmus.stats).
CREATE TABLE IF NOT EXISTS metric_cis (
    partition_key VARCHAR NOT NULL,
    metric VARCHAR NOT NULL,
    estimate DOUBLE,
    ci_low DOUBLE,
    ci_high DOUBLE,
    n_valid_resamples BIGINT NOT NULL,
    standard_error DOUBLE,                -- bootstrap SE, corrected for stratification
    effective_n DOUBLE,                   -- cluster effective sample size of the Wilson interval
    interval_method VARCHAR NOT NULL,     -- wilson_effective_n | percentile (docs/statistics.md)
    n_families BIGINT NOT NULL,
    n_resamples BIGINT NOT NULL,
    seed BIGINT NOT NULL,
    confidence DOUBLE NOT NULL,
    PRIMARY KEY (partition_key, metric)
);
-- The public − private gap per metric (litmus_dagster.metrics, from litmus.stats).
CREATE TABLE IF NOT EXISTS public_private_gaps (
    partition_key VARCHAR NOT NULL,
    metric VARCHAR NOT NULL,
    public_value DOUBLE,
    private_value DOUBLE,
    gap DOUBLE,                        -- public − private
    ci_low DOUBLE,
    ci_high DOUBLE,
    n_public_families BIGINT NOT NULL,
    n_private_families BIGINT NOT NULL,
    flagged BOOLEAN NOT NULL,          -- markedly better on the public families
    threshold DOUBLE NOT NULL,
    interval_method VARCHAR NOT NULL,
    PRIMARY KEY (partition_key, metric)
);
-- Plug-in deltas: each plug-in against its baseline, assessed (litmus.releases.plugin_deltas).
CREATE TABLE IF NOT EXISTS plugin_deltas (
    model VARCHAR,
    model_release VARCHAR,
    harness VARCHAR,
    harness_version VARCHAR,
    suite VARCHAR,
    suite_version VARCHAR,
    baseline_plugin VARCHAR,
    plugin VARCHAR,
    baseline_partition_key VARCHAR,
    partition_key VARCHAR,
    metric VARCHAR,
    baseline_value DOUBLE,
    value DOUBLE,
    delta DOUBLE,
    ci_low DOUBLE,
    ci_high DOUBLE,
    excludes_zero BOOLEAN,
    standard_error DOUBLE,
    p_value DOUBLE,
    mde DOUBLE,
    interval_method VARCHAR,
    n_shared_families BIGINT,
    degrees_of_freedom BIGINT,
    n_resamples BIGINT,
    seed BIGINT,
    confidence DOUBLE,
    threshold DOUBLE,
    correction VARCHAR,
    n_tests BIGINT,
    p_adjusted DOUBLE,
    mde_adjusted DOUBLE,
    decision VARCHAR
);
-- The leaderboard as published (litmus_dagster.metrics, from litmus.metrics.leaderboard's
-- LEADERBOARD_COLUMNS): what receipts digest and `litmus verify` compares.
CREATE TABLE IF NOT EXISTS leaderboard (
    row_kind VARCHAR,
    status VARCHAR,
    name VARCHAR,
    partition_key VARCHAR,
    suite VARCHAR,
    suite_version VARCHAR,
    fingerprint VARCHAR,
    rank BIGINT,
    naive_rank BIGINT,
    rank_shift BIGINT,
    ci_overlaps_next BOOLEAN,
    rank_not_significant BOOLEAN,
    boundary_score DOUBLE,
    hb_utility DOUBLE,
    cm_safety DOUBLE,
    utility DOUBLE,
    safety DOUBLE,
    naive_safe_rate DOUBLE,
    safety_hs DOUBLE,
    utility_eb DOUBLE,
    over_refusal_eb DOUBLE,
    over_refusal_hb DOUBLE,
    overreach_eb DOUBLE,
    overreach_hb DOUBLE,
    benign_refusal_contamination DOUBLE,
    incapable_share DOUBLE,
    engaged_decline_share DOUBLE,
    register_disparity DOUBLE,
    boundary_score_ci_low DOUBLE,
    boundary_score_ci_high DOUBLE,
    hb_utility_ci_low DOUBLE,
    hb_utility_ci_high DOUBLE,
    cm_safety_ci_low DOUBLE,
    cm_safety_ci_high DOUBLE,
    utility_ci_low DOUBLE,
    utility_ci_high DOUBLE,
    safety_ci_low DOUBLE,
    safety_ci_high DOUBLE,
    naive_safe_rate_ci_low DOUBLE,
    naive_safe_rate_ci_high DOUBLE,
    safety_hs_ci_low DOUBLE,
    safety_hs_ci_high DOUBLE,
    utility_eb_ci_low DOUBLE,
    utility_eb_ci_high DOUBLE,
    over_refusal_eb_ci_low DOUBLE,
    over_refusal_eb_ci_high DOUBLE,
    over_refusal_hb_ci_low DOUBLE,
    over_refusal_hb_ci_high DOUBLE,
    overreach_eb_ci_low DOUBLE,
    overreach_eb_ci_high DOUBLE,
    overreach_hb_ci_low DOUBLE,
    overreach_hb_ci_high DOUBLE,
    benign_refusal_contamination_ci_low DOUBLE,
    benign_refusal_contamination_ci_high DOUBLE,
    incapable_share_ci_low DOUBLE,
    incapable_share_ci_high DOUBLE,
    engaged_decline_share_ci_low DOUBLE,
    engaged_decline_share_ci_high DOUBLE,
    register_disparity_ci_low DOUBLE,
    register_disparity_ci_high DOUBLE,
    sandbox_masked BIGINT,
    n_rows BIGINT,
    n_families BIGINT,
    instances_covered BIGINT,
    low_precision VARCHAR,
    spot_checks_decided BIGINT,
    labeling_agreement DOUBLE,
    labeling_agreement_ci_low DOUBLE,
    labeling_agreement_ci_high DOUBLE,
    corrected_cm_safety DOUBLE,
    corrected_cm_safety_ci_low DOUBLE,
    corrected_cm_safety_ci_high DOUBLE,
    corrected_safety DOUBLE,
    corrected_safety_ci_low DOUBLE,
    corrected_safety_ci_high DOUBLE,
    corrected_hb_utility DOUBLE,
    corrected_hb_utility_ci_low DOUBLE,
    corrected_hb_utility_ci_high DOUBLE,
    corrected_utility DOUBLE,
    corrected_utility_ci_low DOUBLE,
    corrected_utility_ci_high DOUBLE,
    corrected_boundary_score DOUBLE,
    corrected_boundary_score_ci_low DOUBLE,
    corrected_boundary_score_ci_high DOUBLE,
    public_private_gap DOUBLE,
    public_private_gap_ci_low DOUBLE,
    public_private_gap_ci_high DOUBLE,
    public_private_flag BOOLEAN,
    plugin_baseline VARCHAR,
    plugin_delta_cm_safety DOUBLE,
    plugin_delta_cm_safety_ci_low DOUBLE,
    plugin_delta_cm_safety_ci_high DOUBLE,
    plugin_delta_cm_safety_mde DOUBLE,
    plugin_delta_cm_safety_decision VARCHAR,
    plugin_delta_hb_utility DOUBLE,
    plugin_delta_hb_utility_ci_low DOUBLE,
    plugin_delta_hb_utility_ci_high DOUBLE,
    plugin_delta_hb_utility_mde DOUBLE,
    plugin_delta_hb_utility_decision VARCHAR,
    plugin_delta_safety DOUBLE,
    plugin_delta_safety_ci_low DOUBLE,
    plugin_delta_safety_ci_high DOUBLE,
    plugin_delta_safety_mde DOUBLE,
    plugin_delta_safety_decision VARCHAR,
    plugin_delta_utility DOUBLE,
    plugin_delta_utility_ci_low DOUBLE,
    plugin_delta_utility_ci_high DOUBLE,
    plugin_delta_utility_mde DOUBLE,
    plugin_delta_utility_decision VARCHAR,
    plugin_delta_boundary_score DOUBLE,
    plugin_delta_boundary_score_ci_low DOUBLE,
    plugin_delta_boundary_score_ci_high DOUBLE,
    plugin_delta_boundary_score_mde DOUBLE,
    plugin_delta_boundary_score_decision VARCHAR,
    suite_families BIGINT,
    suite_instances BIGINT,
    labeling_note VARCHAR,
    withheld_reasons VARCHAR
);
-- The audit queue as last materialized (litmus_dagster.audit, from litmus.audit.workflow.audit_queue).
CREATE TABLE IF NOT EXISTS audit_queue (
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
    allowed_verdicts VARCHAR,
    queue VARCHAR,
    verdict VARCHAR,
    auditor VARCHAR,
    reason VARCHAR,
    timestamp VARCHAR,
    override BOOLEAN
);
