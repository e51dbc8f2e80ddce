"""Write notebooks/audit_privacy.ipynb and notebooks/audit_released_models.ipynb (stable cell ids).

The notebooks are thin: all logic is in ``dirdp.audit``. Rerun after editing a cell here:
``python scripts/make_audit_notebooks.py``.
"""

from pathlib import Path

import nbformat as nbf

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"
cells = []


def md(s, i):
    cells.append(nbf.v4.new_markdown_cell(s, id=i))


def code(s, i, tags=None):
    c = nbf.v4.new_code_cell(s, id=i)
    if tags:
        c.metadata["tags"] = tags
    cells.append(c)


md("""# Privacy audit: does the released model keep the promised epsilon?

Section 3.3 of the paper argues that backpropagation "uses only E_B and not D_B", so the parameter update is
post-processing of the Dirichlet samples. But the update is
d(-log p~_y)/d theta = (d loss / d p~)(d p~ / d eta) r (d s / d z)(d z / d theta), and d z / d theta is evaluated at
the private input x: the update is a function of the sample *and* of x. This notebook measures what that means,
with the same tests applied to DP-SGD (Opacus' calibration for the same claimed epsilon) and LATENT (local DP):

1. **Exact reconstruction**: one Algorithm-1 step on a 784-100-10 MLP gives back each private MNIST image from the
   first layer's update (x = Delta W1[j] / Delta b1[j]); then gradient inversion (Geiping et al. 2020) on the
   paper's MNIST model (small Inception at the profile's width), batch sizes 1, 8, 32, with DP-SGD as control.
2. **Canary distinguishing audit** (Jagielski et al. 2020; Nasr et al. 2021): many trainings with and without
   a canary, a threshold chosen on one half of the trials, FPR/FNR measured on the other half, turned into an
   epsilon lower bound with Clopper-Pearson 95% limits (`dirdp.audit.epsilon_lower_bound`).
3. **Membership inference, black box**: loss-threshold attack (Yeom et al. 2018) on models trained by
   Algorithm 1, DP-SGD and non-privately at matched claimed epsilon, and on the models the DAG released.

Parameters below are small defaults (CI); the DAG passes each profile's `audit:` section.""", "intro")
code("""profile = "smoke"        # label only
results_dir = None       # None: a scratch folder (interactive use, nbval); the DAG passes results/
figures_dir = None
seed = 0
delta = 1e-5
claimed_eps = 1.0
canary = {"trials": 40, "settings": [[0.005, 200]], "n_dprime": 10}
latent_trials = 40
reconstruction_images = 8
inversion = {"batch_sizes": [1], "attack_steps": 20, "models": [["inception", 0.25], ["papernot_cnn", 1.0]]}
membership = {"members": 200, "q": 0.05, "steps": 40}""", "params", tags=["parameters"])
code("""import math
import tempfile
import time
from pathlib import Path

import matplotlib.pyplot as plt
import pandas as pd
import torch

from dirdp import audit, provenance
from dirdp.data import Split, load
from dirdp.mechanism import dirichlet_nll
from dirdp.models import build_model

results_dir = Path(results_dir or tempfile.mkdtemp(prefix="dirdp-results-"))
figures_dir = Path(figures_dir or tempfile.mkdtemp(prefix="dirdp-figures-"))
results_dir.mkdir(parents=True, exist_ok=True)
figures_dir.mkdir(parents=True, exist_ok=True)
params = dict(profile=profile, seed=seed, delta=delta, claimed_eps=claimed_eps, canary=canary,
              latent_trials=latent_trials, reconstruction_images=reconstruction_images, inversion=inversion,
              membership=membership)
t_start = time.perf_counter()
train_split, test_split = load("mnist", "train"), load("mnist", "test")
pd.set_option("display.width", 200)""", "setup")
md("""## 1. Reconstruction from one update

**Dense first layer (exact).** One Algorithm-1 step at the paper's eps = 1 MNIST parameters (alpha = 3,
r* for q = 0.005, T = 20000 is 0.2349; here r* of Eq. (1) is recomputed) on one real image: for every hidden unit j,
Delta W1[j] = c_j x and Delta b1[j] = c_j, whatever the Dirichlet sample was.""", "recon-md")
code("""from dirdp import accountant

r_paper = accountant.rstar(eps=claimed_eps, alpha=3.0, q=0.005, steps=20000, delta=delta)
rows = []
found, truth = [], []
for i in range(reconstruction_images):
    torch.manual_seed(seed + i)
    net = audit.mlp()
    x, y = test_split.x[i:i + 1], test_split.y[i:i + 1]
    before = [p.detach().clone() for p in net.parameters()]
    loss = dirichlet_nll(net(x), y, r=r_paper, alpha=3.0, generator=torch.Generator().manual_seed(seed + i))
    loss.backward()
    with torch.no_grad():
        for p in net.parameters():
            p -= 0.1 * p.grad
    dW, db = (p.detach() - b for p, b in list(zip(net.parameters(), before))[:2])
    x_hat = audit.reconstruct_dense_first_layer(dW, db).view_as(x)
    found.append(x_hat); truth.append(x)
    rows.append(dict(attack="dense first layer, analytic", model="MLP 784-100-10", method="alg1", image=i,
                     batch_size=1, claimed_eps=claimed_eps, rstar=r_paper,
                     max_rel_error=float((x_hat - x).abs().max() / x.abs().max()),
                     psnr=float(audit.psnr(x_hat, x)), ssim=float(audit.ssim(x_hat, x))))
dense = pd.DataFrame(rows)
print(f"r* = {r_paper:.4f}; relative error over {len(dense)} images: median {dense.max_rel_error.median():.2e}, "
      f"max {dense.max_rel_error.max():.2e}")""", "recon-dense")
