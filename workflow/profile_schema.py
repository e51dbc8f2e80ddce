"""Profiles (``config/<name>.yaml``) checked against ``config/schema.yaml``, and how they inherit.

A profile file either declares every key the schema requires (``profile``, ``objects``, ``datasets``,
``training`` with its ``device``, ``grids``, ``theorem11``, ``audit``, ``explore_kappa``) or says
``extends: <name>``: then each key it leaves out comes from ``config/<name>.yaml``, mapping by mapping
(:func:`load`). Nothing is inherited silently: a file that lacks a required key and says no ``extends``
is an error naming the file, the key and what to do. The Snakefile (:func:`workflow_config`),
``Profile.load`` and the campaign all read a profile through :func:`load`, so they see the same keys.

Every file and the ``--config`` overrides are checked on their own before any job, then the merged
config (:func:`workflow_config`). The check (:func:`errors`) is a plain walk of the schema's keywords
(:data:`KEYWORDS`), without jsonschema, which the GPU machine lacks. A typo'd key is an error naming the key and
the file, one line, never a silent default::

    config/smoke.yaml: training: unknown key 'widht' (did you mean 'width'?); allowed: seeds, width, ...
"""

from __future__ import annotations

import difflib
import re
from functools import lru_cache
from pathlib import Path

import yaml

SCHEMA_PATH = Path(__file__).resolve().parents[1] / "config" / "schema.yaml"
CONFIG_DIR = SCHEMA_PATH.parent  # where ``extends: <name>`` finds config/<name>.yaml


@lru_cache(maxsize=None)
def schema() -> dict:
    """``config/schema.yaml`` as a dict."""
    return yaml.safe_load(SCHEMA_PATH.read_text())


def profiles() -> list[str]:
    """The profiles that ship: the name of each ``config/<name>.yaml`` but the schema, sorted."""
    return sorted(p.stem for p in CONFIG_DIR.glob("*.yaml") if p != SCHEMA_PATH)


def errors(config: dict, *, partial: bool = False) -> list[str]:
    """What is wrong with ``config`` (one line each, ``key.path: problem``); [] if it matches the schema.
    ``partial``: ``config`` is an overlay (``--config``), so no key is required at the top. The keys a profile without
    ``extends:`` lacks (config/schema.yaml's ``if``/``then``) make one line, with what to do."""
    if config is None:
        config = {}
    if not isinstance(config, dict):
        return [f"a profile is a mapping of keys to values, not {type(config).__name__}"]
    root = schema()
    drop = ("if", "then", "required") if partial else ("if", "then")  # an overlay requires nothing at the top
    lines = _check(config, {k: v for k, v in root.items() if k not in drop}, [])
    lacking: list[str] = []
    if not partial and not _check(config, root["if"], []):  # if: no `extends:`; then: every key
        lines[:0] = _check(config, root["then"], [], lacking)
    if lacking:
        one = len(lacking) == 1
        lines.insert(0, f"missing key{'' if one else 's'} {', '.join(map(repr, lacking))}: declare "
                        f"{'it' if one else 'them'}, or add `extends: paper` (a profile without `extends:` declares "
                        f"every key; with it, each key it leaves out comes from {_rel(CONFIG_DIR / 'paper.yaml')})")
    return lines


def validate(config: dict, source: str, *, partial: bool = False) -> None:
    """Raise ValueError if ``config`` does not match ``config/schema.yaml``: one line per problem, each naming
    ``source`` (the file, or ``--config``) and the key."""
    problems = errors(config, partial=partial)
    if problems:
        raise ValueError("\n".join(f"{source}: {p}" for p in problems))


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
        raise ValueError(f"{path}: extends: there is no {_rel(base)}; extend one of the profiles in "
                         f"{_rel(CONFIG_DIR)}: {', '.join(profiles())}.")
    if base.resolve() in seen | {path.resolve()}:
        raise ValueError(f"{path}: extends: {parent!r} leads back to {path} (a cycle); one of them must declare "
                         "every key instead.")
    merged = _inherit(config, _load(base, seen | {path.resolve()}))
    validate(merged, f"{path} (with what it extends)")
    return merged


def workflow_config(files, overrides: dict) -> dict:
    """The config a Snakemake run works with: each profile file (:func:`load`), a later one over an earlier
    one, then the ``--config`` ``overrides`` (checked on their own first); the whole checked again."""
    validate(overrides, "--config", partial=True)
    if "extends" in overrides:
        raise ValueError("--config: extends: a profile file says what it extends (--configfile FILE), not --config.")
    config: dict = {}
    for path in dict.fromkeys(str(f) for f in files):
        config = _overlay(config, load(path))
    config = _overlay(config, overrides)
    validate(config, "the merged profile (--configfile files, then --config)")
    return config


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


