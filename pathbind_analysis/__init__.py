"""PathBind's analysis of finished lmms-eval runs: reports, leakage audits, curation filters and pair tables."""
