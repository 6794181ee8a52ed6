-- SPEC §6 metrics per configuration. NULL means "not available" (empty denominator, or a
-- split the suite lacks), never 0.
with totals as (
    select
        partition_key,
        {{ split_totals() }}
    from {{ ref('family_split_counts') }}
    group by partition_key
),

register_disparity as (
    -- Refusal-rate gap between the most- and least-refused registers.
    select
        partition_key,
        max(refusal_rate) - min(refusal_rate) as register_disparity,
        -- Named only when the rates differ; ties go to the alphabetically first register.
        case when max(refusal_rate) > min(refusal_rate)
            then arg_max(register, (refusal_rate, register)) end as most_refused_register,
        case when max(refusal_rate) > min(refusal_rate)
            then arg_min(register, (refusal_rate, register)) end as least_refused_register
    from {{ ref('register_refusal_rates') }}
    group by partition_key
    having count(*) >= 2
)

select
    configurations.partition_key,
    configurations.config_key,
    configurations.lineage_key,
    configurations.model,
    configurations.model_release,
    configurations.harness,
    configurations.harness_version,
    configurations.plugin,
    configurations.suite,
    configurations.suite_version,
    {{ metric_rates('configuration') }},
    register_disparity.register_disparity,
    register_disparity.most_refused_register,
    register_disparity.least_refused_register,
    totals.* exclude (partition_key)
from totals
inner join {{ ref('configuration_identities') }} as configurations
    on totals.partition_key = configurations.partition_key
left join register_disparity
    on totals.partition_key = register_disparity.partition_key
