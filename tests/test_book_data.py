"""What a page reads on the reader's own data (vlp_lib.book.data): claims on the world's averages move to the headline
image-folder task, claims on metrics the data cannot give are "not run" with the reason, the world unchanged; and the
committed real test data (Open Clip Art drawings) makes valid configs."""

from pathlib import Path

import pytest

from vlp_lib import experiment
from vlp_lib.book import claims, data

REAL = Path(__file__).resolve().parent / "data" / "openclipart"
PAIRS = str(REAL / "pairs.csv")
CATEGORIES = f"folder:{REAL / 'categories'}"


def _claim(id_, kind="direction", metric="avg3/linear", **kw):
    return claims.Claim(id_, "text", "Table 1", kind, metric, "+1.0", better="a", reference="b", **kw)


@pytest.fixture(scope="module")
def real_config():
    return experiment.make_config("smoke", train_data=PAIRS, eval_tasks=[CATEGORIES])


@pytest.fixture(scope="module")
def world_config():
    return experiment.make_config("smoke")


def test_the_committed_real_data_makes_a_config(real_config):
    assert real_config.train_size == 512 and real_config.tokenizer == "bpe"
    assert data.headline_task(real_config) == "categories"
    assert not data.is_world(real_config) and not data.has_world_retrieval(real_config)


def test_world_claims_are_unchanged(world_config):
    given = [_claim("a"), _claim("b", metric="retrieval/mean_recall"), _claim("c", metric="shapes10/knn")]
    assert data.claims_on_data(given, world_config) == given


def test_a_world_run_that_left_an_evaluation_out_does_not_claim_it():
    narrow = experiment.make_config("smoke", eval_tasks=["shapes10"])
    given = [
        _claim("avg", metric="avg3/linear"),
        _claim("task", metric="shapes10/knn"),
        _claim("ret", metric="retrieval/mean_recall"),
        _claim("own", metric="proxy/top1"),  # a chapter's own record, not the suite's: left to the chapter
    ]
    out = {c.id: c for c in data.claims_on_data(given, narrow)}
    assert out["avg"].kind == "not_run" and "avg3/linear" in out["avg"].reason
    assert out["task"] == given[1] and out["ret"] == given[2] and out["own"] == given[3]


def test_averages_move_to_the_headline_task_and_the_rest_is_not_run(real_config):
    given = [
        _claim("avg", metric="avg3/linear"),
        _claim("ret", metric="retrieval/mean_recall"),
        _claim("world", metric="shapes10/knn"),
        _claim("inter", kind="interaction", terms=((1, "a", "avg3/knn"), (-1, "b", "avg7/zeroshot_top1"))),
        _claim("own", metric="categories/ami"),
    ]
    out = {c.id: c for c in data.claims_on_data(given, real_config)}
    assert out["avg"].kind == "direction" and out["avg"].metric == "categories/linear"
    assert out["inter"].terms == ((1, "a", "categories/knn"), (-1, "b", "categories/zeroshot_top1"))
    assert out["own"] == given[-1]
    assert out["ret"].kind == "not_run" and "retrieval" in out["ret"].reason
    assert out["world"].kind == "not_run" and "shapes10" in out["world"].reason
    # and the judged line says why, where the number would be
    line = claims.judge(out["ret"], {}, "paper")
    assert line["verdict"] == "not run" and line["book_value"].startswith("not run: retrieval/mean_recall")


def test_a_metric_of_no_group_or_task_is_not_moved(real_config):
    # avg3 averages zero-shot top-1/top-5, linear and k-NN only: its ARI is no claim's and not moved
    assert data.metric_on_data("avg3/ari", real_config) is None
    assert data.metric_on_data("robust4/zeroshot_top1", real_config) == "categories/zeroshot_top1"


def test_pages_list_the_runs_own_metrics(real_config, world_config):
    keys = data.metric_keys(real_config)
    assert keys[0] == "categories/zeroshot_top1" and all(k.startswith("categories/") for k in keys)
    world = data.metric_keys(world_config)
    assert "avg3/linear" in world and "retrieval/mean_recall" in world and "shapes10/knn" in world
    assert data.figure_task(real_config, "shapes10") == CATEGORIES
    assert data.figure_task(world_config, "shapes10") == "shapes10"


def test_the_page_names_its_data(real_config, world_config):
    text = data.describe(real_config, {"teacher": "MiniLM"})
    assert "512 image-text pairs from `pairs.csv`" in text and "`categories`" in text and "- teacher: MiniLM" in text
    assert data.HEADLINE_RULE in text
    assert "generated world" in data.describe(world_config) and data.HEADLINE_RULE not in data.describe(world_config)
