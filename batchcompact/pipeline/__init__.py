"""The pipeline around the pure core: planning many files, running compactions, writing, verifying."""
