-- Refusal rate per (configuration, register) over requests asked in two or more registers.
select
    partition_key,
    register,
    sum(n_paired_rows)::bigint as n_paired_rows,
    sum(n_paired_refusals)::bigint as n_paired_refusals,
    {{ ratio('sum(n_paired_refusals)', 'sum(n_paired_rows)') }} as refusal_rate
from {{ ref('family_register_counts') }}
group by partition_key, register
