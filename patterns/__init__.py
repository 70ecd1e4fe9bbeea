"""Inductor pattern-matcher passes that rewrite eager code into inductor_conv's custom ops.

``graph_pass`` is the one ``joint_custom_pre_pass`` (a CustomGraphPass); each capability's module
(``causal_conv1d_silu``, ``attention``) registers its search/replace pairs into it.
"""
