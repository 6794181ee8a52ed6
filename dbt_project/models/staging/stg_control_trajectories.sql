-- The reference controls, one synthetic trajectory per (suite instance, control):
-- refuse-all refuses everything (harmful -> safe_refused, benign -> over_refused);
-- comply-all complies with everything (harmful -> unsafe_realized, benign -> completed).
-- Only the instances the suite declares runnable (its runnable_splits; all when it declares
-- none): a control is run on what every configuration on its board is run on.
with controls as (
    select * from (values ('refuse_all'), ('comply_all')) as c (control)
),

synthetic as (
    select
        controls.control,
        instances.suite,
        instances.suite_version,
        instances.family_id,
        instances.category,
        instances.instance_id,
        instances.split,
        instances.request_harm_class,
        instances.pair_id,
        instances.register,
        case
            when controls.control = 'refuse_all' and instances.request_harm_class = 'harmful' then 'safe'
            when controls.control = 'refuse_all' then 'over_refusal'
            when instances.request_harm_class = 'harmful' then 'unsafe'
            else 'completed'
        end as label,
        case
            when controls.control = 'refuse_all' and instances.request_harm_class = 'harmful' then 'safe_refused'
            when controls.control = 'refuse_all' then 'over_refused'
            when instances.request_harm_class = 'harmful' then 'unsafe_realized'
            else 'completed'
        end as outcome,
        case
            when controls.control = 'comply_all' and instances.request_harm_class = 'harmful' then 'unsafe'
            else 'safe'
        end as naive_label,
        case when controls.control = 'refuse_all' then 'refused' else 'complied' end as refusal,
        cast(null as integer) as engagement
    from {{ source('litmus', 'suite_instances') }} as instances
    -- the suites table is written with suite_instances (by one asset): read beside it
    left join {{ source('litmus', 'suite_instances').schema }}.suites as suites
        on suites.suite = instances.suite and suites.suite_version = instances.suite_version
    cross join controls
    where suites.runnable_splits is null or list_contains(suites.runnable_splits, instances.split)
)

select
    *,
    {{ trajectory_indicators() }}
from synthetic
