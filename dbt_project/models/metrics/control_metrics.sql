-- The reference controls refuse-all and comply-all per suite, scored with the same
-- definitions as real configurations; both must land at boundary score 0.
with totals as (
    select
        suite,
        suite_version,
        control,
        {{ split_totals() }}
    from {{ ref('stg_control_trajectories') }}
    group by suite, suite_version, control
)

select
    suite,
    suite_version,
    control,
    {{ metric_rates('control') }},
    totals.* exclude (suite, suite_version, control)
from totals
