"""Building, validating and measuring the suite: task build, validate, figures, asset fetch, panel extraction, benchmarks."""
