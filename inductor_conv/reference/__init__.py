"""Float64 references: the math every kernel is tested against."""
