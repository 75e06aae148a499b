"""Reusable SQL patterns for the domains' folds, in the dialect subset DuckDB and Spark share.

The main one is the *range fold*: events that carry offset ranges ``[first_offset, last_offset]``
(inclusive, Kafka's state-batch convention) are cut into elementary intervals at every range
boundary; each interval's attributes are aggregates over the events covering it (the last one's
state, a count of acquisitions, …); adjacent intervals with equal attributes are merged back into
maximal ranges (gaps and islands). This is the SQL twin of a Python fold that keeps per-offset (or
per-batch) state, and its output is normalised the same way :func:`merge_ranges` normalises the
Python side, so both give identical rows.

NULL care: ``max_by(x, position)`` skips NULL ``x`` in DuckDB but not in Spark; wrap nullable
values with :func:`last_value` instead.
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping, Sequence

__all__ = ["last_value", "merge_ranges", "quote_ident", "range_state_sql", "sql_literal"]


def sql_literal(text: str) -> str:
    """``text`` as a standard SQL string literal (``'…'``, quotes doubled): DuckDB's and
    PostgreSQL's spelling (Spark's, with backslash escapes, is :mod:`projections.spark_fold`'s)."""
    return "'" + text.replace("'", "''") + "'"


def quote_ident(name: str) -> str:
    """``name`` as a standard SQL quoted identifier (``"…"``, quotes doubled)."""
    return '"' + name.replace('"', '""') + '"'


def last_value(expr: str, order: str = "position", sql_type: str = "VARCHAR") -> str:
    """An aggregate giving ``expr`` of the row with the greatest ``order``, NULL included, the same
    in both engines: NULL is mapped to a sentinel (``'<null>'``, or the smallest BIGINT + 1) for
    ``max_by`` and back."""
    if sql_type == "VARCHAR":
        return f"NULLIF(max_by(COALESCE({expr}, '<null>'), {order}), '<null>')"
    if sql_type == "BIGINT":
        return f"NULLIF(max_by(COALESCE({expr}, -9223372036854775807), {order}), -9223372036854775807)"
    raise ValueError(f"unsupported sql_type {sql_type}")


def range_state_sql(
    events_view: str,
    *,
    state: str,
    attributes: Mapping[str, str],
    columns: Sequence[str],
    keys: Sequence[str] = ("stream_id",),
    where: str | None = None,
    select_keys: Sequence[str] | None = None,
    extra_points: str | None = None,
) -> str:
    """A ``SELECT`` folding the range events of ``events_view`` into maximal ranges.

    ``events_view`` has ``keys``, ``position``, ``first_offset``, ``last_offset`` (inclusive) and
    whatever the aggregates read. ``state`` is the aggregate giving an interval's ``state`` column;
    ``attributes`` map further output columns to aggregates over the covering events;
    ``columns`` lists the non-key output columns in order (``state`` and the attributes).
    ``where`` filters the aggregated intervals (e.g. ``first_offset >= start_offset``), seeing
    ``lo``/``hi`` and the aggregates. ``extra_points`` is a ``SELECT`` of ``keys`` and ``p``:
    further interval boundaries (an offset the ``where`` filter cuts at, so no interval straddles
    it). Output: ``keys, first_offset, last_offset, columns…``.
    """
    k = ", ".join(keys)
    sk = ", ".join(select_keys or keys)
    on = " AND ".join(f"s.{c} = e.{c}" for c in keys)
    aggs = ", ".join([f"{state} AS state"] + [f"{expr} AS {name}" for name, expr in attributes.items()])
    same = " AND ".join(
        ["lag(hi) OVER w = lo - 1"] + [f"lag({c}) OVER w IS NOT DISTINCT FROM {c}" for c in columns]
    )
    cols = ", ".join(columns)
    filt = f"WHERE {where}" if where else ""
    extra = f"\n  UNION\n  SELECT {k}, p FROM ({extra_points}) AS xp" if extra_points else ""
    return f"""
WITH ev AS (SELECT * FROM {events_view}),
pts AS (
  SELECT {k}, first_offset AS p FROM ev
  UNION
  SELECT {k}, last_offset + 1 AS p FROM ev{extra}
),
seg AS (
  SELECT {k}, p AS lo, lead(p) OVER (PARTITION BY {k} ORDER BY p) - 1 AS hi FROM pts
),
cov AS (
  SELECT s.lo AS lo, s.hi AS hi, e.*
  FROM seg s JOIN ev e ON {on} AND e.first_offset <= s.lo AND e.last_offset >= s.hi
  WHERE s.hi IS NOT NULL
),
agg AS (
  SELECT {k}, lo, hi, {aggs} FROM cov GROUP BY {k}, lo, hi
),
kept AS (SELECT * FROM agg {filt}),
flag AS (
  SELECT *, CASE WHEN {same} THEN 0 ELSE 1 END AS brk
  FROM kept
  WINDOW w AS (PARTITION BY {k} ORDER BY lo)
),
grp AS (
  SELECT *, sum(brk) OVER (PARTITION BY {k} ORDER BY lo ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS g
  FROM flag
)
SELECT {sk}, min(lo) AS first_offset, max(hi) AS last_offset, {cols}
FROM grp GROUP BY {k}, g, {cols}
"""


def merge_ranges(
    items: Iterable[tuple[int, int, Mapping[str, Any]]], base: Mapping[str, Any]
) -> list[dict[str, Any]]:
    """Python twin of the merge step: ``items`` are ``(first_offset, last_offset, attributes)``
    (inclusive, non-overlapping); returns row dicts ``{**base, first_offset, last_offset,
    **attributes}`` with adjacent ranges of equal attributes merged, in offset order."""
    rows: list[dict[str, Any]] = []
    for first, last, attrs in sorted(items, key=lambda x: x[0]):
        prev = rows[-1] if rows else None
        if prev is not None and prev["last_offset"] + 1 == first and all(prev[k] == v for k, v in attrs.items()):
            prev["last_offset"] = last
            continue
        rows.append({**base, "first_offset": first, "last_offset": last, **attrs})
    return rows
