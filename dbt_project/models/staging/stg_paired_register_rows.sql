-- Trajectories that take part in a register comparison: the request has a pair_id and a
-- register, and the configuration answered the pair in at least two registers.
with register_pairs as (
    select partition_key, pair_id
    from {{ ref('stg_trajectory_flags') }}
    where pair_id is not null and register is not null
    group by partition_key, pair_id
    having count(distinct register) >= 2
)

select flags.*
from {{ ref('stg_trajectory_flags') }} as flags
inner join register_pairs
    on flags.partition_key = register_pairs.partition_key
    and flags.pair_id = register_pairs.pair_id
where flags.register is not null
