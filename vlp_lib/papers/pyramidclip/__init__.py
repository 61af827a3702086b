"""PyramidCLIP (Gao et al., "PyramidCLIP: Hierarchical Feature Alignment for Vision-language Model Pretraining",
arXiv v1): the chapter's runs and claims (``chapter``) and the paper's numbers (``paper``)."""

from vlp_lib.papers import Chapter, register

CHAPTER = register(
    Chapter(
        name="pyramidclip",
        paper="PyramidCLIP",
        # reading order = execution order: the benchmark trains CLIP and the full method, the components page reuses them
        notebooks=("pyramidclip_benchmark", "pyramidclip_components"),
        module="vlp_lib.papers.pyramidclip.book.chapter",
        methods=("pyramidclip",),
        order=20,
    )
)
