-- Refusals per (configuration, family, register) among paired-register trajectories, for the
-- bootstrap of the register disparity.
select
    partition_key,
    category,
    family_id,
    register,
    count(*)::bigint as n_paired_rows,
    sum(n_refusals)::bigint as n_paired_refusals
from {{ ref('stg_paired_register_rows') }}
group by partition_key, category, family_id, register
