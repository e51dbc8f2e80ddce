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
    """``import jsonschema`` (None where it is not installed: the GPU machine; then :func:`errors` makes the plain
    structural check of :func:`_structural_errors`), without the 7-8 s its format module spends when rfc3987-syntax is installed (JupyterLab's
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
    except ImportError:
        return None
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
    if _jsonschema() is None:
        return _structural_errors(config, partial=partial)
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



# --- without jsonschema (the GPU machine has numpy, scipy, pandas, matplotlib, tqdm, pyyaml and torch alone) ----------

_TYPES = {"object": dict, "array": list, "string": str, "null": type(None), "boolean": bool}


def _is_type(value, name: str) -> bool:
    if name == "integer":
        return (isinstance(value, int) and not isinstance(value, bool)) or (isinstance(value, float)
                                                                           and value.is_integer())
    if name == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    return isinstance(value, _TYPES.get(name, object))


def _structural_errors(config: dict, *, partial: bool = False) -> list[str]:
    """What :func:`errors` says where jsonschema is not installed: a plain structural check of ``config`` against
    ``config/schema.yaml`` (the keywords the schema uses: type, properties, additionalProperties, required, items,
    prefixItems, min/maxItems, enum, pattern, propertyNames, anyOf, $ref, and the top level's if/then), one line per
    problem, ``key.path: problem``, as :func:`errors` words them (close, not always the same words)."""
    import re

    root = schema()

    def resolve(s: dict) -> dict:
        while isinstance(s, dict) and "$ref" in s:
            ref = s["$ref"]
            target = root
            for part in ref.lstrip("#/").split("/"):
                target = target[part]
            s = {**target, **{k: v for k, v in s.items() if k != "$ref"}}
        return s

    def check(value, s: dict, path: list[str]) -> list[str]:
        s = resolve(s)
        where = ".".join(path) or "(top level)"
        out: list[str] = []
        if "anyOf" in s:
            if all(check(value, alt, path) for alt in s["anyOf"]):
                return [f"{where}: {value!r} is not {s['title']}" if s.get("title") else
                        f"{where}: {value!r} is not valid under any of the given schemas"]
        types = s.get("type")
        if types is not None:
            names = [types] if isinstance(types, str) else list(types)
            if not any(_is_type(value, t) for t in names):
                what = s.get("title") or " or ".join(repr(t) for t in names)
                return out + [f"{where}: {value!r} is not {what}" if s.get("title") else
                              f"{where}: {value!r} is not of type {what}"]
        if "enum" in s and value not in s["enum"]:
            out.append(f"{where}: {value!r} is not one of {s['enum']!r}")
        if "pattern" in s and isinstance(value, str) and not re.search(s["pattern"], value):
            out.append(f"{where}: {value!r} is not {s['title']}" if s.get("title") else
                       f"{where}: {value!r} does not match {s['pattern']!r}")
        if isinstance(value, dict):
            props = s.get("properties") or {}
            for key in s.get("required") or []:
                if key not in value and not (partial and not path):  # an overlay: nothing required at the top
                    out.append(f"{where}: {key!r} is a required property")
            extra = s.get("additionalProperties", True)
            names = s.get("propertyNames")
            for key, sub in value.items():
                if names is not None:
                    allowed = list(resolve(names).get("enum") or [])
                    if check(key, names, path):
                        close = difflib.get_close_matches(str(key), allowed, n=1)
                        out.append(f"{where}: unknown key {key!r}"
                                   + (f" (did you mean {close[0]!r}?)" if close else "")
                                   + (f"; allowed: {', '.join(map(str, allowed))}" if allowed else ""))
                        continue
                if key in props:
                    out += check(sub, props[key], [*path, str(key)])
                elif extra is False:
                    close = difflib.get_close_matches(str(key), list(props), n=1)
                    out.append(f"{where}: unknown key {key!r}" + (f" (did you mean {close[0]!r}?)" if close else "")
                               + f"; allowed: {', '.join(props)}")
                elif isinstance(extra, dict):
                    out += check(sub, extra, [*path, str(key)])
        if isinstance(value, list):
            if "minItems" in s and len(value) < s["minItems"]:
                out.append(f"{where}: {value!r} is not {s['title']}" if s.get("title") else
                           f"{where}: {value!r} should be non-empty" if s["minItems"] == 1 else
                           f"{where}: {value!r} is too short")
            if "maxItems" in s and len(value) > s["maxItems"]:
                out.append(f"{where}: {value!r} is too long")
            prefix = s.get("prefixItems") or []
            for i, item in enumerate(value):
                sub = prefix[i] if i < len(prefix) else s.get("items")
                if isinstance(sub, dict):
                    out += check(item, sub, [*path, str(i)])
        return out

    lines = check(config, root, [])
    cond, then = root.get("if"), root.get("then")
    if not partial and cond is not None and then is not None and "extends" not in config:
        lacking = [k for k in then.get("required") or [] if k not in config]
        training = config.get("training")
        if isinstance(training, dict) and "device" not in training:
            lacking.append("training.device")
        if lacking:
            one = len(lacking) == 1
            lines.insert(0, f"missing key{'' if one else 's'} {', '.join(map(repr, lacking))}: declare "
                            f"{'it' if one else 'them'}, or add `extends: paper` (a profile without `extends:` "
                            f"declares every key; with it, each key it leaves out comes from "
                            f"{_rel(CONFIG_DIR / 'paper.yaml')})")
    return lines
