-- The board's rows, one board per (suite, suite version), in display order (board_order):
-- per board its ranked configurations, the unranked ones (no ranking metric), the withheld
-- ones with their reasons, then the reference controls.
--
-- The publication decision is an input, not a rule of this model: the domain decides it
-- (litmus.gates.publication_decision) and hands it in, with what else the domain computes
-- (fingerprints, coverage, precision flags, suite sizes), as the connection variables
-- litmus_board_inputs and litmus_board_suite_sizes (litmus.metrics.leaderboard). Unset (a
-- plain `dbt build`), every configuration counts as published and precise.
--
-- Ranks are competition ranks ("1224") among the published configurations of a suite only,
-- by the boundary score (by Safety on a suite where no configuration has one: ranking_metric,
-- the one place this is decided; the board's heading and plot read it); a rate flagged
-- low-precision ranks after every precise one (SPEC §7 6). NaN ranks nowhere.
{%- set catalogue = var('metric_catalogue') %}
{%- set rates = [] %}
{%- for metric in catalogue.metrics if metric.ci != 'none' %}{% do rates.append(metric.key) %}{% endfor %}
{%- set control_rates = [] %}
{%- for metric in catalogue.metrics if metric.ci != 'none' and 'control' in metric.grain %}{% do control_rates.append(metric.key) %}{% endfor %}
{%- set delta_metrics = catalogue.drift_metrics %}

with board_inputs as (
    select unnest(cast(getvariable('litmus_board_inputs') as struct(
        partition_key varchar,
        suite varchar,
        suite_version varchar,
        withheld_reasons varchar[],
        fingerprint varchar,
        instances_covered bigint,
        low_precision varchar[]
    )[]), recursive := true)
),

suite_sizes as (
    select unnest(cast(getvariable('litmus_board_suite_sizes') as struct(
        suite varchar, suite_version varchar, suite_families bigint, suite_instances bigint
    )[]), recursive := true)
),

intervals as (
    select
        partition_key,
        {%- for rate in rates %}
        max(ci_low) filter (where metric = '{{ rate }}') as {{ rate }}_ci_low,
        max(ci_high) filter (where metric = '{{ rate }}') as {{ rate }}_ci_high{{ "," if not loop.last }}
        {%- endfor %}
    from {{ source('litmus', 'metric_cis') }}
    group by partition_key
),

private_gaps as (
    select
        partition_key,
        gap as public_private_gap,
        ci_low as public_private_gap_ci_low,
        ci_high as public_private_gap_ci_high,
        coalesce(flagged, false) as public_private_flag
    from {{ source('litmus', 'public_private_gaps') }}
    where metric = 'boundary_score'
),

configurations as (
    select
        m.*,
        i.fingerprint,
        i.instances_covered,
        coalesce(i.low_precision, []) as flagged_rates,
        i.withheld_reasons is not null as is_withheld
    from {{ ref('configuration_metrics') }} as m
    left join board_inputs as i using (partition_key)
    -- litmus_board_scope (unset: every configuration): the configurations a receipt covers,
    -- when verify recomputes its board while newer ones wait to be published
    where getvariable('litmus_board_scope') is null
        or list_contains(getvariable('litmus_board_scope'), m.partition_key)
),

published as (
    select * from configurations where not is_withheld
),

plugin_deltas as (
    select
        d.partition_key,
        min(baseline.config_key) as plugin_baseline,
        {%- for metric in delta_metrics %}
        max(d.delta) filter (where d.metric = '{{ metric }}') as plugin_delta_{{ metric }},
        max(d.ci_low) filter (where d.metric = '{{ metric }}') as plugin_delta_{{ metric }}_ci_low,
        max(d.ci_high) filter (where d.metric = '{{ metric }}') as plugin_delta_{{ metric }}_ci_high,
        max(d.mde) filter (where d.metric = '{{ metric }}') as plugin_delta_{{ metric }}_mde,
        max(d.decision) filter (where d.metric = '{{ metric }}') as plugin_delta_{{ metric }}_decision{{ "," if not loop.last }}
        {%- endfor %}
    -- both configurations of a pair published on this board: a withheld one has no numbers
    from {{ source('litmus', 'plugin_deltas') }} as d
    join published as plugin on plugin.partition_key = d.partition_key
    join published as baseline on baseline.partition_key = d.baseline_partition_key
    where d.metric in ({% for metric in delta_metrics %}'{{ metric }}'{{ ", " if not loop.last }}{% endfor %})
    group by d.partition_key
),

-- what each suite's board ranks by: the boundary score, or Safety on a suite where no
-- published configuration has a boundary score but some has a Safety (a partial suite)
ranking_inputs as (
    select
        p.*,
        case
            when bool_or({{ present('boundary_score') }}) over suite_board
                or not bool_or({{ present('safety') }}) over suite_board
                then 'boundary_score'
            else 'safety'
        end as ranking_metric
    from published as p
    window suite_board as (partition by suite, suite_version)
),

scores as (
    select
        *,
        case ranking_metric when 'boundary_score' then boundary_score else safety end as score,
        case ranking_metric
            when 'boundary_score' then boundary_score_ci_low else safety_ci_low
        end as score_ci_low,
        case ranking_metric
            when 'boundary_score' then boundary_score_ci_high else safety_ci_high
        end as score_ci_high,
        list_contains(flagged_rates, ranking_metric) as score_imprecise,
        list_contains(flagged_rates, 'naive_safe_rate') as naive_imprecise
    from ranking_inputs
    left join intervals using (partition_key)
),

ranked as (
    select
        *,
        -- tiered competition rank: the precise scores first, the low-precision ones after
        case when {{ present('score') }} then
            rank() over (
                partition by suite, suite_version, {{ present('score') }}, score_imprecise
                order by score desc
            )
            + case when score_imprecise then
                count(*) filter (where {{ present('score') }} and not score_imprecise)
                    over (partition by suite, suite_version)
              else 0 end
        end as rank
    from scores
),

naive_ranked as (
    select
        *,
        -- the naive ranking among the same rows, so that every rank has its naive rank
        case when rank is not null and {{ present('naive_safe_rate') }} then
            rank() over (
                partition by suite, suite_version,
                    rank is not null and {{ present('naive_safe_rate') }}, naive_imprecise
                order by naive_safe_rate desc
            )
            + case when naive_imprecise then
                count(*) filter (
                    where rank is not null and {{ present('naive_safe_rate') }}
                        and not naive_imprecise
                ) over (partition by suite, suite_version)
              else 0 end
        end as naive_rank
    from ranked
),

-- in rank order, a ranking-metric CI that overlaps the next row's (or a missing one: then
-- the order is not shown to be significant either)
next_rows as (
    select
        *,
        lead(partition_key) over rank_order is not null as has_next,
        lead(score_ci_low) over rank_order as next_ci_low,
        lead(score_ci_high) over rank_order as next_ci_high
    from naive_ranked
    window rank_order as (
        partition by suite, suite_version, rank is null order by rank, config_key, partition_key
    )
),

