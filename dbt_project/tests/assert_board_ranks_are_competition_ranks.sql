-- Every board's ranks are competition ranks ("1224") of its published configurations: they
-- start at 1, a rank is only ever a published configuration's, and the shift is naive − rank.
with ranked as (
    select * from {{ ref('leaderboard_rows') }} where rank is not null
)
select suite, suite_version, 'does not start at 1' as problem
from ranked group by suite, suite_version having min(rank) <> 1
union all
select suite, suite_version, 'rank of a row that is not published'
from ranked where status <> 'published'
union all
select suite, suite_version, 'rank_shift is not naive_rank − rank'
from ranked where rank_shift is distinct from naive_rank - rank
union all
select suite, suite_version, 'more rows ahead than its rank says'
from ranked as r
where rank - 1 <> (
    select count(*) from ranked as ahead
    where ahead.suite = r.suite and ahead.suite_version = r.suite_version
        and ahead.rank < r.rank
)
