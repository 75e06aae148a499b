"""The Spark engine's staging (``projections.spark_fold._Stage``): which JSON fields it parses, the
views it builds over the staged events, the helper views it computes once.

The folds' results are compared with the Python engine in ``test_differential``; these tests pin
the pieces that make the Spark fold cheaper without changing what the SQL sees.
"""

from __future__ import annotations

import pyarrow as pa
import pytest

from projections.model import domain_projections, view_schema
from projections.spark_fold import _reused_views, _Stage
from tests.projections import toy


def test_share_group_parses_only_the_fields_its_sql_names():
    st = _Stage(domain_projections(["share_group"]))
    msu = st.schemas["share_group.MemberSubscriptionUpdated"]
    # group_id is the stream's, subscribed_topic_names has no view the SQL reads
    assert set(msu) == {"member_id", "client_id", "client_host", "rack_id"}
    mar = st.schemas["share_group.MemberAssignmentReconciled"]
    assert "partitions" in mar and "group_id" not in mar
    # a type whose view reads the envelope only is not parsed at all
    assert "share_group.ShareGroupDeleted" not in st.schemas
    views = {v.name: (v, wanted) for v, wanted in st.views}
    v, wanted = views["ev_share_group_MemberSubscriptionUpdated"]
    sql = st.view_select(v, wanted)
    assert "CAST(NULL AS STRING) AS `group_id`" in sql  # pruned, still in the view


def test_a_star_select_keeps_every_column():
    # the RLMM SQL selects ``a.*`` from its flattened views: nothing of those may be pruned
    st = _Stage(domain_projections(["rlmm"]))
    starred = [(v, wanted) for v, wanted in st.views if v.name in ("ev_rlmm_SegmentMetadataAdded", "ev_rlmm_SegmentMetadataUpdated")]
    assert len(starred) == 2
    for v, wanted in starred:
        assert wanted == v.columns


def test_helper_views_read_by_several_queries_are_computed_once():
    (sg,) = domain_projections(["share_group"])
    assert _reused_views(sg) == {"sg_deleted", "sg_member_current"}
    # sg_member_life is read by sg_member_current only
    assert "sg_member_life" not in _reused_views(sg)


@pytest.mark.spark
@pytest.mark.parametrize("names", [["share_group"], ["share"], ["rlmm"], ["controller"], None])
def test_staged_views_have_the_model_schemas(spark_session, names):
    """Every view the stage builds has the columns and types of ``view_schema`` (the DuckDB
    engine stages the same), list views included, pruned columns included."""
    ps = [toy.projection()] if names is None else domain_projections(names)
    st = _Stage(ps)
    raw = spark_session.createDataFrame(
        [], "position BIGINT, stream_id STRING, stream_version BIGINT, event_type STRING, "
        "schema_version BIGINT, recorded_at_ms BIGINT, data STRING"
    )
    raw.createOrReplaceTempView("shoal_raw_t")
    spark_session.sql(st.w_select("shoal_raw_t")).createOrReplaceTempView("shoal_w_t")
    assert st.views
    for v, wanted in st.views:
        got = spark_session.sql(st.view_select(v, wanted, "shoal_w_t")).toArrow()
        want = view_schema(v)
        assert got.schema.names == want.names, v.name
        assert [f.type for f in got.schema] == [f.type for f in want], v.name
    env = spark_session.sql(st.env_select("shoal_w_t")).toArrow()
    assert env.schema.names == ["position", "stream_id", "stream_version", "recorded_at_ms", "event_type", "domain"]
    assert env.schema.field("event_type").type == pa.string()
