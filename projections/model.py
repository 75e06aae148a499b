"""The engine-independent model of a projection: snapshot tables, domain folds, flattened events.

One fold, three engines (DESIGN.md principle 5). A *domain projection* says

* which event types it folds (the registered :func:`events.base.domain_event` classes),
* the snapshot tables it produces — each a flat Arrow schema (scalar columns only) with a key,
* the Python reference: ``initial(stream_id)``, the actors' own ``evolve(state, event)`` and
  ``to_rows(stream_id, state)`` turning a folded state into rows of those tables,
* the SQL fold: one ``SELECT`` per table (plus helper views) written in the dialect subset that
  DuckDB and Spark SQL share, over the *flattened event views* described below.

Flattened event views (built by each engine from the event classes, never written by hand):

``events_env``
    the envelope of every event the SQL domains fold: ``position, stream_id, stream_version,
    recorded_at_ms, event_type, domain`` (one row per domain folding the event's type).
``event_streams``
    one row per (stream, domain) of ``events_env``: ``stream_id, domain, stream_version, last_position,
    event_count, last_recorded_at_ms`` (the ``streams`` snapshot table before any domain is left
    out). Each engine computes it once per snapshot: reading it instead of ``events_env`` saves
    a pass over every event.
``ev_<domain>_<Type>``
    one row per event of that type (``share.RecordsAcquired`` → ``ev_share_RecordsAcquired``):
    the envelope columns plus one column per scalar field; a nested dataclass field ``f`` becomes
    columns ``f__<sub>``; list fields are left out of this view.
``ev_<domain>_<Type>__<field>[__<field>…]``
    one row per element of a list/tuple field, at any depth: the envelope, the enclosing
    objects' scalars, ``idx`` (0-based; ``idx2``… for deeper lists) and the element's scalar
    fields (a list of scalars gives a column named ``value``; a list of homogeneous tuples such
    as ``tuple[tuple[int, int], ...]`` gives ``…__item`` with ``idx2`` the tuple position).
    Heterogeneous tuples and dicts are not flattened.

Shared SQL subset (both engines run the same text; types are spelled BIGINT, STRING, BOOLEAN, DOUBLE): CTEs, joins (also on inequalities),
``UNION ALL``, ``CASE``, ``COALESCE``, ``max_by``/``min_by``, ``count``/``sum``/``min``/``max``,
window functions (``row_number``, ``lag``, ``lead``, running ``sum``), ``CAST(x AS BIGINT)``.
No ``QUALIFY``, no list functions, no engine-specific JSON functions. Join hints
(``/*+ BROADCAST(alias) */``) are comments to DuckDB; Spark reads them, and needs them where a
join's small side is computed (an aggregate) and its large side is an event view: Spark sizes a
Parquet scan from its compressed files and would otherwise broadcast the millions of events.
"""

from __future__ import annotations

import dataclasses
import re
import types
import typing
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Mapping, Sequence

import pyarrow as pa
import pyarrow.compute as pc

__all__ = [
    "Column",
    "DomainProjection",
    "EventView",
    "SnapshotTable",
    "STREAMS_TABLE",
    "domain_projections",
    "event_views",
    "register_projection",
    "rows_to_table",
    "view_name",
]


# --------------------------------------------------------------------------- snapshot tables


@dataclass(frozen=True)
class SnapshotTable:
    """One snapshot table: a name, a flat Arrow ``schema`` and the ``key`` columns that identify a
    row (rows are sorted by key, so every engine's output is byte-for-byte comparable).

    The first column is always ``stream_id`` — the stream whose fold produced the row — so a
    divergence can be reported per stream.
    """

    name: str
    schema: pa.Schema
    key: tuple[str, ...]

    def __post_init__(self) -> None:
        if self.schema.names[0] != "stream_id":
            raise ValueError(f"snapshot table {self.name}: the first column must be stream_id")
        for k in self.key:
            if k not in self.schema.names:
                raise ValueError(f"snapshot table {self.name}: key column {k} not in schema")
        for f in self.schema:
            if pa.types.is_nested(f.type):
                raise ValueError(f"snapshot table {self.name}: column {f.name} is nested; tables are flat")


#: The table every projection run produces: one row per folded stream.
STREAMS_TABLE = SnapshotTable(
    "streams",
    pa.schema(
        [
            ("stream_id", pa.string()),
            ("domain", pa.string()),
            ("stream_version", pa.int64()),  # the last folded event's version
            ("last_position", pa.int64()),  # the last folded event's global position
            ("event_count", pa.int64()),
            ("last_recorded_at_ms", pa.int64()),
        ]
    ),
    ("stream_id", "domain"),
)


