"""The config audit: does each claim compare runs that differ only in the idea it tests?

A referee's first question of a comparison is what else differs. Each claim declares the config fields its idea may
change (``Claim.knobs``) and, where the paper's own comparison carries another difference, that difference with the
paper's reason (``Claim.declared``). The audit builds the run configs of every row a claim compares, for each of the
chapter's seeds, from the chapter's own config functions (``claim_configs``: configs only, nothing is trained or
loaded), and lists the fields in which the claimed side and its reference differ. A field that differs and is not
declared is a comparison a referee rejects: ``python -m vlp_lib.book.audit [chapters]`` prints every claim's fields
and exits 1 when any claim has such a field.

Fields are the run's record keys (``RunConfig.to_dict``), a method's arguments as ``method_kwargs.<name>``. Two keys
are not compared: ``seed``, which pairs the runs, is compared only to check that it does (a pair on two seeds is an
undeclared difference), and ``eval_tasks`` and ``eval_probes``: which *other* tasks and probes a run evaluates
changes no metric that both runs evaluate (each task is encoded and probed on its own, and a run without probes has
its zero-shot and retrieval metrics only). A declared name covers itself and every field under it
(``method_kwargs`` covers ``method_kwargs.use_pbt``); ``method`` covers the method's arguments too, which belong to
the method.

Book side: it plans, it computes no stored number.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from vlp_lib.book.claims import Claim
from vlp_lib.papers import chapters
from vlp_lib.run_config import RunConfig

AUDIT_RULE = (
    "Each claim declares the run-config fields its idea changes, and any other difference its paper's own comparison "
    "carries, with the paper's reason (the differs_in column). The audit (python -m vlp_lib.book.audit) builds the "
    "configs of every pair of runs a claim compares, for every seed, and lists the fields in which they differ; a "
    "field no declaration covers is a comparison a referee rejects, and fails the book's tests. Which other tasks "
    "and probes a run evaluates is not compared: it changes no metric both runs have."
)
NOT_COMPARED = frozenset({"eval_tasks", "eval_probes"})  # see the module docstring
SCALE = "laptop"  # the book's scale: the audit checks the runs the book's verdicts read


def flat_fields(config: RunConfig | Mapping[str, Any]) -> dict[str, Any]:
    """``config``'s record form (``RunConfig.to_dict``, or that form itself: a pinned config on data not built here),
    flat: ``method_kwargs`` as ``method_kwargs.<name>``, lists as tuples."""

    def frozen(value: Any) -> Any:
        if isinstance(value, Mapping):
            return tuple(sorted((k, frozen(v)) for k, v in value.items()))
        if isinstance(value, (list, tuple)):
            return tuple(frozen(v) for v in value)
        return value

    record = config.to_dict() if isinstance(config, RunConfig) else dict(config)
    out = {k: frozen(v) for k, v in record.items() if k != "method_kwargs"}
    out.update({f"method_kwargs.{k}": frozen(v) for k, v in record["method_kwargs"].items()})
    return out


def differing_fields(a: RunConfig | Mapping[str, Any], b: RunConfig | Mapping[str, Any]) -> set[str]:
    """The fields in which two run configs differ (``NOT_COMPARED`` left out); an argument one method has and the
    other lacks differs."""
    fa, fb = flat_fields(a), flat_fields(b)
    missing = object()
    return {k for k in set(fa) | set(fb) if k not in NOT_COMPARED and fa.get(k, missing) != fb.get(k, missing)}


# a field set from another by every chapter's recipe: the learning-rate warm-up is a fixed fraction of a run's steps, so
# a run trained for longer warms up for longer
DERIVED = {"warmup_steps": "epochs"}


def covers(declared: str, name: str) -> bool:
    """Whether declared field ``declared`` covers field ``name``: itself, a field under it, a method's arguments under
    ``method``, and a field ``DERIVED`` from it."""
    if name == declared or name.startswith(declared + "."):
        return True
    if DERIVED.get(name) == declared:
        return True
    return declared == "method" and name.startswith("method_kwargs.")


@dataclass(frozen=True)
class AuditLine:
    """One claim's audit: the fields its compared runs differ in, and those no declaration covers."""

    chapter: str
    id: str
    differs: tuple[str, ...]
    undeclared: tuple[str, ...]
    declared: tuple[str, ...]
    pairs: int

    @property
    def ok(self) -> bool:
        return not self.undeclared


def declared_fields(claim: Claim) -> tuple[str, ...]:
    """Every field the claim declares: its idea's ``knobs``, then the paper's other differences (``declared``)."""
    return (*claim.knobs, *(name for name, _ in claim.declared))


def audit_claim(
    chapter: str, claim: Claim, configs_by_seed: Mapping[int, Mapping[Hashable, RunConfig | Mapping[str, Any]]]
) -> AuditLine:
    """``claim``'s ``AuditLine`` from the configs of its rows for each seed (a row without a config, such as a
    teacher trained once, is a pair not compared)."""
    differs: set[str] = set()
    count = 0
    for configs in configs_by_seed.values():
        for better, reference in claim.pairs():
            if better in configs and reference in configs:
                differs |= differing_fields(configs[better], configs[reference])
                count += 1
    declared = declared_fields(claim)
    undeclared = sorted(name for name in differs if not any(covers(d, name) for d in declared))
    return AuditLine(chapter, claim.id, tuple(sorted(differs)), tuple(undeclared), declared, count)


def audit_chapter(chapter: Any, scale: str = SCALE) -> list[AuditLine]:
    """Every claim of ``chapter`` (a ``vlp_lib.papers.Chapter``) audited at ``scale`` on its seeds."""
    lines = []
    for claim in chapter.claim_list():
        claim = chapter.resolved_claim(claim, scale)
        by_seed = {seed: chapter.claim_configs(claim, scale, seed) for seed in chapter.seeds(scale)}
        lines.append(audit_claim(chapter.name, claim, by_seed))
    return lines


def report(lines: Iterable[AuditLine]) -> str:
    """One line per claim: its id, the fields its runs differ in, and the undeclared ones flagged."""
    out = []
    for line in lines:
        fields = ", ".join(line.differs) or "nothing"
        flag = f"   UNDECLARED: {', '.join(line.undeclared)}" if line.undeclared else ""
        out.append(f"{line.chapter:<12} {line.id:<32} {line.pairs:>3} pairs  differ in: {fields}{flag}")
    return "\n".join(out)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m vlp_lib.book.audit",
        description="Build every claim's run configs (nothing trained) and list the fields its runs differ in; "
        "exit 1 when a claim's runs differ in a field it does not declare.",
    )
    parser.add_argument("chapters", nargs="*", help="chapters to audit (default: every paper chapter)")
    parser.add_argument("--scale", default=SCALE)
    args = parser.parse_args(argv)
    known = {c.name: c for c in chapters()}
    unknown = [name for name in args.chapters if name not in known]
    if unknown:
        parser.error(f"unknown chapter(s) {unknown}; known: {sorted(known)}")
    lines = [line for name in (args.chapters or list(known)) for line in audit_chapter(known[name], args.scale)]
    print(report(lines))
    bad = [line for line in lines if not line.ok]
    print(f"{len(lines)} claims audited; {len(bad)} compare runs that differ in an undeclared field")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
