"""Profiles (``config/<name>.yaml``) checked against ``config/schema.yaml``.

The Snakefile validates every config file it loads (and the ``--config`` overrides) with
:func:`validate_file` / :func:`validate` before it builds any job, then the merged config with
Snakemake's own ``validate``; Python code that loads a profile by itself (``Profile.load``, the
campaign) calls :func:`validate`. A typo'd key is an error naming the key and the file, never a
silent default::

    config/smoke.yaml: training: unknown key 'widht' (did you mean 'width'?); allowed: seeds, width, ...
"""

from __future__ import annotations

import difflib
from functools import lru_cache
from pathlib import Path

import yaml

SCHEMA_PATH = Path(__file__).resolve().parents[1] / "config" / "schema.yaml"


@lru_cache(maxsize=None)
def schema() -> dict:
    """``config/schema.yaml`` as a dict."""
    return yaml.safe_load(SCHEMA_PATH.read_text())


@lru_cache(maxsize=None)
def _validator(partial: bool):
    from jsonschema import Draft202012Validator

    s = dict(schema())
    if partial:  # an overlay (--config): nothing is required at the top
        s.pop("required", None)
    Draft202012Validator.check_schema(s)
    return Draft202012Validator(s)


def errors(config: dict, *, partial: bool = False) -> list[str]:
    """What is wrong with ``config`` (one line each, ``key.path: problem``); [] if it matches the schema.
    ``partial``: ``config`` is an overlay, so the top-level ``required`` keys may be absent."""
    if config is None:
        config = {}
    if not isinstance(config, dict):
        return [f"a profile is a mapping of keys to values, not {type(config).__name__}"]
    found = sorted(_validator(partial).iter_errors(config), key=lambda e: [str(p) for p in e.absolute_path])
    return [_describe(e) for e in found]


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


def _rel(path: Path) -> str:
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)


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
    if kind in ("anyOf", "oneOf", "pattern") and error.schema.get("title"):
        return f"{where}: {error.instance!r} is not {error.schema['title']}"
    return f"{where}: {error.message}"

