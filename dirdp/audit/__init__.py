"""Auditing the released model: does it keep the promised epsilon? (issue: privacy audit)

Section 3.3 of the paper argues that "backpropagation uses only E_B and not D_B", so that the
parameter update is post-processing of the Dirichlet samples and the trained model inherits their
Theorem-10 guarantee. The parameter gradient of the loss is

    d(-log p~_y)/d theta = (d loss / d p~)(d p~ / d eta) r (d s / d z)(d z / d theta),

and d z / d theta is evaluated at the private input x. The update is therefore a function of the
Dirichlet sample *and* of x: not post-processing. This package measures what that means.

- :mod:`dirdp.audit.stats`: Clopper-Pearson limits and :func:`epsilon_lower_bound`, the
  distinguishing audit of Jagielski et al. (2020) / Nasr et al. (2021). Any (eps, delta)-DP
  mechanism and any test T satisfy FPR + e^eps FNR >= 1 - delta and FNR + e^eps FPR >= 1 - delta,
  so eps >= max(ln((1 - delta - FNR)/FPR), ln((1 - delta - FPR)/FNR)). With FPR and FNR replaced by
  Clopper-Pearson upper confidence limits the bound holds with the stated confidence. Also the
  held-out threshold (:func:`audit_threshold`) and ROC summaries (:func:`roc_at`).
- :mod:`dirdp.audit.attacks`: :func:`reconstruct_dense_first_layer` (for a model whose first layer
  is dense, W1 x + b1, one update on one example gives Delta W1[j] = c_j x^T and Delta b1[j] = c_j
  for every hidden unit j, same scalar c_j whatever the loss, so x = Delta W1[j] / Delta b1[j]
  exactly, whatever the Dirichlet sample was), gradient inversion by optimisation (Geiping et al.
  2020, :func:`invert_gradients`) scored by PSNR and SSIM after matching the batch's order
  (:func:`match_to_truth`), and the loss-threshold attack (:func:`loss_threshold_attack`).
- :mod:`dirdp.audit.inversion`: the reconstruction experiments (:func:`dense_reconstruction`,
  :func:`inversion_experiment`) on one step of Algorithm 1 or DP-SGD at the same claimed eps.
- :mod:`dirdp.audit.canary`: :func:`canary_audit` runs the distinguishing audit on many trainings
  of a linear model with and without a canary (Algorithm 1, DP-SGD; the vectorised toy trainer
  :func:`train_linear_trials`), :func:`latent_audit` on LATENT's local-DP release.
- :mod:`dirdp.audit.control`: the control with power, DP-SGD audited with the every-update likelihood-ratio test
  (:func:`~dirdp.audit.control.dpsgd_control`) against its own epsilon (exact at q = 1, T = 1; PRV otherwise).
- :mod:`dirdp.audit.batchnorm`: the BatchNorm channel, outside the Dirichlet mechanism: one record's influence on
  the other records' releases (Renyi divergence of Dirichlets) and what the running statistics carry.
- :mod:`dirdp.audit.membership`: black-box membership inference (Yeom et al. 2018), AUC and TPR
  at low FPR (:func:`membership_experiment`, :func:`released_model_mia`), and the fingerprint of the code that makes
  a released model's row (:func:`~dirdp.audit.membership.code_sha256`).
"""

from dirdp.audit.attacks import (invert_gradients, logit_grad_from_update, loss_threshold_attack, match_to_truth, mlp,
                                 psnr, reconstruct_dense_first_layer, ssim)
from dirdp.audit.canary import (AUDIT_GRID, CANARY_MODEL, CanaryProblem, canary_audit, canary_problem, latent_audit,
                                never_sampled_bound, train_linear_trials)
from dirdp.audit.inversion import dense_reconstruction, inversion_experiment
from dirdp.audit.membership import membership_experiment, released_model_mia
from dirdp.audit.stats import (EpsilonLowerBound, audit_threshold, clopper_pearson, dp_auc_bound, epsilon_lower_bound,
                               roc_at)

__all__ = [
    "AUDIT_GRID", "CANARY_MODEL", "CanaryProblem", "EpsilonLowerBound", "audit_threshold",
    "canary_audit", "canary_problem", "clopper_pearson", "dense_reconstruction", "dp_auc_bound", "epsilon_lower_bound",
    "inversion_experiment", "invert_gradients", "latent_audit", "logit_grad_from_update", "loss_threshold_attack",
    "match_to_truth", "membership_experiment", "mlp", "never_sampled_bound", "psnr", "reconstruct_dense_first_layer",
    "released_model_mia", "roc_at", "ssim", "train_linear_trials",
]
