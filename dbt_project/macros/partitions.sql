{#-
  The per-configuration metric models are incremental (docs/performance.md, "A new
  release"): a publication rebuilds only the configurations whose inputs changed. The
  Dagster asset marks them pending in `result_inputs` before the build and passes the var
  `litmus_rebuild` (which result and mark to look for, always the same value, so dbt's
  partial parsing stays valid; `litmus.metrics.incremental`); a pending configuration has
  its rows deleted and recomputed, the others keep theirs. Without the var (a plain `dbt
  build`) every configuration is recomputed, and `--full-refresh` rebuilds each table from
  scratch; all three give the same rows.
-#}

{#- The SQL condition selecting the rows of the configurations this build recomputes. -#}
{% macro rebuilt_partitions(column='partition_key') -%}
  {%- set rebuild = var('litmus_rebuild', none) -%}
  {%- if not is_incremental() or rebuild is none -%}
    true
  {%- else -%}
    {{ column }} in (
        select partition_key from {{ target.schema }}.result_inputs
        where result = '{{ rebuild.result }}' and inputs_digest = '{{ rebuild.pending }}'
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
