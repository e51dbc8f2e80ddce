"""Write notebooks/<object>.ipynb for every paper object of ``dirdp.experiments.OBJECTS``, and
notebooks/baselines_comparison.ipynb.

The notebooks are thin and identical but for their parameters: all logic is in
``dirdp.report``. Rerun after adding an object: ``python scripts/make_object_notebooks.py``.
"""

from pathlib import Path

import nbformat as nbf

from dirdp.experiments import OBJECTS

ROOT = Path(__file__).resolve().parents[1]

INTRO = """# {title}: {caption}

Aggregates the training runs of this object (one result JSON per run under `results/runs/<profile>/`)
into one tidy table beside the paper's printed values, and draws the figure. Rows:

- **run here**: mean over our seeds (std when n >= 2), the paper's value for the same cell, the difference and a
  status (`dirdp.report`): within the paper's spread (2 paper std), differs, no spread printed, or not comparable
  (reduced protocol). Reduced-width runs say so in `setting` and in the status.
- **paper**: a cell of the paper not run in this profile, with the reason.
- **paper, cited**: numbers the paper quotes from other work (`dirdp/paper_accuracy.csv`), never mixed with ours.

Parameters: `profile` picks `config/<profile>.yaml` (the DAG passes the profile itself as `config`)."""

PARAMS = """object_name = "{name}"
profile = "cpu"          # config/<profile>.yaml: which runs belong to this object
config = None            # the profile as a dict (the DAG passes it); None: read config/<profile>.yaml
runs_root = "../results/runs"
results_dir = None       # None: a scratch folder (interactive use, nbval); the DAG passes results/
figures_dir = None"""

SETUP = """import tempfile
from pathlib import Path

import matplotlib.pyplot as plt

from dirdp import experiments, provenance, report

results_dir = Path(results_dir or tempfile.mkdtemp(prefix="dirdp-results-"))
figures_dir = Path(figures_dir or tempfile.mkdtemp(prefix="dirdp-figures-"))
prof = (experiments.Profile.from_config(config) if config
        else experiments.Profile.load(Path(runs_root).parent.parent / "config" / f"{profile}.yaml"))
obj = experiments.get_object(object_name)"""

TABLE = """table = report.object_table(obj, prof, runs_root=runs_root)
print(f"{obj.title} ({obj.dataset}, {obj.metric} accuracy), profile '{prof.name}'")
print(report.show(table))
settings = table.setting.dropna().unique()
print("\\nsettings of the runs made here:", "; ".join(settings) if len(settings) else "none")"""

FIGURE = """fig = report.figure(obj, table, title_note=f"runs: profile '{prof.name}'" + (f", {settings[0]}" if len(settings) else ""))
stem = obj.figures[0] if obj.figures else obj.name
for ext in ("png", "pdf"):
    fig.savefig(figures_dir / f"{stem}.{ext}", dpi=150)
plt.show()"""

WRITE = """out = provenance.write_csv(table, results_dir / f"{obj.name}.csv", provenance.collect(
    {"notebook": obj.name, "profile": prof.name, "runs": [r.path(prof.name, runs_root) for r in prof.runs(obj.name)]}))
print(f"wrote {out}")"""


BASELINES_INTRO = """# Baselines run here, beside Algorithm 1: accuracy against eps on MNIST and FashionMNIST

Every method trained here on the same data, Poisson sampler, q and T (`dirdp.baselines`): Algorithm 1, DP-SGD with
Opacus (Inception, BatchNorm -> GroupNorm), tempered-sigmoid DP-SGD (Papernot et al.'s tanh CNN) and LATENT, with the
paper's printed values (dashed, band = one std) and the numbers it cites (open squares). **LATENT's eps is local DP per
record, and its claim does not hold** (see `eps_ldp_worst_case` in its rows and the README)."""

BASELINES_PARAMS = """objects = ["table2_mnist", "table4_fashionmnist"]
profile = "cpu"
config = None
runs_root = "../results/runs"
results_dir = None
figures_dir = None"""

BASELINES_BODY = """import pandas as pd

panels = [(experiments.get_object(name), report.object_table(experiments.get_object(name), prof, runs_root=runs_root))
          for name in objects]
table = pd.concat([t for _, t in panels], ignore_index=True)
here = table[table.label == "run here"]
print(report.show(here) if len(here) else "no runs of this profile on disk yet")"""

BASELINES_FIGURE = """fig = report.baselines_figure(panels, title_note=f"runs: profile '{prof.name}'")
for ext in ("png", "pdf"):
    fig.savefig(figures_dir / f"baselines_comparison.{ext}", dpi=150)
plt.show()
out = provenance.write_csv(table, results_dir / "baselines_comparison.csv", provenance.collect(
    {"notebook": "baselines_comparison", "profile": prof.name, "objects": objects}))
print(f"wrote {out}")"""


def build_baselines() -> nbf.NotebookNode:
    nb = nbf.v4.new_notebook()
    params = nbf.v4.new_code_cell(BASELINES_PARAMS)
    params.metadata["tags"] = ["parameters"]
    setup = SETUP.replace('\nobj = experiments.get_object(object_name)', '')
    nb.cells = [nbf.v4.new_markdown_cell(BASELINES_INTRO), params, nbf.v4.new_code_cell(setup),
                nbf.v4.new_code_cell(BASELINES_BODY), nbf.v4.new_code_cell(BASELINES_FIGURE)]
    return _finish(nb, "baselines_comparison")


def _finish(nb: nbf.NotebookNode, name: str) -> nbf.NotebookNode:
    """Kernel metadata and stable cell ids (so that rewriting a notebook changes nothing)."""
    nb.metadata["kernelspec"] = {"display_name": "Python 3", "language": "python", "name": "python3"}
    nb.metadata["language_info"] = {"name": "python"}
    for i, cell in enumerate(nb.cells):
        cell.id = f"{name.replace('_', '-')}-{i}"
    return nb


def build(name: str) -> nbf.NotebookNode:
    obj = OBJECTS[name]
    nb = nbf.v4.new_notebook()
    params = nbf.v4.new_code_cell(PARAMS.format(name=name))
    params.metadata["tags"] = ["parameters"]
    nb.cells = [nbf.v4.new_markdown_cell(INTRO.format(title=obj.title, caption=obj.caption)), params,
                nbf.v4.new_code_cell(SETUP), nbf.v4.new_code_cell(TABLE), nbf.v4.new_code_cell(FIGURE),
                nbf.v4.new_code_cell(WRITE)]
    return _finish(nb, name)


if __name__ == "__main__":
    for name in OBJECTS:
        path = ROOT / "notebooks" / f"{name}.ipynb"
        nbf.write(build(name), path)
        print(path.relative_to(ROOT))
    nbf.write(build_baselines(), ROOT / "notebooks" / "baselines_comparison.ipynb")
    print("notebooks/baselines_comparison.ipynb")
