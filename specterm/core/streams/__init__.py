"""The measurement of streams: the block walk, run geometry, per-stream statistics, steady state, position, sampling, bootstrap."""
