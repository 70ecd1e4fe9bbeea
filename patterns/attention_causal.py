"""PLACEHOLDER (lead): turn provably lower-triangular attention masks into is_causal=True. Helper H5 fills it in."""


def infer_causal(graph) -> int:
    return 0
