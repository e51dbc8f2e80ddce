"""Profiles (``config/<name>.yaml``) checked against ``config/schema.yaml``, and how they inherit.

A profile file either declares every key the schema requires (``profile``, ``objects``, ``datasets``,
``training`` with its ``device``, ``grids``, ``theorem11``, ``audit``, ``explore_kappa``) or says
``extends: <name>``: then each key it leaves out comes from ``config/<name>.yaml``, mapping by mapping
(:func:`load`). Nothing is inherited silently: a file that lacks a required key and says no ``extends``
is an error naming the file, the key and what to do. The Snakefile (:func:`workflow_config`),
``Profile.load`` and the campaign all read a profile through :func:`load`, so they see the same keys.

Every file and the ``--config`` overrides are checked on their own before any job, then the merged
config by Snakemake's own ``validate``. A typo'd key is an error naming the key and the file, never a
silent default::

    config/smoke.yaml: training: unknown key 'widht' (did you mean 'width'?); allowed: seeds, width, ...
"""

from __future__ import annotations

import difflib
from functools import lru_cache
from pathlib import Path

import yaml

SCHEMA_PATH = Path(__file__).resolve().parents[1] / "config" / "schema.yaml"
CONFIG_DIR = SCHEMA_PATH.parent  # where ``extends: <name>`` finds config/<name>.yaml


@lru_cache(maxsize=None)
def schema() -> dict:
    """``config/schema.yaml`` as a dict."""
    return yaml.safe_load(SCHEMA_PATH.read_text())


def _jsonschema():
    """``import jsonschema``, without the 7-8 s its format module spends when rfc3987-syntax is installed (JupyterLab's
    ``jsonschema[format-nongpl]`` brings it): that import compiles 38 lark grammars for the "iri" formats, on every
    Snakemake start (each DAG, dry run and SLURM job step). Profiles check no formats, so for that one import the
    package reads as absent (jsonschema then leaves "iri" and "iri-reference" unchecked in this process, as it does
    wherever rfc3987-syntax is not installed); nothing else changes, and a jsonschema imported before is used as is."""
    import sys

    if "jsonschema" in sys.modules:
        return sys.modules["jsonschema"]
    hide = "rfc3987_syntax" not in sys.modules
    if hide:
        sys.modules["rfc3987_syntax"] = None  # import raises ImportError, which jsonschema's _format suppresses
    try:
        import jsonschema
    finally:
        if hide and sys.modules.get("rfc3987_syntax", False) is None:
            del sys.modules["rfc3987_syntax"]
    return jsonschema


@lru_cache(maxsize=None)
def _validator(partial: bool):
    Draft202012Validator = _jsonschema().Draft202012Validator

    s = dict(schema())
    if partial:  # an overlay (--config): nothing is required
        for key in ("required", "if", "then"):
            s.pop(key, None)
    Draft202012Validator.check_schema(s)
    return Draft202012Validator(s)


def errors(config: dict, *, partial: bool = False) -> list[str]:
    """What is wrong with ``config`` (one line each, ``key.path: problem``); [] if it matches the schema.
    ``partial``: ``config`` is an overlay (``--config``), so no key is required. The keys a profile without
    ``extends:`` lacks (config/schema.yaml's ``then``) make one line, with what to do."""
    if config is None:
        config = {}
    if not isinstance(config, dict):
        return [f"a profile is a mapping of keys to values, not {type(config).__name__}"]
    found = sorted(_validator(partial).iter_errors(config), key=lambda e: [str(p) for p in e.absolute_path])
    lacking = [e.validator == "required" and "then" in e.schema_path for e in found]
    undeclared = [_required_key(e) for e, lacks in zip(found, lacking) if lacks]
    lines = [_describe(e) for e, lacks in zip(found, lacking) if not lacks]
    if undeclared:
        one = len(undeclared) == 1
        lines.insert(0, f"missing key{'' if one else 's'} {', '.join(map(repr, undeclared))}: declare "
                        f"{'it' if one else 'them'}, or add `extends: paper` (a profile without `extends:` declares "
                        f"every key; with it, each key it leaves out comes from {_rel(CONFIG_DIR / 'paper.yaml')})")
    return lines


def validate(config: dict, source: str, *, partial: bool = False) -> None:
    """Raise ValueError naming ``source`` (the file, or ``--config``) and every offending key if
    ``config`` does not match ``config/schema.yaml``."""
    problems = errors(config, partial=partial)
    if problems:
        lines = "\n".join(f"{source}: {p}" for p in problems)
        raise ValueError(f"{source} does not match the profile schema ({_rel(SCHEMA_PATH)}):\n{lines}")


