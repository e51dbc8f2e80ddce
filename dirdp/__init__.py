"""dirdp: reproduction and audit of "End-to-End Differential Privacy in Training Deep Neural
Network Classifiers" (Rao, Hawkins, Benvenuti, Hale, 2026).

- :mod:`dirdp.accountant`: Lemma 9, Theorem 10, Lemma 13, h(r) and r* of Eq. (1)
- :mod:`dirdp.mechanism`: Mechanism 8 and the loss of Algorithm 1
- :mod:`dirdp.theory`: Theorem 11 (kappa, E[loss], Var[loss]) and Appendix C.1
- :mod:`dirdp.presets`: the protocols of Section 4.1.2
"""

__version__ = "0.1.0"