def rows_to_table(table: SnapshotTable, rows: Iterable[Mapping[str, Any]]) -> pa.Table:
    """An Arrow table of ``rows`` (dicts keyed by column name) with ``table``'s schema, sorted by
    its key. Raises ``pyarrow.ArrowInvalid``/``KeyError`` when a row does not fit the schema."""
    rows = list(rows)
    cols = {name: [r[name] for r in rows] for name in table.schema.names}
    t = pa.table(cols, schema=table.schema)
    return sort_table(table, t)


def sort_table(table: SnapshotTable, t: pa.Table) -> pa.Table:
    """``t`` cast to ``table``'s schema and sorted by its key (ascending, nulls first)."""
    t = t.select(table.schema.names).cast(table.schema)
    if t.num_rows == 0:
        return t
    order = pc.sort_indices(t, sort_keys=[(k, "ascending", "at_start") for k in table.key])
    return t.take(order)


# --------------------------------------------------------------------------- domain projections


@dataclass
class DomainProjection:
    """A domain's fold, in Python and in SQL.

    ``name``: the domain (``share``, ``share_group``, ``rlmm``, ``controller``).
    ``event_types``: the registered event classes it folds; events of other types are ignored.
    ``tables``: its snapshot tables (the generic :data:`STREAMS_TABLE` is added by the runners).
    ``initial(stream_id) -> state``, ``evolve(state, event) -> state``: the actors' own fold.
    ``to_rows(stream_id, state) -> {table name: [row dict, …]}``: the snapshot rows of one stream.
    ``sql_views``: ``[(view name, SELECT …), …]`` created in order before the tables.
    ``sql``: ``{table name: SELECT …}`` producing each table's columns (any order of rows);
    ``None`` when the domain has no SQL fold yet (the SQL engines then leave it out and say so);
    a table missing from it is produced by the Python engine only (and compared only there).
    ``decode_state(stream_id, bytes) -> state``: decodes a stored actor snapshot (for ``--verify``
    against the daemon); ``None`` when the domain's actors store none.
    ``from_rows(stream_id, {table: [rows]}) -> state``: rebuilds an actor state from snapshot rows
    (lets recovery use the SQL engines); ``None`` when not provided.
    ``encode_state(state) -> bytes``: the actor's snapshot encoding (recovery writes it).
    ``sql_refusal``: a ``SELECT`` (run after :attr:`sql_views`) returning one column ``reason``;
    when it returns a row, the log holds events the SQL fold cannot fold correctly (e.g. events
    recorded before the schema version that carries what the SQL needs), so the SQL engines leave
    the domain out and report the reason instead of producing wrong rows. ``None``: never refuses.
    """

    name: str
    event_types: tuple[type, ...]
    tables: tuple[SnapshotTable, ...]
    initial: Callable[[str], Any]
    evolve: Callable[[Any, Any], Any]
    to_rows: Callable[[str, Any], Mapping[str, Sequence[Mapping[str, Any]]]]
    sql: Mapping[str, str] | None
    sql_views: Sequence[tuple[str, str]] = ()
    decode_state: Callable[[str, bytes], Any] | None = None
    encode_state: Callable[[Any], bytes] | None = None
    from_rows: Callable[[str, Mapping[str, Sequence[Mapping[str, Any]]]], Any] | None = None
    description: str = ""
    sql_refusal: str | None = None
    #: ``evolve`` takes the envelope too: ``evolve(state, event, stream_version, position)``
    #: (folds that check version continuity, like the RLMM store's)
    evolve_with_envelope: bool = False
    #: the prefix of the streams this domain writes (``share-group:``, ``rlmm:``); verify reads
    #: only those streams' stored snapshots
    stream_prefix: str = ""

    def __post_init__(self) -> None:
        names = {t.name for t in self.tables}
        if self.sql is not None and not set(self.sql) <= names:
            raise ValueError(f"projection {self.name}: sql names tables that are not among {sorted(names)}")
        for t in self.tables:
            if not t.name.startswith(self.name + "_") and t.name != self.name:
                raise ValueError(f"projection {self.name}: table {t.name} must be prefixed with the domain name")

    @property
    def event_type_names(self) -> tuple[str, ...]:
        return tuple(c.event_type for c in self.event_types)

    @property
    def sql_tables(self) -> tuple[SnapshotTable, ...]:
        """The tables the SQL engines produce (those with a ``SELECT`` in :attr:`sql`)."""
        return tuple(t for t in self.tables if self.sql is not None and t.name in self.sql)

    def table(self, name: str) -> SnapshotTable:
        for t in self.tables:
            if t.name == name:
                return t
        raise KeyError(name)


