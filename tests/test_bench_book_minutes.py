"""``benchmarks/bench_book_minutes.py``: which kind of run a release record is (a claim's, a claim's row trained longer,
or another), on configs built by the real config factory; and the script on the shipped release, which counts every
record once."""

from pathlib import Path

import pytest

from vlp_lib import experiment, runs

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"


@pytest.fixture
def book_minutes(monkeypatch):
    monkeypatch.syspath_prepend(str(BENCHMARKS))  # the scripts import each other by module name
    import bench_book_minutes

    return bench_book_minutes


def claim(**kw):
    return experiment.make_config("laptop", "clip", **{"train_size": 20480, "epochs": 1.0, **kw}).to_dict()


def test_a_run_longer_only_in_its_amount_is_the_claims_longer_run(book_minutes):
    reference = claim(seed=1)
    claims = {runs.config_hash(reference): reference}
    assert book_minutes.is_longer(claim(seed=1, epochs=4.0), claims)
    assert book_minutes.is_longer({**claim(seed=1, epochs=3.0), "eval_tasks": ["shapes10"]}, claims)
    assert not book_minutes.is_longer(claim(seed=1, epochs=2.0), claims)  # a curve's point, not the rule's 3x-4x
    assert not book_minutes.is_longer(claim(seed=2, epochs=4.0), claims)  # another seed's
    assert not book_minutes.is_longer(claim(seed=1, epochs=4.0, lr=0.001), claims)  # differs in more than the amount


def test_every_record_of_the_release_is_counted_once(book_minutes, monkeypatch, capsys):
    # the claims' configs take the chapters' planning (seconds); without them every training run is "other"
    monkeypatch.setattr(book_minutes, "claim_configs", dict)
    book_minutes.main()
    found = {name: float(value) for name, value in (line.split() for line in capsys.readouterr().out.splitlines())}
    kinds = ("claim", "longer", "untrained", "other")
    assert sum(found[f"minutes_{k}"] for k in kinds) == pytest.approx(found["minutes_records"], abs=0.2)
    release = Path(__file__).resolve().parent.parent / "release" / "records"
    assert found["records_untrained"] == len(list((release / "untrained").glob("*.json.gz")))
    assert found["records_other"] == len(list((release / "train").glob("*.json.gz")))
    assert found["records_claim"] == found["records_longer"] == 0
    assert 0 <= found["untrained_repeated_min"] <= found["minutes_untrained"]
