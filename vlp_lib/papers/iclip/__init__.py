"""iCLIP (Wei et al., "iCLIP: Bridging Image Classification and Contrastive Language-Image Pre-training for Visual
Recognition", CVPR 2023; the supplement only): the chapter's runs and claims (``chapter``) and the paper's numbers
(``paper``)."""

from vlp_lib.papers import Chapter, register

CHAPTER = register(
    Chapter(
        name="iclip",
        paper="iCLIP",
        # reading order = execution order: the ratio sweep trains CLIP and iCLIP at r = 0.5, which the UniCL page reuses
        notebooks=("iclip_ratio", "iclip_unicl"),
        module="vlp_lib.papers.iclip.book.chapter",
        methods=("iclip", "unicl"),
        order=40,
    )
)