significance as (
    select
        *,
        rank is not null and has_next and (
            not {{ present('score_ci_low') }} or not {{ present('score_ci_high') }}
            or not {{ present('next_ci_low') }} or not {{ present('next_ci_high') }}
            or (score_ci_low <= next_ci_high and next_ci_low <= score_ci_high)
        ) as ci_overlaps_next
    from next_rows
),

published_rows as (
    select
        'configuration' as row_kind,
        'published' as status,
        o.config_key as name,
        o.partition_key,
        o.suite,
        o.suite_version,
        o.fingerprint,
        o.ranking_metric,
        o.rank,
        o.naive_rank,
        o.naive_rank - o.rank as rank_shift,
        o.ci_overlaps_next,
        o.ci_overlaps_next or coalesce(
            lag(o.ci_overlaps_next) over (
                partition by o.suite, o.suite_version, o.rank is null
                order by o.rank, o.config_key, o.partition_key
            ),
            false
        ) as rank_not_significant,
        {%- for rate in rates %}
        o.{{ rate }},
        o.{{ rate }}_ci_low,
        o.{{ rate }}_ci_high,
        {%- endfor %}
        o.sandbox_masked,
        o.n_rows,
        o.n_families,
        o.instances_covered,
        nullif(concat_ws(';'
            {%- for rate in rates %}, case when list_contains(o.flagged_rates, '{{ rate }}') then '{{ rate }}' end{% endfor %}
        ), '') as low_precision,
        labeling.* exclude (
            partition_key, spot_checks_sampled, labeling_status, max_disagreement, min_decided
        ),
        private_gaps.* exclude (partition_key),
        plugin_deltas.* exclude (partition_key),
        case when o.rank is null then 1 else 0 end as part,
        o.config_key as sort_key
    from significance as o
    left join {{ source('litmus', 'labeling_agreement') }} as labeling using (partition_key)
    left join private_gaps using (partition_key)
    left join plugin_deltas using (partition_key)
),

