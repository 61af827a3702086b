"""The release: shipping executed pages and records, installing them with provenance, checking them whole, and
comparing a re-make with them; on fake pages and records (the real release is tested when present)."""

import ast
import datetime
import functools
import gzip
import json

import pytest

from vlp_lib import experiment, runs
from vlp_lib.book import release
from vlp_lib.book.pages import CHAPTERS
from vlp_lib.papers import chapters as paper_chapters
from vlp_lib.papers.headtohead.book import chapter as headtohead
from vlp_lib.papers.iclip.book import chapter as iclip
from vlp_lib.paths import results_dir

SHIPPED = ["world", "baseline", "iclip", "scorecard"]  # the core's chapters and one paper's


def _page(path, scale="laptop", title="# A page"):
    nb = {
        "cells": [
            {"cell_type": "markdown", "metadata": {}, "source": title},
            {"cell_type": "code", "metadata": {}, "source": "x = 1", "outputs": [], "execution_count": 1},
        ],
        "metadata": {"papermill": {"parameters": {"scale": scale}}},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    path.write_text(json.dumps(nb))


def _executed(tmp_path, scale="laptop"):
    executed = tmp_path / "executed"
    executed.mkdir(parents=True)
    for notebooks in CHAPTERS.values():
        for nb in notebooks:
            _page(executed / f"{nb}.ipynb", scale)
    (executed / ".times.json").write_text(json.dumps({"scale": scale, "seconds": {"iclip_ratio": 600.0}}))
    return executed


@pytest.fixture(autouse=True)
def committed(monkeypatch):
    """The tests' releases are made from the working tree as it is (``release.make`` refuses uncommitted code: tested
    on its own below)."""
    monkeypatch.setattr(release, "uncommitted", lambda chapter: [])


def _store_one_iclip_run(seed=0, value=0.3):
    config = iclip.config(iclip.ICLIP, "laptop", seed)
    runs.save(experiment.RUN_KIND, config.to_dict(), {"avg3/linear": value}, {}, paper=experiment.paper(config))


def test_make_check_install(tmp_path):
    executed, target = _executed(tmp_path), tmp_path / "release"
    with pytest.raises(ValueError, match="no record"):
        release.make(["iclip"], "laptop", executed, target)  # nothing made by today's code for iCLIP
    _store_one_iclip_run()
    manifest = release.make(SHIPPED, "laptop", executed, target)
    entry = manifest["chapters"]["iclip"]
    assert entry["minutes"] == {"iclip_ratio": 10.0} and entry["seeds"] == iclip.resolve_seeds("laptop", None)
    assert entry["fingerprints"] == {"core": runs.code_fingerprint(None), "iclip": runs.code_fingerprint("iclip")}
    assert len(manifest["records"]) == 1
    missing = [c for c in CHAPTERS if c not in SHIPPED]
    assert release.check(target) == [f"chapters not in the release: {missing}"]
    assert release.check(target, complete=False) == [] and release.missing_chapters(target) == missing
    # installed pages carry their provenance; a page executed here is kept
    book = tmp_path / "book"
    book.mkdir()
    _page(book / "iclip_unicl.ipynb", title="# executed here")
    installed = release.install(target, book)
    assert "iclip_unicl" not in installed and "iclip_ratio" in installed
    page = json.loads((book / "iclip_ratio.ipynb").read_text())
    assert page["metadata"][release.RELEASE_MARK] and "Numbers from the book's release" in page["cells"][1]["source"]
    assert "this page took 10.0 min" in page["cells"][1]["source"] and "warning" not in page["cells"][1]["source"]
    assert json.loads((book / "iclip_unicl.ipynb").read_text())["cells"][0]["source"] == "# executed here"
    assert "iclip_ratio" in release.install(target, book)  # an installed page is replaced by the release's


def test_check_finds_what_is_wrong(tmp_path):
    executed, target = _executed(tmp_path), tmp_path / "release"
    _store_one_iclip_run()
    manifest = release.make(SHIPPED, "laptop", executed, target)
    rel = next(iter(manifest["records"]))
    record = json.loads(gzip.decompress((target / rel).read_bytes()))
    record["metrics"]["avg3/linear"] = 0.99  # altered after shipping
    (target / rel).write_bytes(gzip.compress(json.dumps(record).encode()))
    manifest["records"][rel] = release.file_sha256(target / rel)  # even with the manifest updated: its own checksum
    (target / release.MANIFEST).write_text(json.dumps(manifest))
    assert any("not whole" in p for p in release.check(target))
    (target / release.PAGES / "iclip_ratio.ipynb").unlink()
    assert any("iclip_ratio missing" in p for p in release.check(target))
    with pytest.raises(ValueError, match="scale"):
        release.make(["iclip"], "smoke", _executed(tmp_path / "other", "smoke"), target)


def test_a_remade_chapter_leaves_its_old_runs_behind(tmp_path, monkeypatch):
    """Shipped again after the code of its scopes changed, a chapter's old records (made by code no chapter is shipped
    with, backing no page) leave the release; a record that a chapter not shipped again still rests on stays. check
    reports a record no chapter of the release was shipped with."""
    executed, target = _executed(tmp_path), tmp_path / "release"
    _store_one_iclip_run(seed=0)
    clip = experiment.make_config("laptop")
    runs.save(experiment.RUN_KIND, clip.to_dict(), {"avg3/linear": 0.5}, {}, paper=experiment.paper(clip))
    before = release.make(SHIPPED, "laptop", executed, target)
    assert len(before["records"]) == 2
    real = runs.code_fingerprint
    changed = {None: "c0de" * 4, "core": "c0de" * 4, "iclip": "1c11" * 4}  # the core and iCLIP edited since
    monkeypatch.setattr(runs, "code_fingerprint", lambda paper=None: changed.get(paper) or real(paper))
    _store_one_iclip_run(seed=1)  # the chapter re-made by today's code
    after = release.make(["iclip"], "laptop", executed, target)
    kept = set(before["records"]) & set(after["records"])
    assert len(after["records"]) == 2 and len(kept) == 1  # iCLIP's old run left; the core run stays for the baseline
    (gone,) = set(before["records"]) - kept
    assert not (target / gone).exists()
    assert release.check(target, complete=False) == []
    manifest = json.loads((target / release.MANIFEST).read_text())
    manifest["chapters"]["baseline"]["fingerprints"]["core"] = "c0de" * 4  # the baseline re-shipped, its run not
    manifest["chapters"]["world"]["fingerprints"]["core"] = "c0de" * 4
    manifest["chapters"]["scorecard"]["fingerprints"]["core"] = "c0de" * 4
    (target / release.MANIFEST).write_text(json.dumps(manifest))
    (problem,) = release.check(target, complete=False)
    assert "backs no page" in problem and "'core'" in problem


def test_repage_ships_pages_executed_again_from_the_releases_own_records(tmp_path, monkeypatch):
    """A page whose prose or table changed, its runs not: executed again on the release's records and shipped, the
    chapter's records, minutes, date and machine kept, HEAD its commit. Pages that make a record, and a chapter whose
    code changed since its records, are refused, nothing shipped."""
    executed, target = _executed(tmp_path), tmp_path / "release"
    _store_one_iclip_run()
    before = release.make(SHIPPED, "laptop", executed, target)
    before["chapters"]["iclip"]["commit"] = "0" * 40  # made at a commit the pages' code has left behind
    (target / release.MANIFEST).write_text(json.dumps(before))
    stores = []

    def execute(names, scale, executed_dir, scorecard=True):  # the pages as the book-side code draws them now
        assert not scorecard  # the chapter's own pages: the scorecard, which it would not ship, is not executed
        stores.append(results_dir())
        executed_dir.mkdir(parents=True, exist_ok=True)
        for nb in names:
            _page(executed_dir / f"{nb}.ipynb", scale, title="# drawn again")

    monkeypatch.setattr(release, "execute", execute)
    after = release.repage(["iclip"], target)
    assert stores and stores[0] != results_dir()  # a scratch store, the working one untouched
    title = {
        nb: json.loads((target / release.PAGES / f"{nb}.ipynb").read_text())["cells"][0]["source"]
        for nb in CHAPTERS["iclip"] + CHAPTERS["baseline"]
    }
    assert all(title[nb] == "# drawn again" for nb in CHAPTERS["iclip"]) and title["clip_baseline"] == "# A page"
    entry, old = after["chapters"]["iclip"], before["chapters"]["iclip"]
    assert entry["commit"] == release.head_commit() and entry["executed"] == datetime.date.today().isoformat()
    assert {**entry, "commit": old["commit"]} == {
        **old,
        "executed": entry["executed"],
    }  # its runs' date and machine kept
    assert "executed again on the release's records on" in release.provenance({**entry, "date": "2026-01-01"})
    assert after["records"] == before["records"] and release.check(target, complete=False) == []

    # one page of a chapter: only it is executed and shipped, its chapter's entry updated as for the whole chapter
    one, other = CHAPTERS["iclip"][:2]
    executed_names = []

    def one_page(names, scale, executed_dir, scorecard=True):
        executed_names.append(list(names))
        executed_dir.mkdir(parents=True, exist_ok=True)
        for nb in names:
            _page(executed_dir / f"{nb}.ipynb", scale, title="# this page again")

    monkeypatch.setattr(release, "execute", one_page)
    assert release.repage([one], target)["chapters"]["iclip"] == entry and executed_names == [[one]]
    shipped_title = {
        nb: json.loads((target / release.PAGES / f"{nb}.ipynb").read_text())["cells"][0]["source"]
        for nb in (one, other)
    }
    assert shipped_title == {one: "# this page again", other: "# drawn again"}

    # a page that loads a model whose checkpoint is not here trains its run again, rewriting its record: with the
    # release's numbers, the pages are executed again on the checkpoint now made and shipped
    calls = []

    def checkpoint_remade(names, scale, executed_dir, scorecard=True):
        calls.append(names)
        if len(calls) == 1:
            (path,) = results_dir().glob("train/*.json")
            path.write_text(json.dumps({**json.loads(path.read_text()), "timings": {"train_s": 1.0}}))
        execute(names, scale, executed_dir, scorecard)

    monkeypatch.setattr(release, "execute", checkpoint_remade)
    assert release.repage(["iclip"], target)["records"] == before["records"] and len(calls) == 2
    assert calls == [CHAPTERS["iclip"]] * 2
    shipped = (target / release.MANIFEST).read_text()
    # pages that make a run the release lacks, or a number it does not hold, are refused, nothing shipped
    for change, message in [
        (lambda: _store_one_iclip_run(seed=7), "made 1 records"),
        (lambda: _store_one_iclip_run(value=0.9), "avg3/linear: release 0.3, re-made 0.9"),
    ]:

        def changing(names, scale, executed_dir, scorecard=True, change=change):
            change()
            execute(names, scale, executed_dir, scorecard)

        monkeypatch.setattr(release, "execute", changing)
        with pytest.raises(ValueError, match=message):
            release.repage(["iclip"], target)
        assert (target / release.MANIFEST).read_text() == shipped
    real = runs.code_fingerprint
    monkeypatch.setattr(runs, "code_fingerprint", lambda paper=None: "1c11" * 4 if paper == "iclip" else real(paper))
    with pytest.raises(ValueError, match="re-make it"):
        release.repage(["iclip"], target)
    with pytest.raises(ValueError, match="not in the release"):
        release.repage(["dimefm"], target)


def test_a_measurement_of_the_machine_stays_shipped_after_the_code_changed(tmp_path, monkeypatch):
    """The head to head's calibration is read whatever code stored it (it chose the equal-seconds runs): a release made
    after the code changed ships it and keeps it, where a run made by the old code leaves."""
    executed, target = _executed(tmp_path), tmp_path / "release"
    _store_one_iclip_run(seed=0)
    headtohead.save_calibration("laptop", [0], headtohead.Calibration({"clip": 1e-3, "iclip": 1.1e-3}, 10.0))
    before = release.make(["iclip", "headtohead", "drawings"], "laptop", executed, target)
    (calibration,) = [key for key in before["records"] if key.startswith(f"{release.RECORDS}/headtohead_calibration/")]
    real = runs.code_fingerprint
    changed = {None: "c0de" * 4, "core": "c0de" * 4, "iclip": "1c11" * 4, "headtohead": "4242" * 4}
    monkeypatch.setattr(runs, "code_fingerprint", lambda paper=None: changed.get(paper) or real(paper))
    _store_one_iclip_run(seed=1)  # the chapter re-made by today's code; the calibration is not measured again
    after = release.make(["iclip", "headtohead", "drawings"], "laptop", executed, target)
    assert calibration in after["records"] and (target / calibration).exists()
    assert len(after["records"]) == 2  # the calibration and the new run: the old run left
    assert not any("headtohead_calibration" in problem for problem in release.check(target, complete=False))


def test_a_page_says_when_its_code_changed(tmp_path):
    executed, target = _executed(tmp_path), tmp_path / "release"
    _store_one_iclip_run()
    manifest = release.make(["iclip"], "laptop", executed, target)
    entry = manifest["chapters"]["iclip"]
    name = next(f for f in entry["files"]["iclip"] if f.endswith("method.py"))
    entry["files"]["iclip"][name] = "0" * 64  # as if method.py had been edited since the release
    assert release.changed_files(entry) == [name]
    assert name in release.provenance(entry) and "has changed since the release" in release.provenance(entry)


def test_compare_records_and_verdicts(tmp_path):
    a, b = tmp_path / "a" / "train", tmp_path / "b" / "train"
    a.mkdir(parents=True), b.mkdir(parents=True)
    # the machine's speed is no result: not compared
    (a / "x.json").write_text(json.dumps({"metrics": {"m": 0.5, "n": 0.2, "train_samples_per_s": 1500.0}}))
    (b / "x.json").write_text(
        json.dumps({"metrics": {"m": 0.5 + release.TOLERANCE / 2, "n": 0.21, "train_samples_per_s": 900.0}})
    )
    assert release.compare_records(a.parent, b.parent) == (["train/x n: release 0.2, re-made 0.21"], 1)
    # the loss history, step by step: the first step apart is named; a history of another length is a difference
    history = [{"step": s, "loss": 3.0 - s, "loss_clip": 2.0} for s in range(3)]
    (a / "y.json").write_text(json.dumps({"metrics": {}, "history": history}))
    moved = [dict(h, loss_clip=2.001) if h["step"] >= 1 else h for h in history]
    (b / "y.json").write_text(json.dumps({"metrics": {}, "history": moved}))
    (a / "z.json").write_text(json.dumps({"metrics": {}, "history": history}))
    (b / "z.json").write_text(json.dumps({"metrics": {}, "history": history[:2]}))
    differences, compared = release.compare_records(a.parent, b.parent)
    assert compared == 3 and differences[1:] == [
        "train/y history at step 1: loss_clip release 2.0, re-made 2.001",
        "train/z history: 3 logged steps in the release, 2 re-made",
    ]
    _store_one_iclip_run()
    verdicts = release.verdicts(results_dir(), "laptop")
    assert set(verdicts) >= {"iclip", "protoclip"} and set(verdicts["iclip"].values()) == {"not run"}


def glued(page: dict, name: str):
    """The value a notebook glued under ``name`` (myst-nb ``glue``), from its outputs."""
    for cell in page["cells"]:
        for out in cell.get("outputs", []):
            if out.get("metadata", {}).get("scrapbook", {}).get("name") == name:
                data = out["data"]
                text = data.get("text/plain", data.get(out["metadata"]["scrapbook"]["mime_prefix"] + "text/plain"))
                return json.loads(ast.literal_eval(text))  # glue stores the string's repr
    raise KeyError(name)


@pytest.mark.skipif(release.read_manifest() is None, reason="no release shipped yet")
def test_the_shipped_release_is_whole_and_its_scorecard_matches_its_records(release_card):
    # every chapter, every page, every record with its checksum (``release check``)
    assert release.check() == []
    manifest = release.read_manifest()
    # the release's records judged again (the real drawings' runs found by their pinned configs, without the pixels)
    shipped = {c.paper for c in paper_chapters() if c.name in manifest["chapters"]}
    judged = {line["id"]: line["verdict"] for _, line in release_card.iterrows() if line["paper"] in shipped}
    page = json.loads((release.RELEASE_DIR / release.PAGES / "scorecard.ipynb").read_text())
    shown = {line["id"]: line["verdict"] for line in glued(page, "score_lines")}
    assert shown == judged, "the scorecard page and the shipped records disagree: re-make the scorecard and release it"


@pytest.mark.skipif(release.read_manifest() is None, reason="no release shipped yet")
def test_the_shipped_pages_name_no_folder_of_the_machine_that_executed_them():
    # a page's .ipynb download shows papermill's paths: cleaned pages name files by their path in the repository
    for page in sorted((release.RELEASE_DIR / release.PAGES).glob("*.ipynb")):
        paths = json.loads(page.read_text())["metadata"]["papermill"]
        assert not any(str(paths[key]).startswith("/") for key in ("input_path", "output_path")), (page.name, paths)


def test_restore_copies_the_records_and_keeps_the_store(tmp_path):
    executed, target = _executed(tmp_path), tmp_path / "release"
    _store_one_iclip_run(value=0.3)
    release.make(SHIPPED, "laptop", executed, target)
    store = tmp_path / "store"
    assert release.restore(target, store) == 1 and release.restore(target, store) == 0
    (path,) = store.rglob("*.json")
    assert runs.read(path)["metrics"]["avg3/linear"] == 0.3
    path.write_text(path.read_text().replace("0.3", "0.4"))  # a record already there is never replaced
    assert release.restore(target, store) == 0 and "0.4" in path.read_text()


def test_a_book_side_chapter_rests_on_the_papers_whose_runs_it_reads():
    # the head to head defines no method: its runs belong to the papers of their methods, and its release entry
    # (fingerprints, changed files) follows those papers
    assert release._scopes("headtohead") == ["core", "protoclip", "pyramidclip", "iclip", "icmlm"]
    assert release._scopes("iclip") == ["core", "iclip"] and release._scopes("baseline") == ["core"]


def test_verify_attributes_runs_not_remade_only_where_it_can(tmp_path):
    # a run of the iCLIP scope the re-make did not produce: the head to head and the real drawings (not re-made) read
    # that scope, so it may be theirs (unattributed); with both re-made too, it can only be iCLIP's own (missing)
    release_store, remade_store = tmp_path / "release", tmp_path / "remade"
    for store, names in ((release_store, ["kept", "gone"]), (remade_store, ["kept"])):
        (store / "train").mkdir(parents=True)
        for name in names:
            (store / "train" / f"{name}.json").write_text(json.dumps({"scope": "iclip"}))
    (release_store / "train" / "other.json").write_text(json.dumps({"scope": "dimefm"}))  # not re-made: ignored
    missing, unattributed = release.not_remade(release_store, remade_store, {"iclip"})
    assert missing == [] and unattributed == ["train/gone (iclip)"]
    missing, unattributed = release.not_remade(release_store, remade_store, {"iclip", "headtohead", "drawings"})
    assert missing == ["train/gone (iclip): in the release, not re-made"] and unattributed == []


def test_verify_takes_a_chapters_measurements_from_the_release(tmp_path):
    # the head to head's calibration measures the machine: a re-make copies it from the release (and does not count
    # it as a compared run), so the runs it chose are the ones re-made
    from vlp_lib.papers import chapters

    kinds = {kind for c in chapters() for kind in c.measurements}
    assert kinds == {"headtohead_calibration"}
    release_store, remade_store = tmp_path / "release", tmp_path / "remade"
    (release_store / "headtohead_calibration").mkdir(parents=True)
    (release_store / "headtohead_calibration" / "c.json").write_text(json.dumps({"metrics": {"clip_seconds": 11.0}}))
    assert release.restore_measurements(release_store, remade_store, frozenset(kinds)) == 1
    assert (remade_store / "headtohead_calibration" / "c.json").read_text() == (
        release_store / "headtohead_calibration" / "c.json"
    ).read_text()
    assert release.compare_records(release_store, remade_store, measured=frozenset(kinds)) == ([], 0)
    assert release.compare_records(release_store, remade_store)[1] == 1


def test_verify_exits_0_on_the_releases_numbers_and_1_on_a_changed_one(tmp_path, monkeypatch):
    # `make verify` whole but for the training: the re-make (``execute``, stubbed) stores the shipped run again, then
    # the same run with one number moved by more than the tolerance; verify passes on the first, names the number and
    # exits 1 on the second
    executed, target = _executed(tmp_path), tmp_path / "release"
    _store_one_iclip_run(value=0.3)
    release.make(["iclip"], "laptop", executed, target)
    remade = {"value": 0.3}
    monkeypatch.setattr(release, "execute", lambda *args, **kwargs: _store_one_iclip_run(value=remade["value"]))
    monkeypatch.setattr(release, "verify", functools.partial(release.verify, release=target))
    assert release.verify(["iclip"], keep=tmp_path / "same") == []
    assert release.main(["verify", "iclip", "--keep", str(tmp_path / "same_again")]) == 0
    remade["value"] = 0.31
    differences = release.verify(["iclip"], keep=tmp_path / "changed")
    assert len(differences) == 1 and "avg3/linear: release 0.3, re-made 0.31" in differences[0]
    assert release.main(["verify", "iclip", "--keep", str(tmp_path / "changed_again")]) == 1


def test_verify_ships_a_remake_only_when_no_number_moved(tmp_path, monkeypatch):
    # code changed without changing a number (a faster evaluation): `make verify SHIP=1` re-makes the chapter and,
    # every number the release's, ships it with today's fingerprints (the old records leave the release); a re-make
    # with one number moved ships nothing
    executed, target = _executed(tmp_path), tmp_path / "release"
    _store_one_iclip_run(value=0.3)
    release.make(["iclip"], "laptop", executed, target)
    before = (target / release.MANIFEST).read_text()
    remade = {"value": 0.31}

    def execute(notebooks, scale, executed_dir, **kwargs):
        _executed(executed_dir.parent)  # the re-made pages, in the scratch folder's executed/
        _store_one_iclip_run(value=remade["value"])

    monkeypatch.setattr(release, "execute", execute)
    # a page is not a chapter to ship, nor is uncommitted code: refused before anything is re-made
    with pytest.raises(ValueError, match="ships whole chapters, not pages: \\['iclip_ratio'\\]"):
        release.verify(["iclip_ratio"], release=target, keep=tmp_path / "page", ship=True)
    monkeypatch.setattr(release, "uncommitted", lambda chapter: ["vlp_lib/runs.py"])
    with pytest.raises(ValueError, match="commit them first"):
        release.verify(["iclip"], release=target, keep=tmp_path / "dirty", ship=True)
    monkeypatch.setattr(release, "uncommitted", lambda chapter: [])
    assert not (tmp_path / "page").exists() and not (tmp_path / "dirty").exists()
    # the verdicts are compared as in the test above; judged here they would only repeat it
    monkeypatch.setattr(release, "verdicts", lambda *args, **kwargs: {"iclip": {}})
    real = runs.code_fingerprint
    monkeypatch.setattr(runs, "code_fingerprint", lambda paper=None: "f" * 16 if paper == "iclip" else real(paper))
    assert release.verify(["iclip"], release=target, keep=tmp_path / "moved", ship=True) != []
    assert (target / release.MANIFEST).read_text() == before  # nothing shipped
    remade["value"] = 0.3
    assert release.verify(["iclip"], release=target, keep=tmp_path / "same", ship=True) == []
    manifest = release.read_manifest(target)
    assert manifest["chapters"]["iclip"]["fingerprints"]["iclip"] == "f" * 16
    (key,) = manifest["records"]
    assert release.read_record(target / key)["code_fingerprint"] == "f" * 16


def test_restamp_stamps_the_records_with_todays_fingerprints(tmp_path, monkeypatch):
    # code changed in docstrings only: the chapter's entry and its records take today's fingerprints, so the records
    # stay the current runs of today's code and the release stays whole
    executed, target = _executed(tmp_path), tmp_path / "release"
    _store_one_iclip_run(value=0.3)
    release.make(["iclip"], "laptop", executed, target)
    real = runs.code_fingerprint
    monkeypatch.setattr(runs, "code_fingerprint", lambda paper=None: "d" * 16 if paper == "iclip" else real(paper))
    monkeypatch.setattr(release, "changed_files", lambda entry: [])  # no file's code changed (only docstrings)
    assert release.restamp(["iclip"], target) == {"iclip": []}
    manifest = release.read_manifest(target)
    assert manifest["chapters"]["iclip"]["fingerprints"]["iclip"] == "d" * 16
    (key,) = manifest["records"]
    record = release.read_record(target / key)
    assert record["code_fingerprint"] == "d" * 16 and record["checksum"] == runs.checksum(record)
    assert record["metrics"]["avg3/linear"] == 0.3 and release.check(target, complete=False) == []


def test_a_release_names_a_commit_a_reader_can_check_out(tmp_path, monkeypatch):
    executed, target = _executed(tmp_path), tmp_path / "release"
    _store_one_iclip_run()
    monkeypatch.setattr(release, "uncommitted", lambda chapter: ["vlp_lib/runs.py"])
    with pytest.raises(ValueError, match="vlp_lib/runs.py differ from the last commit: commit them first"):
        release.make(["iclip"], "laptop", executed, target)
    monkeypatch.setattr(release, "uncommitted", lambda chapter: [])
    manifest = release.make(["iclip"], "laptop", executed, target)
    assert manifest["chapters"]["iclip"]["commit"] == release.head_commit()
    # an entry made from a dirty tree: check says so, and recommit names the commit whose files made its numbers
    manifest["chapters"]["iclip"]["commit"] += "-dirty"
    (target / release.MANIFEST).write_text(json.dumps(manifest))
    assert any("cannot be checked out" in p for p in release.check(target, complete=False))
    found = release.recommit(target)
    head_files = release._blob_sha256(release.head_commit(), ["vlp_lib/runs.py"])
    if release._file_hashes("core")["vlp_lib/runs.py"] == head_files["vlp_lib/runs.py"]:
        assert found["iclip"] is not None and release.check(target, complete=False) == []
    # files no commit ever held: no commit to name
    assert release.commit_of({"files": {"core": {"vlp_lib/runs.py": "0" * 64}}}) is None


def test_the_manifest_names_the_cpu_kind_verify_compares():
    here = release.machine()
    assert set(here) >= {"cpu", "cores", "platform", "cpu_kind", "simd"}
    assert release.same_kind(here, dict(here)) in (True, None)  # None where /proc/cpuinfo says no kind
    assert release.same_kind({"cpu": "AMD EPYC"}, here) is None  # a release made before the kind was recorded
    other = {**here, "cpu_kind": "family 25 model 17 stepping 1", "simd": "AVX512"}
    assert release.same_kind(other, {**here, "cpu_kind": "family 25 model 1 stepping 1"}) is False


def test_restamp_accepts_a_change_of_docstrings_and_comments_only():
    from vlp_lib.book.release import _code_shape

    before = '"""A module."""\n\ndef f(x):\n    """Twice x."""\n    return 2 * x  # why\n'
    docs = (
        '"""The module, reworded."""\n\n\ndef f(x):\n    """Twice x, reworded."""\n    # a comment\n    return 2 * x\n'
    )
    code = '"""A module."""\n\ndef f(x):\n    """Twice x."""\n    return 3 * x\n'
    assert _code_shape(before) == _code_shape(docs)
    assert _code_shape(before) != _code_shape(code)
    # a docstring gone is a docstring changed; a string that is not the first statement is code
    assert _code_shape("def f():\n    pass\n") == _code_shape('def f():\n    """Doc."""\n')
    assert _code_shape('def f():\n    x = 1\n    "a string"\n') != _code_shape("def f():\n    x = 1\n")
