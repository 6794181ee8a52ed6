-- SPEC §6: refuse-all and comply-all must both land at boundary score 0 on every suite that
-- has the hard_benign and covert_malicious splits (elsewhere the score is NULL, not available).
select suite, suite_version, control, boundary_score
from {{ ref('control_metrics') }}
where boundary_score is distinct from 0
  and (hb_utility is not null and cm_safety is not null)
