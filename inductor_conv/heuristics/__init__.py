"""Tile tables and launch geometry, shared by the eager launchers (``inductor_conv/kernels/``) and the Inductor
lowerings (``lowerings/``), which both import them: pure Python and torch, no Triton and no Inductor import.

``attention``: forward / backward tiles by dtype, head dim, causal and dropout, and where the template pays.
``conv``: the causal conv1d tiles by direction and layout, and the geometry (channels, lanes, rows, chunks of L) a
tile resolves to for one call.
``table_grad``: which small tables' lookups get their gradient summed per row instead of by atomic adds.
"""
