"""LATENT (Chamikara et al., "Local Differential Privacy for Deep Learning", arXiv:1908.02997, IEEE
IoT-J 2019): a local-DP baseline, run here, with an exact audit of the guarantee it claims.

Pipeline (Algorithm 1 of the paper)::

    image --conv module (data owner, untrained, frozen)--> k features
          --LATENT layer (data owner)-->  z-score -> binary encoding -> merge -> randomize (UER)
          --> one randomized bit string of length L = k * (1 + m + n) per record   (the LDP release)
          --> fully connected module trained by the untrusted service on the strings.

The guarantee LATENT claims is *local* DP per record: the bit string released for one record is
said to be eps-LDP (any two inputs are neighbours). That is a different promise from the central
(eps, delta)-DP of the rest of this package, which bounds what a trained model reveals about one
training example. No accounting is needed for the FC module: it is post-processing of the release.

Binary encoding (Sec. III-A of the paper): each value gets 1 sign bit (1 = negative), ``m`` bits for
the whole part and ``n`` bits for the fraction. Here value v is clipped to the representable range
|v| <= 2**m - 2**-n and its magnitude truncated to the grid 2**-n (the fraction digits of |v|), so

    code = floor(min(|v|, 2**m - 2**-n) * 2**n),   bits = [v < 0] ++ binary(code, m + n bits, MSB first).

The bit strings of a record's k values are concatenated in feature order (value-major).

Randomization. With L the string length, eps' = eps / S the budget per bit, S the sensitivity
(the paper: S = r * l, the whole merged string, "eps divided by the sensitivity for each bit",
following RAPPOR), and alpha the privacy-budget coefficient, each bit is kept or flipped
independently with

  ========  ==============================  ===============================
  name      Pr[out = 1 | in = 1]            Pr[out = 1 | in = 0]
  ========  ==============================  ===============================
  ``rr``    e^eps' / (1 + e^eps')           1 / (1 + e^eps')     (Warner's randomized response)
  ``oue``   1/2                             1 / (1 + e^eps')     (OUE, Wang et al. 2017)
  ``moue``  1 / (1 + alpha)                 1 / (1 + alpha e^eps')   (MOUE)
  ``uer``   group A: alpha / (1 + alpha)    1 / (1 + alpha e^eps')   (UER, the paper's choice)
            group B: 1 / (1 + alpha**3)     1 / (1 + alpha e^eps')
  ========  ==============================  ===============================

For UER, group A is the positions i in 2N and group B the positions i in 2N + 1 (``split="parity"``,
0-based; the default), or the first and second half of the string (``split="halves"``).

Sources and what is ours
------------------------
* The paper's text was not retrievable through this project's search tool. The MOUE/UER
  probabilities above are those of two independent public implementations which agree with each
  other: a LATENT reproduction (``LATENTModel.py`` of a repository whose README says it reproduces
  "Local Differential Privacy for Deep Learning (IOTJ 2019)") and a file from an LDP energy-data
  project whose ``randomize`` is marked as code from the authors' follow-up LDPFL paper; both use
  alternating (even/odd) positions and eps / S per bit with S = the string length. The seed summary
  (``shared/seeds/004_*``) says "two randomization models across different halves"; we read the
  paper's "i in 2n / i in 2n + 1" as parity and offer ``split="halves"`` for the other reading.
* Sensitivity: S = L = r * l (summary, Appendix E: "sensitivity r x l, eps divided by the
  sensitivity for each bit"). ``sensitivity=`` overrides it.
* z-score (paper: "z-score normalization of the flattened 1-D inputs", statistics not specified):
  per record, over that record's own k features (population std, floor ``std_floor``), so that a
  data owner needs no statistic of anybody else's data (otherwise the release is not local).
* Bit widths (paper's MNIST setup: 10 bits per value, split not stated in the summary): defaults
  ``int_bits=2, frac_bits=7`` -> 10 bits, range |z| < 4 and step 2**-7.
* alpha (paper: MNIST headline at eps = 0.5 with alpha > 5; its eps sweep uses alpha = 7): 7.
* Conv module: the data owner's module "remains untrained" (summary, Sec. III-C): random
  initialisation, frozen, eval mode. The paper's MNIST flatten layer has 9,216 outputs
  (= 64 x 12 x 12, the Keras MNIST CNN: conv3x3/32 -> conv3x3/64 -> maxpool 2), reachable with
  ``conv_module(1, **PAPER_MNIST_CONV)``; the CPU default pools 4x4 with (16, 32) channels:
  1,152 features, L = 11,520 bits for 28x28 inputs. Pass any frozen module to use another.
* FC module: Linear(L, hidden) -> ReLU -> Dropout -> Linear(hidden, classes), hidden 128 and dropout
  0.5 as the Keras MNIST CNN's dense head; Adam (or SGD) on minibatches drawn without replacement.
* Test records: randomized exactly like training records (``randomize_test=True``; the LATENT layer
  is part of the released DPCNN's input path and every record is some data owner's). False feeds
  the un-randomized bit strings instead.
* Each record is randomized once (a single local release); epochs reuse the same strings.

Audit: what the UER guarantee actually is
-----------------------------------------
LDP needs, for every two inputs x, x' and every output y, Pr[y | x] <= e^eps Pr[y | x']. Bits are
randomized independently, so the worst case over all strings of length L is exactly

    eps_worst = sum_i max( |ln p_i - ln q_i|, |ln(1 - p_i) - ln(1 - q_i)| ),

p_i = Pr[1 | 1], q_i = Pr[1 | 0] at position i (:meth:`BitProbabilities.worst_case_epsilon`;
:func:`pair_epsilon` gives the exact loss between two given strings). For ``rr`` this equals eps,
for ``oue`` and ``moue`` it is <= eps: those are eps-LDP. For ``uer`` with alpha > 1 the per-bit
loss tends to ln(alpha) (group A) and ln((1 + alpha**3)/(1 + alpha)) ~ 2 ln(alpha) (group B) as
eps' -> 0: it does not shrink with eps, so eps_worst ~ 1.5 L ln(alpha) whatever eps is claimed
(about 3.3e4 for the default L = 11,520 and alpha = 7, against a claimed eps of, e.g., 0.5). Only at
alpha = 1 (where UER is OUE) does the claimed bound hold. Not every string encodes some record, so
over real records the loss can only be smaller; :func:`pair_epsilon` gives it exactly for two given
records. Results therefore carry ``eps_claimed``, ``eps_ldp_worst_case`` and ``eps_pair_median``
(the median exact loss between pairs of actual training records).
"""

from dirdp.baselines.latent.config import MECHANISMS, PAPER_MNIST_CONV, SPLITS, LatentConfig
from dirdp.baselines.latent.encoding import (binary_decode, binary_encode, cfg_probabilities, conv_module,
                                             conv_module_default, encode_dataset, latent_bits, max_representable,
                                             zscore)
from dirdp.baselines.latent.randomizer import (BitProbabilities, pair_epsilon, randomize, uer,
                                               uer_probabilities)
from dirdp.baselines.latent.service import fc_module, train_latent

__all__ = ["MECHANISMS", "PAPER_MNIST_CONV", "SPLITS", "LatentConfig", "binary_decode", "binary_encode",
           "cfg_probabilities", "conv_module", "conv_module_default", "encode_dataset", "latent_bits",
           "max_representable", "zscore", "BitProbabilities", "pair_epsilon", "randomize", "uer",
           "uer_probabilities", "fc_module", "train_latent"]