_PROJECTIONS: dict[str, Callable[[], DomainProjection]] = {}


def register_projection(name: str, factory: Callable[[], DomainProjection]) -> None:
    """Register a domain projection under ``name``; ``factory`` builds it lazily (importing the
    domain's events only when a projection runs). Re-registering a name replaces it."""
    _PROJECTIONS[name] = factory


def domain_projections(names: Sequence[str] | None = None) -> list[DomainProjection]:
    """The registered projections (only ``names`` if given), built; a domain whose events are not
    importable yet is left out. Raises ``KeyError`` for an unknown name in ``names``."""
    from projections import domains  # noqa: F401  (registers the built-in domains)

    out = []
    for name in names if names is not None else sorted(_PROJECTIONS):
        factory = _PROJECTIONS[name]
        try:
            out.append(factory())
        except DomainNotAvailable:
            if names is not None:
                raise
    return out


class DomainNotAvailable(ImportError):
    """A domain's events or evolve are not importable (yet); its projection is skipped."""


# --------------------------------------------------------------------------- flattened event views

_SQL_NAME = re.compile(r"[^A-Za-z0-9_]")


def view_name(event_type: str, list_field: str | None = None) -> str:
    """The flattened view of ``event_type`` (``share.RecordsAcquired`` → ``ev_share_RecordsAcquired``),
    or of one of its list fields (``…__ranges``)."""
    base = "ev_" + _SQL_NAME.sub("_", event_type)
    return base if list_field is None else f"{base}__{list_field}"


@dataclass(frozen=True)
class Column:
    """A flattened scalar column: ``name`` in the view, ``path`` of JSON keys relative to the
    object at nesting ``level`` (0: the event, 1: an element of the first list, …), Arrow ``type``."""

    name: str
    path: tuple[str, ...]
    type: pa.DataType
    level: int = 0


@dataclass(frozen=True)
class EventView:
    """How to flatten one event type (or one list field of it, at any depth) into a view.

    ``list_path`` is ``()`` for the event's own view, else the JSON paths of the nested lists
    whose elements become rows (``(("members",), ("partitions",))``: one row per partition of
    each member). ``columns`` hold the scalars of the event (level 0) and of every enclosing
    element (levels 1…); the index of the element in each list is column ``idx`` (level 1),
    ``idx2`` (level 2), ….
    """

    name: str
    event_type: str
    list_path: tuple[tuple[str, ...], ...]
    columns: tuple[Column, ...]

    @property
    def depth(self) -> int:
        return len(self.list_path)

    @property
    def index_columns(self) -> tuple[str, ...]:
        return tuple("idx" if i == 1 else f"idx{i}" for i in range(1, self.depth + 1))


ENVELOPE = (
    ("position", pa.int64()),
    ("stream_id", pa.string()),
    ("stream_version", pa.int64()),
    ("recorded_at_ms", pa.int64()),
)


def _unwrap_optional(tp: Any) -> Any:
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        if len(args) == 1:
            return args[0]
        raise TypeError(f"union {tp} is not flattenable")
    return tp


_SCALARS: dict[Any, pa.DataType] = {
    int: pa.int64(),
    str: pa.string(),
    bool: pa.bool_(),
    float: pa.float64(),
    bytes: pa.string(),  # msgspec encodes bytes as base64 text
}


def _is_list(tp: Any) -> bool:
    return typing.get_origin(tp) in (tuple, list, typing.Sequence, Sequence)


def _list_item(tp: Any) -> Any:
    args = [a for a in typing.get_args(tp) if a is not Ellipsis]
    if not args:
        raise TypeError(f"list type {tp} needs an item type")
    if len(set(args)) != 1:
        raise TypeError(f"heterogeneous tuple {tp} is not flattenable")
    return args[0]


