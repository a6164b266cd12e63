"""Train/test leakage audit over TCGA slide inventories: overlap matrix, leak partitions, stratified metrics."""
