"""Reporting: the runs made here beside the paper's printed values, one table and one figure per paper object.

- :mod:`workflow.report.runs`: every result JSON of a profile (each read by :func:`dirdp.run_result.read_run`), the
  runs summary (``collect``) and the accuracy curves (``curves``);
- :mod:`workflow.report.compare`: the paper's value for a cell, ours - paper with its 95% interval and the verdict
  (:func:`estimate`, :func:`status`);
- :mod:`workflow.report.objects`: the tidy table of a paper object (:func:`object_table`), its text (:func:`show` of
  :func:`show_columns`, :func:`describe`) and the one notebook that makes every object (:data:`OBJECT_NOTEBOOK`);
- :mod:`workflow.report.plots`: the figure of a paper object (:func:`figure`: accuracy against eps, q or the learning
  rate) and its panel (:func:`draw_accuracy`);
- :mod:`workflow.report.tables`: Tables 6 and 7 (r*) recomputed with the accountant;
- :mod:`workflow.report.headline`, :mod:`workflow.report.headline_plot`: the headline figure's two tables (every paper
  cell run here; the claimed epsilon against the audit) and its drawing, the paper's Algorithm-1 cells of the objects
  run here and the privacy cost at the paper's width;
- :mod:`workflow.report.width`: accuracy against model width (``width_effect.csv``: the rows its figure draws);
- :mod:`workflow.report.index`: ``results/<profile>/README.md`` and the top index ``results/README.md``
  (``python -m workflow index``); :mod:`workflow.report.readme`: the generated blocks of the README and docs/
  (``python -m workflow readme``).

What is particular to a kind of table or figure that is no paper object (its columns, its drawing) is in its notebook
under ``notebooks/``. Every epsilon is parsed by :func:`dirdp.protocol.parse_eps` and printed by
:func:`dirdp.protocol.fmt_eps`. The names below are those the notebooks use.
"""

from workflow.report.compare import estimate, status
from workflow.report.objects import (OBJECT_NOTEBOOK, describe, object_table, paper_model, profile_run_paths, show,
                                     show_columns)
from workflow.report.plots import draw_accuracy, figure, runs_note, set_style

__all__ = ["OBJECT_NOTEBOOK", "describe", "draw_accuracy", "estimate", "figure", "object_table", "paper_model",
           "profile_run_paths", "runs_note", "set_style", "show", "show_columns", "status"]
