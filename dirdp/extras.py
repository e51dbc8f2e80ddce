"""What a command needs beyond the library. ``pip install .`` installs dirdp alone (torch, numpy, scipy, tqdm: the
accountant, the mechanism, sampling, the training loop); the extras of pyproject.toml bring the rest. Where a command
imports a package of an extra that is not installed, ``python -m dirdp`` says in one line which extra brings it,
instead of a traceback."""

from __future__ import annotations

# the import name of each optional package -> (its distribution, the extra that brings it); tests/test_packaging.py
# checks each against pyproject.toml
EXTRA = {
    "torchvision": ("torchvision", "data"), "medmnist": ("medmnist", "data"),
    "opacus": ("opacus", "baselines"),
    "pandas": ("pandas", "workflow"), "matplotlib": ("matplotlib", "workflow"), "seaborn": ("seaborn", "workflow"),
    "yaml": ("pyyaml", "workflow"), "jsonschema": ("jsonschema", "workflow"), "snakemake": ("snakemake", "workflow"),
    "papermill": ("papermill", "workflow"), "ipywidgets": ("ipywidgets", "explore"),
}


def missing(err: ImportError) -> str | None:
    """The one line for ``err`` where it names an optional package that is not installed; None otherwise (a missing
    core package or a broken install stays a traceback)."""
    name = (getattr(err, "name", None) or "").partition(".")[0]
    if name not in EXTRA:
        return None
    dist, extra = EXTRA[name]
    return (f"this needs {dist}, which is not installed (the library alone does not need it): "
            f"pip install 'dirdp[{extra}]' (or pip install {dist})")
