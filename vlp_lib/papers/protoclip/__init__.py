"""ProtoCLIP (Chen et al., "Prototypical Contrastive Language Image Pretraining"): the chapter's run tables and
claims (``chapter``), the Fig. 6 ablation plans (``ablation``) and the paper's numbers (``paper``)."""

from vlp_lib.papers import Chapter, register

CHAPTER = register(
    Chapter(
        name="protoclip",
        paper="ProtoCLIP",
        # reading order = execution order; the clustering and efficiency pages load the benchmark's models
        notebooks=(
            "protoclip_ablation",
            "protoclip_components",
            "protoclip_benchmark",
            "protoclip_clustering",
            "protoclip_efficiency",
        ),
        module="vlp_lib.papers.protoclip.book.chapter",
        methods=("protoclip",),
        order=10,
    )
)
