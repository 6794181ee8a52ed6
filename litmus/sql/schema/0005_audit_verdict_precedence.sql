-- audit verdicts: one precedence (override, then audit verdict, then spot-check; the latest of a kind)
-- Schema version 4. Which loaded verdict decides a trajectory, in one place, read by the
-- audited labels (litmus.audit.audited), the load report and `litmus audit history`
-- (litmus.audit.workflow) and the spot-check measurement (litmus.audit.spotcheck):
--   1. authority: an override (override = true, given with a reason when it replaces a rule
--      label) outranks an audit verdict (on a row the rules left needs_audit), which outranks
--      a spot-check verdict (a blind verdict on a row the rules decided: it measures the
--      rules and never replaces a label);
--   2. time: among verdicts of the same authority, the most recently loaded (load order, then
--      line; the auditor's own timestamp is recorded, not used to order).
-- So a lead's override is undone only by a later override, never by a spot-check or an
-- audit verdict loaded after it.
CREATE OR REPLACE VIEW ranked_audit_verdicts AS
SELECT *,
       CASE WHEN override THEN 'override'
            WHEN rule_label = 'needs_audit' THEN 'audit'
            ELSE 'spot-check' END AS kind,
       CASE WHEN override THEN 3 WHEN rule_label = 'needs_audit' THEN 2 ELSE 1 END AS authority,
       row_number() OVER (
           PARTITION BY trajectory_id
           ORDER BY CASE WHEN override THEN 3 WHEN rule_label = 'needs_audit' THEN 2 ELSE 1 END
                        DESC,
                    load_seq DESC, source_line DESC) = 1 AS decides
FROM audit_verdicts;
-- (by verdict_id, not ``* EXCLUDE``: DuckDB writes an EXCLUDE list back in no fixed order,
-- and the audit queue's reuse digests this view's text)
CREATE OR REPLACE VIEW current_audit_verdicts AS
SELECT * FROM audit_verdicts
WHERE verdict_id IN (SELECT verdict_id FROM ranked_audit_verdicts WHERE decides);
