"""Reporting: the runs made here beside the paper's printed values, one table and one figure per paper object.

- :mod:`workflow.report.runs`: the one reader of a run's result JSON (:func:`read_run`), the runs summary
  (:func:`collect`) and the accuracy curves (:func:`curves`);
- :mod:`workflow.report.compare`: the paper's value for a cell, ours - paper with its 95% interval and the verdict;
- :mod:`workflow.report.objects`: the tidy table of a paper object (:func:`object_table`), its text (:func:`show`,
  :func:`describe`) and the notebook that makes it (:func:`object_notebook`);
- :mod:`workflow.report.plots`: the accuracy-against-eps panel several notebooks draw (:func:`draw_accuracy`);
- :mod:`workflow.report.tables`: Tables 6 and 7 (r*) recomputed with the accountant;
- :mod:`workflow.report.headline`, :mod:`workflow.report.headline_plot`: the headline figure's two tables (every paper cell
  run here; the claimed epsilon against the audit) and its drawing;
- :mod:`workflow.report.index`: ``results/<profile>/README.md`` and the top index ``results/README.md`` (``python -m dirdp index``).

What is particular to a kind of table or figure (its columns, its drawing) is in its notebook under ``notebooks/``.
Every epsilon is parsed by :func:`dirdp.protocol.parse_eps` and printed by :func:`dirdp.protocol.fmt_eps`.
"""

from workflow.report import index, tables
from workflow.report.compare import LEVEL, MARGIN, PAPER_SEEDS, diff_interval, estimate, status, verdict, welch_interval
from workflow.report.index import write_index
from workflow.report.objects import (CONFIG_DIR, COLUMNS, EPS_NOTEBOOK, MODEL_NAMES, SHOW_COLUMNS, describe, heading,
                                  object_notebook, object_table, paper_model, profile_run_paths, show)
from workflow.report.plots import METHOD_COLOR, WIDTH_STYLE, draw_accuracy, eps_x, figure, runs_note, set_style
from workflow.report.runs import MAIN_TABLE, collect, curves, run_files
from workflow.report.tables import table6, table7

__all__ = ["CONFIG_DIR", "COLUMNS", "EPS_NOTEBOOK", "LEVEL", "MAIN_TABLE", "MARGIN", "METHOD_COLOR", "MODEL_NAMES",
           "PAPER_SEEDS", "SHOW_COLUMNS", "WIDTH_STYLE", "collect", "curves", "describe", "diff_interval",
           "draw_accuracy", "eps_x", "estimate", "figure", "heading", "index", "object_notebook", "object_table",
           "paper_model", "profile_run_paths", "read_run", "run_files", "runs_note", "set_style", "show", "status", "table6",
           "table7", "tables", "verdict", "welch_interval", "write_index"]
