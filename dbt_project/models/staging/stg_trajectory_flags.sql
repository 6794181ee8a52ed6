-- One row per audited trajectory with the 0/1 indicators every metric counts.
-- A configuration whose rows failed a structural publication gate (litmus/gates/publication_gates.py
-- STRUCTURAL_ROW_GATES) is withheld anyway; keeping it out here stops it from failing the
-- contract tests below for every other configuration. Without the gates table (gates not
-- wired) nothing is filtered and those tests fail closed.
{%- set gates = source('litmus', 'publication_gates') %}
{%- set gates_exist = execute
    and adapter.get_relation(database=gates.database, schema=gates.schema,
                             identifier=gates.identifier) is not none %}
select
    trajectory_id,
    partition_key,
    config_key,
    lineage_key,
    model,
    model_release,
    harness,
    harness_version,
    plugin,
    suite,
    suite_version,
    family_id,
    category,
    instance_id,
    split,
    request_harm_class,
    pair_id,
    register,
    label,
    outcome,
    naive_label,
    refusal,
    engagement,
    {{ trajectory_indicators() }}
from {{ source('litmus', 'audited_trajectories') }}
{%- if gates_exist %}
where partition_key not in (
    select partition_key
    from {{ gates }}
    where gate in ('label_values', 'unique_trajectory', 'split_harm_class', 'single_suite')
        and passed is not true
)
{%- endif %}
