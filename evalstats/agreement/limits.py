"""Sizes above which agreement code changes layout: the one place to tune (or patch in tests)."""

# Above these sizes the per-unit count matrix / coincidence matrix would not fit comfortably in
# memory as dense arrays, so sparse forms are used instead.
DENSE_CELLS = 1 << 24
DENSE_VALUES = 1024
# Elements of one chunk of bootstrap resamples (resamples x patterns): bounds peak memory.
CHUNK_ELEMENTS = 1 << 22