def validate_file(path: str | Path) -> dict:
    """Load and validate one profile YAML; return it."""
    path = Path(path)
    try:
        config = yaml.safe_load(path.read_text())
    except yaml.YAMLError as err:
        raise ValueError(f"{path}: not valid YAML: {err}") from None
    validate(config, str(path))
    return config


def load(path: str | Path) -> dict:
    """A profile file as every reader sees it: validated, and where it says ``extends: <name>``, each key it
    leaves out taken from ``config/<name>.yaml`` (itself loaded so), mapping by mapping; ``extends`` is
    resolved away. A ValueError names the file and the key."""
    return _load(Path(path), frozenset())


def _load(path: Path, seen: frozenset) -> dict:
    config = validate_file(path)
    parent = config.pop("extends", None)
    if parent is None:
        return config
    base = CONFIG_DIR / f"{parent}.yaml"
    if not base.is_file():
        known = ", ".join(sorted(p.stem for p in CONFIG_DIR.glob("*.yaml") if p != SCHEMA_PATH))
        raise ValueError(f"{path}: extends: there is no {_rel(base)}; extend one of the profiles in "
                         f"{_rel(CONFIG_DIR)}: {known}.")
    if base.resolve() in seen | {path.resolve()}:
        raise ValueError(f"{path}: extends: {parent!r} leads back to {path} (a cycle); one of them must declare "
                         "every key instead.")
    merged = _inherit(config, _load(base, seen | {path.resolve()}))
    validate(merged, f"{path} (with what it extends)")
    return merged


def workflow_config(files, overrides: dict) -> dict:
    """The config a Snakemake run works with: each profile file (:func:`load`), a later one over an earlier
    one, then the ``--config`` ``overrides`` (checked on their own first)."""
    validate(overrides, "--config", partial=True)
    if "extends" in overrides:
        raise ValueError("--config: extends: a profile file says what it extends (--configfile FILE), not --config.")
    config: dict = {}
    for path in dict.fromkeys(str(f) for f in files):
        config = _overlay(config, load(path))
    return _overlay(config, overrides)


def _inherit(child: dict, parent: dict) -> dict:
    """``child`` with every key it lacks taken from ``parent``, mapping by mapping (its own order first)."""
    out = dict(child)
    for key, value in parent.items():
        if key not in out:
            out[key] = value
        elif isinstance(value, dict) and isinstance(out[key], dict):
            out[key] = _inherit(out[key], value)
    return out


def _overlay(base: dict, top: dict) -> dict:
    """``top``'s keys over ``base``'s, mapping by mapping (``base``'s order, then ``top``'s new keys)."""
    out = dict(base)
    for key, value in top.items():
        out[key] = _overlay(out[key], value) if isinstance(value, dict) and isinstance(out.get(key), dict) else value
    return out


def _rel(path: Path) -> str:
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def _required_key(error) -> str:
    """The dotted path of the key a ``required`` error misses (jsonschema: "'x' is a required property")."""
    key = error.message.split("'")[1] if error.message.count("'") >= 2 else error.message
    return ".".join([*(str(p) for p in error.absolute_path), key])


def _describe(error) -> str:
    """One line for a jsonschema error: where (dotted key path), what."""
    where = ".".join(str(p) for p in error.absolute_path) or "(top level)"
    kind = error.validator
    if kind == "additionalProperties" and isinstance(error.instance, dict):
        allowed = list(error.schema.get("properties") or {})
        unknown = [k for k in error.instance if k not in allowed]
        parts = []
        for key in unknown:
            close = difflib.get_close_matches(str(key), allowed, n=1)
            parts.append(f"unknown key {key!r}" + (f" (did you mean {close[0]!r}?)" if close else ""))
        return f"{where}: {'; '.join(parts)}; allowed: {', '.join(allowed)}"
    if "propertyNames" in error.relative_schema_path:  # a key of a mapping keyed by name (grids, baselines)
        allowed = list(error.schema.get("enum") or [])
        close = difflib.get_close_matches(str(error.instance), allowed, n=1)
        return (f"{where}: unknown key {error.instance!r}" + (f" (did you mean {close[0]!r}?)" if close else "")
                + (f"; allowed: {', '.join(map(str, allowed))}" if allowed else ""))
    if kind in ("anyOf", "oneOf", "pattern", "minItems") and error.schema.get("title"):
        return f"{where}: {error.instance!r} is not {error.schema['title']}"
    return f"{where}: {error.message}"

