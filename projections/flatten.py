"""Flattening event JSON into typed views for DuckDB, from the event classes.

The shape of an event's JSON is derived from its dataclass (:func:`projections.model.event_views`),
so a new field in an event appears in the views without any hand-written JSON path. This module
renders that shape (pruned to what a view reads, :func:`view_tree`) as a DuckDB ``json_transform``
structure and writes the ``SELECT`` that builds each view. Spark builds its ``from_json`` schemas
in :mod:`projections.spark_fold`, from the same event views.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pyarrow as pa

from projections.model import ENVELOPE, EventView, _is_list, _list_item, _scalar_columns, _scalar_type, _unwrap_optional
from projections.sqlkit import quote_ident, sql_literal

__all__ = ["duckdb_structure", "duckdb_view_select", "tree_of", "view_tree"]

_ENV = [n for n, _ in ENVELOPE]

_DUCK = {pa.int64(): "BIGINT", pa.string(): "VARCHAR", pa.bool_(): "BOOLEAN", pa.float64(): "DOUBLE"}


def _node(tp: Any) -> Any:
    """The JSON shape of a field type: an arrow type, a subtree dict, ``[element]``, or ``None``
    when it is not flattened (dicts, heterogeneous tuples)."""
    if dataclasses.is_dataclass(tp):
        return tree_of(tp)
    scalar = _scalar_type(tp)
    if scalar is not None:
        return scalar
    if _is_list(tp):
        try:
            item = _node(_unwrap_optional(_list_item(tp)))
        except TypeError:
            return None
        return None if item is None else [item]
    return None


def tree_of(cls: Any) -> dict[str, Any]:
    """The JSON shape of event class ``cls`` as a tree: ``{key: arrow type | subtree | [element]}``
    (an element is a subtree, an arrow type, or a nested ``[element]``); dicts are left out."""
    leaves, lists = _scalar_columns(cls)
    tree: dict[str, Any] = {}

    def put(path: tuple[str, ...], leaf: Any) -> None:
        node = tree
        for k in path[:-1]:
            node = node.setdefault(k, {})
        node[path[-1]] = leaf

    for path, t in leaves:
        put(path, t)
    for path, item in lists:
        node = _node(item)
        if node is not None:
            put(path, [node])
    return tree


def view_tree(tree: dict[str, Any], view: EventView) -> dict[str, Any]:
    """The part of the event shape ``tree`` (:func:`tree_of`) that ``view`` reads: its columns'
    paths and the lists it unnests, nothing else. Parsing a payload into the pruned shape skips
    building the structs and lists the view would throw away (a ``json_transform``/``from_json``
    costs what it builds). Falls back to ``tree`` for shapes it does not prune (lists of lists)."""
    out: dict[str, Any] = {}
    levels: list[tuple[Any, Any]] = [(tree, out)]
    for lp in view.list_path:
        src, dst = levels[-1]
        if dst is None and not lp:  # a list inside a list, already copied whole
            levels.append((None, None))
            continue
        if not isinstance(src, dict) or not lp:
            return tree
        for k in lp[:-1]:
            src = src[k]
            dst = dst.setdefault(k, {})
        node = src[lp[-1]]
        if not isinstance(node, list):
            return tree
        if isinstance(node[0], dict):
            sub: dict[str, Any] = {}
            dst[lp[-1]] = [sub]
            levels.append((node[0], sub))
        else:  # scalars or lists of scalars: the whole list
            dst[lp[-1]] = node
            levels.append((None, None))
    for c in view.columns:
        if not c.path:
            continue
        src, dst = levels[c.level]
        if dst is None:
            return tree
        for k in c.path[:-1]:
            src = src[k]
            dst = dst.setdefault(k, {})
        dst[c.path[-1]] = src[c.path[-1]]
    return out or tree


def duckdb_structure(node: Any) -> Any:
    """The DuckDB ``json_transform`` structure of a shape ``node`` (:func:`tree_of`, or a part of
    it): nested dicts and one-element lists of DuckDB type names (``"BIGINT"``, ``"VARCHAR"``…)."""
    if isinstance(node, dict):
        return {k: duckdb_structure(v) for k, v in node.items()}
    if isinstance(node, list):
        return [duckdb_structure(node[0])]
    return _DUCK[node]


def _access(root: str, path: tuple[str, ...]) -> str:
    return root + "".join("." + quote_ident(p) for p in path)


def duckdb_view_select(view: EventView, tree: dict[str, Any], source: str) -> str:
    """A DuckDB ``SELECT`` building ``view`` from the raw rows in relation ``source`` (columns
    :data:`projections.source.FOLD_COLUMNS`): the rows of the view's event type, each payload
    parsed with ``json_transform`` into the part of ``tree`` the view reads (:func:`view_tree`),
    its lists unnested (one row per element, with the element's index) and its columns cut out."""
    structure = sql_literal(json.dumps(duckdb_structure(view_tree(tree, view))))
    env = ", ".join(quote_ident(n) for n in _ENV)
    q = f"SELECT {env}, json_transform(data, {structure}) AS e0 FROM {source} WHERE event_type = {sql_literal(view.event_type)}"
    for k, path in enumerate(view.list_path, start=1):
        lst = _access(f"e{k - 1}", path)
        idx = view.index_columns[k - 1]
        q = f"SELECT * FROM (SELECT *, generate_subscripts({lst}, 1) - 1 AS {idx}, unnest({lst}) AS e{k} FROM ({q}) AS q{k})"
    idxs = "".join(f", CAST({i} AS BIGINT) AS {i}" for i in view.index_columns)
    cols = "".join(
        f", {_access(f'e{c.level}', c.path) if c.path else f'e{c.level}'} AS {quote_ident(c.name)}" for c in view.columns
    )
    return f"SELECT {env}{idxs}{cols} FROM ({q}) AS t"
