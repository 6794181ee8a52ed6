-- Counts per (configuration, family, split): the unit the family-cluster bootstrap resamples.
select
    partition_key,
    category,
    family_id,
    split,
    {%- for column in count_columns() %}
    sum({{ column }})::bigint as {{ column }}{% if not loop.last %},{% endif %}
    {%- endfor %}
from {{ ref('stg_trajectory_flags') }}
group by partition_key, category, family_id, split
