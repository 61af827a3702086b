"""The book's findings as generated text: every verdict word, interval and count that the README, the introduction
and each chapter's opening page state, written from the scorecard (``report.scorecard``) between markers, so that
no page states a number typed or computed a second way.

A block sits between ``<!-- findings:NAME -->`` and ``<!-- /findings:NAME -->`` in a Markdown file; ``write``
replaces what lies between (the markers stay), ``stale`` lists the blocks that differ from the scorecard given.
``python -m vlp_lib.book.findings write`` writes them from the release's records (``release/``, unpacked into a
scratch store; trains nothing), ``check`` exits 1 naming each stale block; ``make repage`` and ``make release`` write
them after shipping pages.
"""

from __future__ import annotations

import argparse
import re
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

import pandas as pd

from vlp_lib.book import claims, release, report
from vlp_lib.papers import chapters
from vlp_lib.paths import REPO_ROOT

README = REPO_ROOT / "README.md"
INTRO = REPO_ROOT / "book" / "intro.md"
BLOCK = re.compile(r"(<!-- findings:(?P<name>[\w-]+) -->\n)(?P<body>.*?)(<!-- /findings:(?P=name) -->)", re.S)

# the order words are listed in: the paper's direction first, the opposite last
WORD_ORDER = (
    report.REPRODUCED,
    report.LARGER,
    report.SMALLER_REPRODUCED,
    report.DIRECTION_ONLY,
    report.SMALLER,
    report.NO_EFFECT,
    report.OPPOSITE_WITHIN,
    report.OPPOSITE_SIZE,
    report.OPPOSITE,
)


def _count_words(verdicts: Iterable[str], words: Sequence[str]) -> str:
    """ "3 *reproduced*; 1 *opposite*" in ``words`` order (a word may hold a comma: "opposite, within the margin"),
    the words absent left out ("none" when all are)."""
    counts = pd.Series(list(verdicts), dtype=object).value_counts()
    parts = [f"{int(counts[w])} *{w}*" for w in words if w in counts.index]
    return "; ".join(parts) if parts else "none"


def summary(card: pd.DataFrame) -> pd.DataFrame:
    """Per paper (book order): its claims, the tested ones, those decided at 5% FDR, one column per verdict word
    at 5% FDR (``report.DECIDED`` and inconclusive), the cost claims by word, the claims at the floor (their reference
    has not learned: ``report.FLOOR``), those described without a test (``report.DESCRIBED``) and the claims not run; every row's word columns add to its claims."""
    papers = list(dict.fromkeys(card["paper"]))
    tested = report.tested_claims(card)
    out = pd.DataFrame(index=pd.Index(papers, name="paper"))
    out["claims"] = card.groupby("paper").size()
    out["tested"] = tested.groupby("paper").size()
    out["decided at 5% FDR"] = tested[tested["verdict_fdr"].isin(report.DECIDED)].groupby("paper").size()
    for word in (*WORD_ORDER, report.INCONCLUSIVE):
        out[word] = tested[tested["verdict_fdr"] == word].groupby("paper").size()
    for word in report.COST_VERDICTS:
        out[f"cost: {word}"] = card[card["verdict_fdr"] == word].groupby("paper").size()
    out["at the floor"] = card[card["verdict_fdr"] == report.FLOOR].groupby("paper").size()  # reference not learned
    out["unequal seconds"] = card[card["verdict_fdr"] == report.UNEQUAL_SECONDS].groupby("paper").size()
    out["described, not tested"] = card[card["verdict_fdr"] == report.DESCRIBED].groupby("paper").size()
    out["not run"] = card[card["verdict_fdr"] == report.NOT_RUN].groupby("paper").size()
    out = out.fillna(0).astype(int)
    return out.loc[:, (out != 0).any() | out.columns.isin(["claims", "tested", "decided at 5% FDR"])]


def _minus(text: str) -> str:
    return re.sub(r"(?<![\w.])-(?=\d)", "−", text)  # a minus sign, not a hyphen


def _value(line: Mapping) -> str:
    """ "−3.02 pp [−5.10, −0.94] pp" (the interval where there is one)."""
    value, interval = str(line["book_value"]), str(line["interval"])
    return _minus(value if not interval or interval == "nan" else f"{value}, 95% interval {interval}")


