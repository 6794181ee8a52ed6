"""What must run, and why: the one plan every driver carries out, the per-configuration status it is
computed from, and the state a finished run left."""
