-- One row per configuration partition with its display identity. A partition that mixes
-- suites or configuration keys gets two rows and fails the uniqueness test (fail closed).
select
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
    count(*)::bigint as n_trajectories,
    count(distinct family_id)::bigint as n_families
from {{ ref('stg_trajectory_flags') }}
group by all