md("""**Gradient inversion on convolutional models**: the paper's MNIST model (small Inception at the profile's
width, BatchNorm + ReLU) and Papernot et al.'s tanh CNN, freshly initialised (the first step of training). The attacker optimises the batch and, for batches > 1, the unknown
per-example logit gradients (they hold the Dirichlet samples); for one example the logit gradient is read from
the last bias's update. DP-SGD (calibrated by Opacus for the same claimed eps, q, T) is the control.""", "inv-md")
code("""n_inv = sum(inversion["batch_sizes"])
images, labels = test_split.x[100:100 + n_inv], test_split.y[100:100 + n_inv]
inv_rows, pictures = [], {}
for name, width in inversion["models"]:
    model_fn = lambda: build_model(name, num_classes=10, in_channels=1, width=width)  # noqa: E731
    label = f"{name} ({width:g}x width)" if name == "inception" else name
    for method in ("alg1", "dpsgd"):
        rows_, pics = audit.inversion_experiment(model_fn, images, labels, method=method, eps=claimed_eps, delta=delta,
                                                 batch_sizes=inversion["batch_sizes"],
                                                 attack_steps=inversion["attack_steps"], seed=seed)
        inv_rows += [dict(r_, model=label, attack="gradient inversion (Geiping et al. 2020)") for r_ in rows_]
        pictures[(label, method)] = pics
inv = pd.DataFrame(inv_rows)
print(inv[["model", "method", "batch_size", "psnr_mean", "psnr_median", "ssim_mean", "ssim_median", "logit_gradient",
           "attack_steps", "wall_time_s"]].to_string(index=False))""", "inv-run")
