"""DIME-FM (Sun et al., "DIME-FM: DIstilling Multimodal and Efficient Foundation Models", ICCV 2023; the
supplement and the official code): the chapter's runs and claims (``chapter``) and the paper's numbers (``paper``)."""

from vlp_lib.papers import Chapter, register

CHAPTER = register(
    Chapter(
        name="dimefm",
        paper="DIME-FM",
        # reading order = execution order: the benchmark trains the teacher, the references and the students; the
        # components page reuses the teacher (MMD, the Supp G sweep)
        notebooks=("dimefm_benchmark", "dimefm_components", "dimefm_coverage"),
        module="vlp_lib.papers.dimefm.book.chapter",
        methods=("dimefm",),
        order=30,
    )
)
