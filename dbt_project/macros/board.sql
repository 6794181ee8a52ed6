{# A number the board can rank or compare: neither NULL nor NaN (pandas' notna). #}
{% macro present(column) %}({{ column }} is not null and not isnan({{ column }})){% endmacro %}
