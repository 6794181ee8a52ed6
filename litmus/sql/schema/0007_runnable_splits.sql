-- runnable splits (issue 43): the splits a configuration on a suite is run on, as the suite
-- file declares them (litmus.formats.Suite.runnable_splits); NULL: every split the suite
-- holds. The coverage gate counts against the instances of these splits
-- (litmus.gates.publication_gates).
ALTER TABLE suites ADD COLUMN IF NOT EXISTS runnable_splits VARCHAR[];
