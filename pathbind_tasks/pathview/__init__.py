"""PathView-Bench: region and slide field-of-view tasks, field-of-view traps, their scoring and the baselines."""
