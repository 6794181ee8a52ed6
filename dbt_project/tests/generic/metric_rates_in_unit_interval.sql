{#- Every catalogue rate a model of `grain` carries is NULL or in [0, 1]; a failing row names
    the column. -#}
{% test metric_rates_in_unit_interval(model, grain) %}
{%- for column in rate_columns(grain) %}
select '{{ column }}' as rate_column, {{ column }} as out_of_range_rate
from {{ model }}
where {{ column }} is not null
  and ({{ column }} < 0 or {{ column }} > 1 or isnan({{ column }}))
{% if not loop.last %}union all{% endif %}
{%- endfor %}
{% endtest %}
