-- SPEC §6 metrics per (configuration, risk category).
with totals as (
    select
        partition_key,
        category,
        {{ split_totals() }}
    from {{ ref('family_split_counts') }}
    group by partition_key, category
)

select
    partition_key,
    category,
    {{ metric_rates('category') }},
    totals.* exclude (partition_key, category)
from totals
