-- labeled trajectories joined to their raw rows on the partition key too
-- A configuration's labels are written from its own raw rows (litmus.labeling.sql), so the
-- partition key joins them as well as the trajectory id does; with it, a query of one
-- configuration (`WHERE partition_key = ?`) reads only that configuration's row groups of
-- raw_trajectories instead of every configuration's.
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
JOIN raw_trajectories t
  ON t.partition_key = l.partition_key AND t.trajectory_id = l.trajectory_id
JOIN suite_instances i
  ON i.suite = t.suite AND i.suite_version = t.suite_version AND i.instance_id = t.instance_id;
