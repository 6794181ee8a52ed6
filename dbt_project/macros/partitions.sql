{#-
  The per-configuration metric models are incremental (docs/performance.md, "A new
  release"): a publication rebuilds only the configurations whose inputs changed. The
  Dagster asset passes them as the var `litmus_partitions` (a list of partition keys,
  `litmus.metrics.incremental`); a configuration in the list has its rows deleted and
  recomputed, the others keep theirs. Without the var (a plain `dbt build`) every
  configuration is recomputed, and `--full-refresh` rebuilds each table from scratch; all
  three give the same rows.
-#}

{#- The SQL condition selecting the rows of the configurations this build recomputes. -#}
{% macro rebuilt_partitions(column='partition_key') -%}
  {%- set partitions = var('litmus_partitions', none) -%}
  {%- if not is_incremental() or partitions is none -%}
    true
  {%- elif partitions | length == 0 -%}
    false
  {%- else -%}
    {{ column }} in (
      {%- for key in partitions -%}
        '{{ key | replace("'", "''") }}'{% if not loop.last %}, {% endif %}
      {%- endfor -%}
    )
  {%- endif -%}
{%- endmacro %}


{#- Pre-hook of every incremental model (inside its transaction): the rows about to be
    recomputed go first, so a configuration that lost its rows (or was withheld by a
    structural gate) loses its metrics too. -#}
{% macro delete_rebuilt_partitions() -%}
  {%- if is_incremental() -%}
    delete from {{ this }} where {{ rebuilt_partitions() }}
  {%- endif -%}
{%- endmacro %}