def counts_text(card: pd.DataFrame) -> str:
    """The book's counts: claims, tested, decided one by one and at 5% FDR, each word's count."""
    tested = report.tested_claims(card)
    decided_alone = int(tested["verdict"].isin(report.DECIDED).sum())
    decided = tested[tested["verdict_fdr"].isin(report.DECIDED)]
    costs = card[card["verdict_fdr"].isin(report.COST_VERDICTS)]
    not_run = int((card["verdict_fdr"] == report.NOT_RUN).sum())
    described = int((card["verdict_fdr"] == report.DESCRIBED).sum())
    unequal = int((card["verdict_fdr"] == report.UNEQUAL_SECONDS).sum())
    share = f"{100 * len(decided) / max(len(tested), 1):.0f}%"
    text = (
        f"The scorecard holds {len(card)} claims: the five papers', the head to head's and the real drawings'; "
        f"{len(tested)} of them are tested, {len(costs)} are cost claims"
        + (f", {described} are described without a test" if described else "")
        + (
            f", {unequal} equal-seconds claims are not judged (their runs' seconds differ by more than 5%)"
            if unequal
            else ""
        )
        + (f" and {not_run} are not run" if not_run else "")
        + f". Judged one by one, {decided_alone} are decided; with the false discovery rate held at 5% across the "
        f"book, {len(decided)} ({share} of the tested): {_count_words(decided['verdict_fdr'], WORD_ORDER)}. The other "
        f"{len(tested) - len(decided)} stay inconclusive at these seeds."
    )
    if len(costs):
        text += f" Cost claims, judged as costs: {_count_words(costs['verdict_fdr'], report.COST_VERDICTS)}."
    learned = card["reference_learned"].astype(str) if "reference_learned" in card else pd.Series([], dtype=str)
    checked = learned.str.startswith(("yes, ", "no, "))  # not NOT_CHECKED, which also starts with "no"
    if checked.any():
        floor = int((card["verdict"] == report.FLOOR).sum())
        not_learned = int(learned.str.startswith("no, ").sum())  # an unequal-seconds claim's too: untested either way
        other = (
            f" ({floor} at the floor; {not_learned - floor} not judged for unequal seconds)"
            if not_learned > floor
            else ""
        )
        text += f" The references of {int(checked.sum())} claims were compared with their networks untrained: " + (
            f"{not_learned} had not learned, and those claims are untested{other}."
            if not_learned
            else "each had learned."
        )
    unchecked = int(learned.isin(claims.UNCHECKED).sum())
    if unchecked:
        text += (
            f" The references of {unchecked} claims are not checked yet (their untrained networks are not stored, "
            "or not evaluated on the claim's metric): their verdicts lack the learning check."
        )
    return text