def _scalar_columns(cls: Any, prefix: tuple[str, ...] = ()) -> tuple[list[tuple[tuple[str, ...], pa.DataType]], list[tuple[tuple[str, ...], Any]]]:
    """Scalar leaves of dataclass ``cls`` as ``(path, type)`` (nested dataclasses followed) and its
    list fields as ``(path, item type)``."""
    hints = typing.get_type_hints(cls)
    cols: list[tuple[tuple[str, ...], pa.DataType]] = []
    lists: list[tuple[tuple[str, ...], Any]] = []
    for f in dataclasses.fields(cls):
        tp = _unwrap_optional(hints[f.name])
        path = prefix + (f.name,)
        scalar = _scalar_type(tp)
        if scalar is not None:
            cols.append((path, scalar))
        elif dataclasses.is_dataclass(tp):
            sub_cols, sub_lists = _scalar_columns(tp, path)
            cols.extend(sub_cols)
            lists.extend(sub_lists)
        elif _is_list(tp):
            lists.append((path, _unwrap_optional(_list_item(tp))))
        # dicts and exotic types are not flattened; SQL folds must not need them
    return cols, lists


def _scalar_type(tp: Any) -> pa.DataType | None:
    if tp in _SCALARS:
        return _SCALARS[tp]
    if isinstance(tp, type):
        if issubclass(tp, bool):
            return pa.bool_()
        if issubclass(tp, str):  # StrEnum
            return pa.string()
        if issubclass(tp, int):  # IntEnum
            return pa.int64()
    return None


def event_views(cls: type) -> list[EventView]:
    """The flattened views of event class ``cls``: its own view and one per list field, at any
    depth of nesting; each list view also carries the scalars of the enclosing objects (a name
    already taken is prefixed with its list field: ``members__member_id``). Raises ``TypeError``
    for a field type the codec could not have encoded."""
    etype = cls.event_type  # type: ignore[attr-defined]
    views: list[EventView] = []

    def walk(item: Any, level: int, list_path: tuple[tuple[str, ...], ...], inherited: tuple[Column, ...]) -> None:
        taken = {c.name for c in inherited} | {"idx"} | {f"idx{i}" for i in range(2, level + 2)}
        if level > 0 and _is_list(item):
            # a list of lists (e.g. ``tuple[tuple[int, int], ...]``): the element is itself the
            # next list; its view has the enclosing scalars and the two indexes
            try:
                sub = _unwrap_optional(_list_item(item))
            except TypeError:
                return  # heterogeneous tuples are not flattenable
            walk(sub, level + 1, list_path + ((),), inherited)
            return
        if dataclasses.is_dataclass(item):
            leaves, lists = _scalar_columns(item)
        else:
            scalar = _scalar_type(item)
            if scalar is None:
                return
            leaves, lists = [((), scalar)], []
        own: list[Column] = []
        for path, t in leaves:
            name = "__".join(path) if path else "value"
            if name in taken and level > 0:
                name = ("__".join(list_path[-1]) or "item") + "__" + name
            own.append(Column(name, path, t, level))
        cols = inherited + tuple(own)
        name = view_name(etype, "__".join("__".join(p) if p else "item" for p in list_path)) if list_path else view_name(etype)
        views.append(EventView(name, etype, list_path, cols))
        for path, sub in lists:
            walk(sub, level + 1, list_path + (path,), cols)

    walk(cls, 0, (), ())
    return views


def view_schema(view: EventView) -> pa.Schema:
    """The Arrow schema of a flattened view (envelope, index columns, then the scalars)."""
    fields = [pa.field(n, t) for n, t in ENVELOPE]
    fields += [pa.field(n, pa.int64()) for n in view.index_columns]
    fields += [pa.field(c.name, c.type) for c in view.columns]
    return pa.schema(fields)


def sql_projections(projections: Sequence[DomainProjection]) -> tuple[list[DomainProjection], list[str]]:
    """``(projections with a SQL fold, names of those without one)``. Several projections may fold
    the same event type (the group deletion ends both the membership and the share-partitions):
    the SQL engines then give its envelope one ``events_env`` row per domain, and stage its
    flattened views once."""
    with_sql = [p for p in projections if p.sql is not None]
    return with_sql, [p.name for p in projections if p.sql is None]


def domains_by_event_type(projections: Sequence[DomainProjection]) -> dict[str, list[str]]:
    """Event type → the names of the projections that fold it (in the given order)."""
    out: dict[str, list[str]] = {}
    for p in projections:
        for t in p.event_type_names:
            if p.name not in out.setdefault(t, []):
                out[t].append(p.name)
    return out