# --- the check: a plain walk of config/schema.yaml that needs no jsonschema (the GPU machine has none) ---------------

# the schema keywords the walk knows (tests/test_dag.py checks that config/schema.yaml uses no other): if/then at the
# top level (a profile without `extends:`), the rest anywhere
KEYWORDS = {"$schema", "$defs", "$ref", "title", "description", "type", "enum", "pattern", "anyOf", "not", "if",
            "then", "properties", "additionalProperties", "propertyNames", "required", "minProperties", "items",
            "prefixItems", "minItems", "maxItems"}
_TYPES = {"object": dict, "array": list, "string": str, "null": type(None)}


def _is_type(value, name: str) -> bool:
    if isinstance(value, bool):
        return name == "boolean"
    if name == "integer":
        return isinstance(value, int) or (isinstance(value, float) and value.is_integer())
    if name == "number":
        return isinstance(value, (int, float))
    return isinstance(value, _TYPES.get(name, ()))


def _resolve(s: dict) -> dict:
    """``s`` with its ``$ref`` (``#/$defs/<name>``) replaced by what it points to (``s``'s own keywords over it)."""
    while "$ref" in s:
        target = schema()
        for part in s["$ref"].lstrip("#/").split("/"):
            target = target[part]
        s = {**target, **{k: v for k, v in s.items() if k != "$ref"}}
    return s


def _unknown(where: str, key, allowed: list) -> str:
    close = difflib.get_close_matches(str(key), [str(a) for a in allowed], n=1)
    return (f"{where}: unknown key {key!r}" + (f" (did you mean {close[0]!r}?)" if close else "")
            + (f"; allowed: {', '.join(map(str, allowed))}" if allowed else ""))


def _check(value, s: dict, path: list[str], lacking: list[str] | None = None) -> list[str]:
    """What is wrong with ``value`` (at the key ``path``) against the schema ``s``: one line per problem, ``key.path:
    problem``, in the schema's ``title`` where it has one. A key missing from ``required`` goes to ``lacking`` (its
    dotted path) where that is a list (the top level's ``then``), else makes a line."""
    s = _resolve(s)
    where = ".".join(path) or "(top level)"
    titled = f"{where}: {value!r} is not {s['title']}" if "title" in s else None
    if "anyOf" in s and all(_check(value, alt, path) for alt in s["anyOf"]):
        return [titled or f"{where}: {value!r} is not valid under any of the given schemas"]
    types = [s["type"]] if isinstance(s.get("type"), str) else s.get("type", [])
    if types and not any(_is_type(value, t) for t in types):
        return [titled or f"{where}: {value!r} is not of type {' or '.join(map(repr, types))}"]
    out = []
    if "enum" in s and value not in s["enum"]:
        out.append(f"{where}: {value!r} is not one of {s['enum']!r}")
    if "pattern" in s and isinstance(value, str) and not re.search(s["pattern"], value):
        out.append(titled or f"{where}: {value!r} does not match {s['pattern']!r}")
    if "not" in s and not _check(value, s["not"], path):
        out.append(f"{where}: {value!r} should not be valid under {s['not']!r}")
    if isinstance(value, dict):
        for key in s.get("required", []):
            if key in value:
                continue
            if lacking is None:
                out.append(f"{where}: {key!r} is a required property")
            else:
                lacking.append(".".join([*path, key]))
        if len(value) < s.get("minProperties", 0):
            out.append(f"{where}: {value!r} should be non-empty" if s["minProperties"] == 1 else
                       f"{where}: {value!r} has fewer than {s['minProperties']} keys")
        props, names, extra = s.get("properties", {}), s.get("propertyNames"), s.get("additionalProperties", True)
        for key, sub in value.items():
            if names is not None and _check(key, names, path):
                out.append(_unknown(where, key, _resolve(names).get("enum", [])))
            elif key in props:
                out += _check(sub, props[key], [*path, str(key)], lacking)
            elif extra is False:
                out.append(_unknown(where, key, list(props)))
            elif isinstance(extra, dict):
                out += _check(sub, extra, [*path, str(key)])
    if isinstance(value, list):
        if len(value) < s.get("minItems", 0):
            out.append(titled or (f"{where}: {value!r} should be non-empty" if s["minItems"] == 1 else
                                  f"{where}: {value!r} is too short (at least {s['minItems']} items)"))
        if len(value) > s.get("maxItems", len(value)):
            out.append(f"{where}: {value!r} is too long (at most {s['maxItems']} items)")
        prefix = s.get("prefixItems", [])
        for i, item in enumerate(value):
            sub = prefix[i] if i < len(prefix) else s.get("items")
            if sub is not None:
                out += _check(item, sub, [*path, str(i)])
    return out
