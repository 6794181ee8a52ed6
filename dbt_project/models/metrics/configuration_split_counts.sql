-- Counts by outcome per (configuration, split).
select
    partition_key,
    split,
    count(distinct family_id)::bigint as n_families,
    {%- for column in count_columns() %}
    sum({{ column }})::bigint as {{ column }}{% if not loop.last %},{% endif %}
    {%- endfor %}
from {{ ref('family_split_counts') }}
group by partition_key, split
