{#- A rate is NULL ("not available") or a number in [0, 1]; anything else fails the build. -#}
{% test rate_in_unit_interval(model, column_name) %}
select {{ column_name }} as out_of_range_rate
from {{ model }}
where {{ column_name }} is not null
  and ({{ column_name }} < 0 or {{ column_name }} > 1 or isnan({{ column_name }}))
{% endtest %}
