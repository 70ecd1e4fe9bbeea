"""Where the gradient of a small table's lookup is summed per row instead of added element by element (Note [small
table gradients] in patterns/table_grad.py).

Inductor compiles an embedding's backward as one atomic add per looked-up element.  Adds to one address are
serialised, and when a warp's lanes share an address -- a row narrower than a warp (T5's relative-position bias: 32
buckets x 8 heads, a row of 8 floats in one 32-byte sector) or a few rows that every index hits -- they all queue on
it.  Summing per row reads the gradient once for each row of the table, with no atomics: its cost grows with the
rows, the atomics' with how much the lanes collide.

Measured (H100, 2026-12-06, torch 2.11, `python benchmarks/diagnostics/bucket_bias_grad.py`, GPU ms, atomic adds
against the sum per row): T5's encoder bias (32 buckets x 8 heads, B8 S512, two layers) 2.181 / 0.098; its decoder's
(S256) 0.411 / 0.024; BERT's token types (2 rows x 768, B8 S512) 0.041 / 0.009; WavLM's (320 buckets x 12 heads,
B16 S249) 0.160 / 0.395; 64 rows x 768 at random indices (B8 S512) 0.008 / 0.054.  So: rows of fewer than 32
elements in a table of at most 64 rows (the lanes of a warp collide, and 64 reads of the gradient stay cheaper than
the queue: T5), or a table of at most 2 rows (whatever the width: BERT's token types); wide rows of bigger tables
and tables of hundreds of rows keep the atomics.  Not measured: a table of narrow rows looked up per token at
scattered indices with each row's elements side by side in the gradient (a per-token table of fewer than 32
features), where consecutive lanes add to neighbouring addresses and the atomics may win; no model seen here has one.
"""
MAX_ROWS = 64  # rows of a table whose narrow rows are summed
NARROW_ROW = 32  # elements: a row narrower than a warp's 32 lanes
FEW_ROWS = 2  # tables of at most this many rows are summed at any width


def sum_per_row(rows: int, row_elements: int) -> bool:
    """Whether a table of `rows` rows of `row_elements` elements gets its gradient summed per row."""
    return rows <= FEW_ROWS or (rows <= MAX_ROWS and row_elements < NARROW_ROW)
