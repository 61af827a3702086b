"""ICMLM (Sariyildiz, Perez, Larlus, "Learning Visual Representations with Caption Annotations", ECCV 2020; the
supplement only): the chapter's runs and claims (``chapter``) and the paper's numbers (``paper``)."""

from vlp_lib.papers import Chapter, register

CHAPTER = register(
    Chapter(
        name="icmlm",
        paper="ICMLM",
        # reading order = execution order: the heads page starts its ICMLM runs from the label page's TP_Postag runs
        notebooks=("icmlm_labels", "icmlm_heads"),
        module="vlp_lib.papers.icmlm.book.chapter",
        methods=("tp", "icmlm"),
        order=50,
    )
)
