"""The workflow beside the library: what turns the library (``dirdp``) into this artifact's tables, figures and pages.

It imports ``dirdp``; ``dirdp`` never imports it (``pip install .`` installs the library alone). Run from the root of a
checkout (``python -m workflow ...``; ``python -m dirdp <command>`` only says that a command moved here), by the
Snakefile and its rules, and by the notebooks.

- :mod:`workflow.experiments`: the paper's objects as grids of training runs, and the profiles that scale them
  (``config/<name>.yaml``, checked by :mod:`workflow.profile_schema`); :mod:`workflow.snakemake_args`: the default
  profile and Snakemake's options checked before anything runs; :mod:`workflow.missing_data`: the one message for a
  profile whose data sets are not on disk.
- :mod:`workflow.paper`: the accuracies the paper prints (``paper_accuracy.csv``) and its speed claim.
- :mod:`workflow.report`: the runs beside the paper's printed values, one table and one figure per paper object; the
  results index and the generated blocks of the README and docs/.
- :mod:`workflow.audit`: the audit's experiments on the paper's own models (the exact final-model test, the subspace
  canary test), the claims their rows face, and the released models' membership rows kept beside their runs.
- :mod:`workflow.bench`: per-step times and what they project for a profile.
- :mod:`workflow.campaign`: a profile's runs trained in its priority order inside a budget; packing and the size of
  what travels to a GPU node without network.
"""