code("""ncol = min(8, reconstruction_images)
rows_fig = [("truth", torch.cat(truth)[:ncol]), ("MLP, analytic (Alg. 1)", torch.cat(found)[:ncol])]
for b in inversion["batch_sizes"]:
    rows_fig.append((f"truth, batch {b}", images[sum(inversion["batch_sizes"][:inversion["batch_sizes"].index(b)]):][:min(b, ncol)]))
    for (label, method), pics in pictures.items():
        rows_fig.append((f"{label}, inversion, {method}, batch {b}", pics[b][1][:ncol]))
fig, axes = plt.subplots(len(rows_fig), ncol, figsize=(1.2 * ncol, 1.3 * len(rows_fig)), squeeze=False)
for r_i, (label, ims) in enumerate(rows_fig):
    for c in range(ncol):
        ax = axes[r_i, c]
        ax.axis("off")
        if c < len(ims):
            ax.imshow(ims[c, 0].numpy(), cmap="gray")
    axes[r_i, 0].set_title(label, fontsize=7, loc="left")
fig.suptitle(f"Reconstruction from one update at claimed eps = {claimed_eps:g} (profile '{profile}')", fontsize=9)
fig.tight_layout()
fig.savefig(figures_dir / "audit_reconstruction.png", dpi=120)
plt.show()
recon = pd.concat([dense, inv], ignore_index=True)
print("wrote", provenance.write_csv(recon, results_dir / "audit_reconstruction.csv", provenance.collect(params, seed=seed)))""", "inv-fig")
md("""## 2. Canary audit: empirical lower bounds on epsilon

D' = `n_dprime` real MNIST records (7x7 average-pooled) whose border cells are background; D = D' plus a canary
whose border carries a +-3 checkerboard (orthogonal to every record of D'). Softmax regression from zero, float64.
Statistics: `final` = ||(W_T - W_0) u|| (the released model, white box) and `sequence` = max_t ||Delta W_t u||
(the sequence of updates). Each method is set to the same claimed eps by its own accountant.""", "canary-md")
code("""problem = audit.canary_problem(train_split, n=canary["n_dprime"], seed=seed)
audit_rows = []
for q, T in canary["settings"]:
    for method in ("alg1", "dpsgd"):
        audit_rows += audit.canary_audit(problem, method=method, q=q, steps=T, eps=claimed_eps,
                                         trials=canary["trials"], delta=delta, seed=seed)
# LATENT: its promise is local DP per record, so any two records are neighbours: the canary image vs a D' image
x_a, x_b = train_split.x[0], train_split.x[1]
audit_rows.append(audit.latent_audit(x_a, x_b, eps=claimed_eps, trials=latent_trials, seed=seed))
canary_table = pd.DataFrame(audit_rows)
canary_table["ci"] = [f"FPR <= {a:.3g}, FNR <= {b:.3g}" for a, b in zip(canary_table.fpr_upper, canary_table.fnr_upper)]
canary_table["verdict"] = ["claim violated" if lb > c else "no violation found"
                           for lb, c in zip(canary_table.eps_lower_bound, canary_table.claimed_eps)]
print(canary_table[["method", "q", "T", "claimed_eps", "certified_eps", "mechanism", "statistic", "eps_lower_bound", "eps_exact_bound", "ci", "trials_per_world", "verdict", "wall_time_s"]].to_string(index=False))
print("wrote", provenance.write_csv(canary_table, results_dir / "audit_canary.csv", provenance.collect(params, seed=seed)))""", "canary-run")
code("""held = int(canary_table.held_out_per_world.max())
ceiling = audit.epsilon_lower_bound(false_positives=0, n_negatives=held, false_negatives=0, n_positives=held,
                                    delta=delta).epsilon
colors = {"alg1": "tab:blue", "dpsgd": "tab:orange", "latent": "tab:green"}
names = {"alg1": "Algorithm 1", "dpsgd": "DP-SGD (Opacus)", "latent": "LATENT (local DP)"}
fig, ax = plt.subplots(figsize=(9, 4.4))
x, group_ticks, seen = 0.0, [], set()
for (q, T), group in canary_table.groupby(["q", "T"], sort=False, dropna=False):
    first = x
    for row in group.itertuples():
        ax.bar(x, row.eps_lower_bound, width=0.8, color=colors[row.method], hatch="//" if row.statistic == "sequence" else None,
               edgecolor="white", label=None if row.method in seen else names[row.method])
        seen.add(row.method)
        ax.text(x, row.eps_lower_bound + 0.08, f"{row.eps_lower_bound:.2f}", ha="center", va="bottom", fontsize=7,
                color=colors[row.method])
        ax.text(x, -0.1, {"final": "final", "sequence": "upd."}.get(row.statistic, "LLR"), ha="center", va="top", fontsize=6)
        x += 1
    exact = group.eps_exact_bound.dropna()
    if len(exact):
        ax.text((first + x - 1) / 2, ceiling + 0.35, f"Alg. 1 exact bound: {exact.iloc[0]:.1f}", ha="center", fontsize=7,
                color=colors["alg1"])
    setting = "LATENT, one release" if group.method.iloc[0] == "latent" else f"q = {q:g}, T = {int(T):,}"
    group_ticks.append(((first + x - 1) / 2, setting))
    x += 1.5
ax.axhline(claimed_eps, color="k", ls="--", lw=1, label=f"claimed eps = {claimed_eps:g}")
ax.axhline(ceiling, color="grey", ls=":", lw=1, label=f"most {held} held-out trials per world can show ({ceiling:.2f})")
ax.set_xticks([t for t, _ in group_ticks], [s for _, s in group_ticks], fontsize=8)
ax.tick_params(axis="x", pad=14, length=0)
ax.set_ylim(0, ceiling + 2.2)
ax.set_ylabel("empirical eps lower bound (95%)")
ax.set_title(f"Claimed eps vs what an audit proves ({canary['trials']} trials per world, profile '{profile}')\\n"
             "final: the released model; upd. (hatched): the sequence of updates; LLR: LATENT's likelihood ratio",
             fontsize=8)
ax.legend(fontsize=7, loc="upper center", ncol=3)
fig.tight_layout()
for ext in ("png", "pdf"):
    fig.savefig(figures_dir / f"audit_eps_claimed_vs_lower_bound.{ext}", dpi=150)
plt.show()""", "canary-fig")
md("""## 3. Membership inference (black box)

A Papernot CNN trained on `members` MNIST records only, at matched claimed eps (Algorithm 1 at r*, DP-SGD
calibrated by Opacus, and non-private cross-entropy), the same q, T and lr; the loss-threshold attack scores
each record by -CE of its true label. The same attack on every model the DAG released is in
`audit_released_models.ipynb`.""", "mia-md")
code("""members = Split(train_split.x[: membership["members"]], train_split.y[: membership["members"]])
non_members = Split(test_split.x[: membership["members"]], test_split.y[: membership["members"]])
mia_rows = []
with tempfile.TemporaryDirectory() as tmp:
    for method, eps in (("alg1", claimed_eps), ("dpsgd", claimed_eps), ("alg1", math.inf)):
        mia_rows.append(audit.membership_experiment(members, non_members, method=method, eps=eps, q=membership["q"],
                                                    steps=membership["steps"], out_dir=tmp, seed=seed))
mia = pd.DataFrame(mia_rows)
print(mia[["method", "model", "data", "q", "T", "claimed_eps", "test_accuracy", "auc", "tpr_at_fpr_0.01",
           "tpr_at_fpr_0.001"]].to_string(index=False))
print("wrote", provenance.write_csv(mia, results_dir / "audit_membership.csv", provenance.collect(params, seed=seed)))
print(f"audit notebook wall time: {time.perf_counter() - t_start:.0f} s")""", "mia-run")
nb = nbf.v4.new_notebook(cells=cells, metadata={"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}})
nbf.write(nb, NOTEBOOKS / "audit_privacy.ipynb")

cells = []
md("""# Membership inference on the models this profile released

The loss-threshold attack (Yeom et al. 2018; `dirdp.audit.released_model_mia`) on every image model the DAG trained
for this profile (LATENT's model reads randomized bit strings and is left out): `n` of the run's own training
records against `n` test records, AUC and TPR at 1% and 0.1% FPR. Models trained on 60,000 records for a few
epochs generalise well, so this is a weak attack here; the controlled experiment with a small training set is in
`audit_privacy.ipynb`.""", "intro")
code("""profile = "cpu"
runs_dir = "../results/runs/cpu"
results_dir = None       # None: a scratch folder (interactive use, nbval); the DAG passes results/
n = 500
seed = 0""", "params", tags=["parameters"])
code("""import tempfile
from pathlib import Path

import pandas as pd

from dirdp import audit, provenance

results_dir = Path(results_dir or tempfile.mkdtemp(prefix="dirdp-results-"))
results_dir.mkdir(parents=True, exist_ok=True)
released = sorted(p for p in Path(runs_dir).glob("*/*.json") if not p.name.startswith("latent"))
rows = [dict(audit.released_model_mia(p, n=n, seed=seed), run=str(p)) for p in released]
table = pd.DataFrame(rows, columns=["method", "model", "data", "q", "T", "claimed_eps", "certified_eps", "test_accuracy",
                                    "auc", "tpr_at_fpr_0.01", "tpr_at_fpr_0.001", "n_members", "n_non_members", "run"])
pd.set_option("display.width", 200)
print(f"{len(table)} released models under {runs_dir}")
print(table.drop(columns=["run", "n_members", "n_non_members"]).to_string(index=False))
out = provenance.write_csv(table, results_dir / "audit_released_models.csv",
                           provenance.collect(dict(profile=profile, runs_dir=str(runs_dir), n=n), seed=seed))
print("wrote", out)""", "run")
nb = nbf.v4.new_notebook(cells=cells, metadata={"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}})
nbf.write(nb, NOTEBOOKS / "audit_released_models.ipynb")
