"""The *Figures* section of results/<profile>/README.md: every figure of the profile (``figures/<profile>/*.png``,
with its PDF where there is one), linked, with the notebook that draws it and that notebook's title, read from the
notebooks themselves; a paper object's figure is named by the object's executed notebook and its heading (the
objects that vary eps share one source notebook)."""

from __future__ import annotations

import json
import re
from pathlib import Path

from workflow.experiments import OBJECTS
from workflow.report.markdown import table
from workflow.report.objects import heading

# a notebook's figure: style.save(fig, figures_dir, "<stem>"), or a savefig to figures_dir / f"<stem>.{ext}" or
# figures_dir / "<stem>.png"
SAVED = re.compile(r'(?:save\(\w+,\s*figures_dir,\s*"|figures_dir\s*/\s*f?")([A-Za-z0-9_]+)(?:"|\.(?:\{ext\}|png)")')
FIRST = ("headline",)  # listed before the rest


def figure_sources(notebooks: Path) -> dict[str, tuple[str, str]]:
    """Figure stem -> (notebook name, its title) for every figure a notebook in ``notebooks`` draws: the stems its
    code saves by name, and each paper object's figure (the object's first figure, or its name), named by the
    object's executed notebook (``notebooks/<object>.ipynb`` beside the index) and :func:`heading`."""
    out = {}
    for path in sorted(notebooks.glob("*.ipynb")):
        cells = json.loads(path.read_text())["cells"]
        code = "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "code")
        title = next(("".join(c["source"]).splitlines()[0].removeprefix("# ") for c in cells
                      if c["cell_type"] == "markdown" and c["source"]), path.stem)
        out.update({stem: (path.stem, title) for stem in SAVED.findall(code)})
    out.update({obj.figures[0] if obj.figures else obj.name: (obj.name, heading(obj)) for obj in OBJECTS.values()})
    return out


def figure_lines(figures: Path, link: str, notebooks: Path) -> list[str]:
    """The section: one row per PNG in ``figures`` (linked as ``<link>/<name>``), the headline first."""
    pngs = sorted(figures.glob("*.png"), key=lambda p: (p.stem not in FIRST, p.stem))
    sources = figure_sources(notebooks) if notebooks.is_dir() else {}
    lines = ["## Figures", "", f"Every figure in `{figures.parent.name}/{figures.name}/`: the PNG, the PDF beside it "
             "where there is one, and the notebook that draws it (executed copy: `notebooks/` here).", ""]
    if not pngs:
        return lines + ["None yet: run the DAG."]
    rows = []
    for png in pngs:
        pdf = png.with_suffix(".pdf")
        nb, title = sources.get(png.stem, (None, None))
        rows.append([f"[`{png.name}`]({link}/{png.name})", f"[`{pdf.name}`]({link}/{pdf.name})" if pdf.exists() else "—",
                     f"`notebooks/{nb}.ipynb`: {title}" if nb else "—"])
    return lines + [table(["figure", "PDF", "drawn by"], rows)]
