"""Baselines run here, not cited: DP-SGD with Opacus (:mod:`dirdp.baselines.dpsgd`; with the
tempered-sigmoid CNN of Papernot et al. 2021 for the "tempered" method) and LATENT local DP
(:mod:`dirdp.baselines.latent`, Chamikara et al.)."""
