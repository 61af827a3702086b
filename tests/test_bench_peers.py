"""The peer benchmarks run at a tiny size and print their figures: ``benchmarks/bench_real.py`` (real pairs against
the world) and ``benchmarks/bench_openclip.py`` (the trainer against open_clip_train's loop), both in
``run_all``'s lists. Throughput is never asserted here, only that every figure is printed and is a positive finite
number."""

import math
from pathlib import Path

import pandas as pd
import pytest

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"
SAMPLE_CSV = Path(__file__).resolve().parent / "data" / "openclipart" / "pairs.csv"
TINY = ["--batch-size", "16", "--steps", "2", "--warmup-steps", "1", "--repeats", "1"]


@pytest.fixture
def benchmarks(monkeypatch):
    monkeypatch.syspath_prepend(str(BENCHMARKS))  # the scripts import each other by module name


def figures(out: str) -> dict[str, str]:
    return dict(line.split() for line in out.splitlines() if len(line.split()) == 2)


def assert_positive(found: dict[str, str], names: tuple[str, ...]) -> None:
    for name in names:
        assert name in found, f"{name} not printed: {found}"
        value = float(found[name])
        assert math.isfinite(value) and value > 0, f"{name} {value}"


def test_both_are_in_make_bench_and_its_headline(benchmarks):
    import run_all

    scripts = [script for script, _ in run_all.SCRIPTS]
    assert {"bench_real.py", "bench_openclip.py"} <= set(scripts)
    assert {"real_over_world", "trainer_over_openclip"} <= set(run_all.HEADLINE)


def test_bench_real_times_a_csv_against_the_world_in_a_scratch_store(benchmarks, tmp_path, monkeypatch, capsys):
    import bench_real

    rows = pd.read_csv(SAMPLE_CSV, sep="\t").head(48)
    rows["filepath"] = [str(SAMPLE_CSV.parent / path) for path in rows["filepath"]]
    csv = tmp_path / "pairs.csv"
    rows.to_csv(csv, sep="\t", index=False)
    user_cache = tmp_path / "user_cache"
    monkeypatch.setenv("VLP_CACHE_DIR", str(user_cache))
    bench_real.main(["--csv", str(csv), *TINY])
    found = figures(capsys.readouterr().out)
    assert_positive(
        found,
        ("real_pairs", "real_decode_s", "real_samples_per_s", "world_samples_per_s", "real_over_world"),
    )
    assert int(found["real_pairs"]) == 48 and int(found["real_vocab_size"]) > int(found["world_vocab_size"])
    assert not user_cache.exists()  # the decode cache and the world went to the scratch store
    assert bench_real.os.environ["VLP_CACHE_DIR"] == str(user_cache)  # and the environment is as it was


def test_bench_openclip_times_open_clips_loop_and_the_trainer(benchmarks, capsys):
    import bench_openclip

    bench_openclip.main(TINY)
    assert_positive(
        figures(capsys.readouterr().out),
        (
            "openclip_loop_samples_per_s",
            "openclip_fused_samples_per_s",
            "trainer_samples_per_s",
            "trainer_over_openclip",
            "trainer_over_openclip_fused",
        ),
    )


def test_bench_runs_counts_each_second_once_and_projects_the_book(benchmarks):
    # ProtoCLIP's feature extraction and K-Means are parts of its episode start, the waits for a batch part of training:
    # a run's total counts them once; the
    # projection scales each record's phases by its kind's ratio (CLIP's for a method that has none)
    import bench_runs

    assert bench_runs.total_seconds({"training": 10.0, "episode_start": 3.0, "feature_extraction": 2.0}) == 13.0
    assert bench_runs.total_seconds({"training": 10.0, "data_loading": 1.0, "evaluation": 4.0}) == 14.0
    records = [
        {"config": {"method": m, "train_data": "world"}, "timings": {"training": t, "evaluation": e}}
        for m, t, e in (("clip", 20.0, 10.0), ("clip", 30.0, 10.0), ("clip", 10.0, 10.0), ("iclip", 60.0, 30.0))
    ]
    assert bench_runs.median_record(records, "clip")["timings"]["training"] == 20.0
    with pytest.raises(ValueError, match="no world run of dimefm"):
        bench_runs.median_record(records, "dimefm")
    ratios = {"clip": {"evaluation": 0.5, "training": 1.0}}
    # evaluation halved everywhere: (10 + 10 + 10 + 30) / 2 seconds saved = 0.5 minutes
    assert bench_runs.projected_minutes(records, ratios, 100.0) == pytest.approx(99.5)
