"""``pathbind view``: a static site over runs' sample logs, one card per item, two models side by side, with a
reviewer's column exported as CSV (read back by ``pathbind view --reviews``)."""
