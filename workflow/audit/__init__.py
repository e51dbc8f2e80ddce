"""The audit's experiments on the paper's own models, made of the library's statistics and attacks (``dirdp.audit``):

- :mod:`workflow.audit.first_layer`: the exact final-model test on the paper's Inception with BatchNorm (a zero record
  never moves the bias-free first convolution nor the first running mean), each trial a real Algorithm-1 training,
  its trials kept as JSON lines and resumed;
- :mod:`workflow.audit.subspace` (with :mod:`~workflow.audit.subspace_setup` and :mod:`~workflow.audit.subspace_rows`):
  the white-box subspace canary test of Algorithm 1 on the paper's model families: the update's residual outside the
  span of D's logit Jacobians;
- :mod:`workflow.audit.claims`: the claim each audit row faces, for the row's own neighbouring relation, and its verdict;
- :mod:`workflow.audit.released`: each released model's membership row kept in a record beside its run
  (``python -m workflow membership``).
"""