def primary_table(card: pd.DataFrame) -> str:
    """A Markdown table of each paper's primary claim: the claim, its verdict at 5% FDR, ours and the paper's, and its
    verdict with longer training and the trend (``claims.TREND_RULE``; "not run" where the chapter has no longer runs
    yet)."""
    rows = [
        "| paper | primary claim | verdict at 5% FDR | this book (mean Δ per seed) | the paper's value | longer training: verdict; trend |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for _, line in card[card["primary"]].iterrows():
        rows.append(
            f"| {line['paper']} | {line['claim']} ({line['source']}) | **{line['verdict_fdr']}** | {_value(line)} | "
            f"{line['paper_value']} | {_longer(line)} |"
        )
    return "\n".join(rows)


def _longer(line: pd.Series) -> str:
    """A claim's verdict with longer training and its trend, "not run" where it has none."""
    value = line.get("verdict_longer", "")
    return _minus(value) if isinstance(value, str) and value else "not run"  # its interval's signs as _value's


def _full_text(part: pd.DataFrame, claim_id: str) -> str:
    """A claim's text, a continuation ("... and on VOC") led by the claim it continues (the nearest before it)."""
    texts = list(zip(part["id"], part["claim"]))
    index = next(i for i, (cid, _) in enumerate(texts) if cid == claim_id)
    text = str(texts[index][1])
    if text.startswith("..."):
        lead = next((str(t) for _, t in reversed(texts[:index]) if not str(t).startswith("...")), "")
        return f"{lead} {text}" if lead else text
    return text


def _decided_lines(part: pd.DataFrame) -> list[str]:
    lines = part[part["verdict_fdr"].isin([*report.DECIDED, *report.COST_VERDICTS]) & ~part["primary"]]
    return [f"{line['claim']} ({line['id']}): *{line['verdict_fdr']}*, {_value(line)}" for _, line in lines.iterrows()]


def chapter_text(card: pd.DataFrame, paper: str) -> str:
    """A chapter's findings in one paragraph: its counts at 5% FDR, the claims at the floor (``report.FLOOR``) where
    there are any, and its primary claim with its verdict and numbers (``headline`` lists the other decided claims
    after it, one per line)."""
    part = card[card["paper"] == paper]
    tested = report.tested_claims(part)
    decided = tested[tested["verdict_fdr"].isin(report.DECIDED)]
    text = (
        f"{len(part)} claims, {len(tested)} tested; at 5% FDR {len(decided)} decided "
        f"({_count_words(decided['verdict_fdr'], WORD_ORDER)})"
    )
    costs = part[part["verdict_fdr"].isin(report.COST_VERDICTS)]
    if len(costs):
        text += f" and {len(costs)} cost claims ({_count_words(costs['verdict_fdr'], report.COST_VERDICTS)})"
    text += "."
    floor = int((part["verdict_fdr"] == report.FLOOR).sum())
    if floor:  # a claim whose reference has not learned is neither tested nor a cost: the count says where it went
        verb = "is" if floor == 1 else "are"
        whose = "its" if floor == 1 else "their"
        text += f" {floor} of the {len(part)} claims {verb} at the floor ({whose} reference has not learned), untested."
    unequal = int((part["verdict_fdr"] == report.UNEQUAL_SECONDS).sum())
    if unequal:
        text += (
            f" {unequal} equal-seconds {'claim is' if unequal == 1 else 'claims are'} not judged: "
            f"{'its runs' if unequal == 1 else 'their runs'} took seconds more than 5% apart."
        )
    not_run = int((part["verdict_fdr"] == report.NOT_RUN).sum())
    if not_run:
        text += f" {not_run} not run."
    described = int((part["verdict_fdr"] == report.DESCRIBED).sum())
    if described:
        text += (
            f" {described} {'is' if described == 1 else 'are'} described, not tested (evaluations that are not replicates, or fewer seeds than a "
            "test could decide on)."
        )
    primary = part[part["primary"]]
    if len(primary):
        line = primary.iloc[0]
        text += (
            f" Primary claim, the book's test of the paper's headline ({line['source']}): {line['claim']}: "
            f"**{line['verdict_fdr']}**, "
            f"{_value(line)}; the paper: {line['paper_value']}."
        )
        if _longer(line) != "not run":
            text += f" Trained longer, the same claim: {_longer(line)}."
    else:
        text += " No paper states this chapter's claims, so none is primary."
    return text


def headline(card: pd.DataFrame, paper: str, seeds: Sequence[int], note: str = "") -> str:
    """A chapter's opening-page headline (a MyST admonition): ``chapter_text``, the seeds, where the runs'
    configuration and the rules are stated, then the chapter's own ``note`` (one sentence, ``Chapter.headline_note``;
    none when empty). The clause on cost claims (judged as costs, outside the false-discovery-rate family) only where the
    chapter has cost claims, and the one on the verdict trained longer (judged alone) only where the primary claim has
    one: elsewhere they would name verdicts the page does not have."""
    part = card[card["paper"] == paper]
    costs = part["verdict_fdr"].isin(report.COST_VERDICTS).any()
    primary = part[part["primary"]]
    longer = len(primary) > 0 and _longer(primary.iloc[0]) != "not run"
    outside = [
        *(["a cost's (judged as a cost)"] if costs else []),
        *(["the verdict trained longer (judged alone)"] if longer else []),
    ]
    family = "every word is the verdict at a 5% false discovery rate across the book" + (
        f", except {' and '.join(outside)}, outside that family" if outside else ""
    )
    decided = _decided_lines(part)  # one line each: a paragraph of twenty claims is not read
    listed = (
        f"\n\n{'Decided beside it' if part['primary'].any() else 'Decided'}:\n\n" + "".join(f"- {d}\n" for d in decided)
        if decided
        else "\n"
    )
    return (
        "```{admonition} What this chapter finds\n"
        f"{chapter_text(card, paper)} Seeds {', '.join(map(str, seeds))}, paired by seed; {family} "
        "({doc}`executed/scorecard`, where the rules are stated). How the runs are configured: {doc}`experiments`."
        # the note last: it may name verdicts outside the family (judged alone), which the sentence above must not cover
        f"{' ' + note if note else ''}" + listed + "```"
    )


def blocks(card: pd.DataFrame) -> dict[Path, dict[str, str]]:
    """``{file: {block name: text}}`` of every generated block, from ``card`` (``report.scorecard``'s)."""
    readme = {"counts": counts_text(card), "primary": primary_table(card)}
    for chapter in chapters():
        readme[f"chapter-{chapter.name}"] = f"- **{chapter.paper}**: {chapter_text(card, chapter.paper)}"
    out = {README: readme, INTRO: {"counts": counts_text(card), "primary": primary_table(card)}}
    for chapter in chapters():
        page = REPO_ROOT / "book" / f"{chapter.name}.md"
        note = chapter.headline_note(card[card["paper"] == chapter.paper])
        out[page] = {"headline": headline(card, chapter.paper, chapter.seeds("laptop"), note)}
    return out


def _replace(text: str, wanted: Mapping[str, str], path: Path) -> str:
    found = {m.group("name") for m in BLOCK.finditer(text)}
    missing = sorted(set(wanted) - found)
    if missing:
        raise ValueError(f"{path}: no block for {missing} (add '<!-- findings:NAME -->' and '<!-- /findings:NAME -->')")

    def body(m: re.Match) -> str:
        name = m.group("name")
        return m.group(1) + (wanted[name].rstrip("\n") + "\n" if name in wanted else m.group("body")) + m.group(4)

    return BLOCK.sub(body, text)


def stale(card: pd.DataFrame) -> list[str]:
    """The blocks whose text differs from what ``card`` gives: "FILE: block NAME"."""
    out = []
    for path, wanted in blocks(card).items():
        text = path.read_text()
        current = {m.group("name"): m.group("body") for m in BLOCK.finditer(text)}
        for name, body in wanted.items():
            if current.get(name) != body.rstrip("\n") + "\n":
                out.append(f"{path.relative_to(REPO_ROOT)}: block {name}")
    return out


def write(card: pd.DataFrame) -> list[Path]:
    """Write every block from ``card``; returns the files changed."""
    changed = []
    for path, wanted in blocks(card).items():
        text = path.read_text()
        new = _replace(text, wanted, path)
        if new != text:
            path.write_text(new)
            changed.append(path)
    return changed


def release_scorecard(scale: str = "laptop", accept_stale: bool = False) -> pd.DataFrame:
    """The scorecard of the release's own records (unpacked into a scratch store; trains nothing); with
    ``accept_stale``, records made by other code than today's are judged too."""
    with tempfile.TemporaryDirectory(prefix="vlp-findings-") as tmp:
        store = release.unpack(release.RELEASE_DIR, Path(tmp))
        with release.using_store(store, accept_stale):
            return report.scorecard(scale)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m vlp_lib.book.findings", description=__doc__.split("\n\n")[0])
    parser.add_argument("action", choices=["write", "check"])
    args = parser.parse_args(argv)
    # the release's pages show the release's records whatever code is checked out (a page whose code changed since
    # says so): the findings summarise those pages, so they judge every shipped record
    card = release_scorecard(accept_stale=True)
    if args.action == "write":
        for path in write(card):
            print(f"wrote {path.relative_to(REPO_ROOT)}")
        return 0
    blocks_stale = stale(card)
    for line in blocks_stale:
        print(f"stale: {line} (python -m vlp_lib.book.findings write)")
    return 1 if blocks_stale else 0


if __name__ == "__main__":
    raise SystemExit(main())