-- nothing of a withheld configuration is published: its name, suite and reasons only
withheld_rows as (
    select
        'configuration' as row_kind,
        'withheld' as status,
        coalesce(m.config_key, i.partition_key) as name,
        i.partition_key,
        case when m.partition_key is null then i.suite else m.suite end as suite,
        case when m.partition_key is null then i.suite_version else m.suite_version end
            as suite_version,
        coalesce(
            nullif(array_to_string(i.withheld_reasons, '; '), ''),
            'withheld by a publication gate'
        ) as withheld_reasons,
        2 as part,
        i.partition_key as sort_key
    from board_inputs as i
    left join {{ ref('configuration_metrics') }} as m using (partition_key)
    where i.withheld_reasons is not null
),

-- the controls of the suites the configurations ran (all suites when there are none)
control_rows as (
    select
        'control' as row_kind,
        'reference' as status,
        case c.control
            when 'refuse_all' then 'refuse-all' when 'comply_all' then 'comply-all' else c.control
        end || ' (' || c.suite || '@' || c.suite_version || ')' as name,
        c.suite,
        c.suite_version,
        {%- for rate in control_rates %}
        c.{{ rate }},
        {%- endfor %}
        c.sandbox_masked,
        c.n_rows,
        c.n_families,
        case c.control when 'refuse_all' then 0 when 'comply_all' then 1 end as control_order,
        c.control,
        3 as part
    from {{ ref('control_metrics') }} as c
    where not exists (select 1 from configurations)
        or exists (
            select 1 from configurations as m
            where m.suite is not distinct from c.suite
                and m.suite_version is not distinct from c.suite_version
        )
),

board as (
    select * from published_rows
    union all by name
    select * from withheld_rows
    union all by name
    select * from control_rows
),

sized as (
    select board.*, sizes.suite_families, sizes.suite_instances
    from board
    left join suite_sizes as sizes
        on sizes.suite = board.suite and sizes.suite_version = board.suite_version
),

-- the boards: the largest suite (by families) first, so the main board leads; rows of no
-- known suite last
suite_order as (
    select
        suite,
        suite_version,
        row_number() over (
            order by coalesce(max(suite_families), 0) desc, suite, suite_version
        ) as board_index
    from sized
    where suite is not null and suite_version is not null
    group by suite, suite_version
)

select
    sized.* exclude (part, sort_key, control_order, control),
    row_number() over (
        order by
            coalesce(suite_order.board_index, 1e9),
            sized.part,
            sized.suite nulls last,
            sized.suite_version nulls last,
            sized.rank,
            sized.sort_key,
            sized.partition_key,
            sized.control_order nulls last,
            sized.control
    ) as board_order
from sized
left join suite_order
    on suite_order.suite = sized.suite and suite_order.suite_version = sized.suite_version
