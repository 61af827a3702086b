"""Head to head: CLIP, ProtoCLIP, PyramidCLIP, iCLIP / UniCL and TP_Postag / ICMLM on one world, one image tower and
one evaluation, at equal training samples and at equal wall-clock seconds. A book-side chapter only: it
defines no method (every method belongs to its paper's folder, and so do its stored runs); ``book.chapter`` plans
the runs and states the claims."""

from vlp_lib.papers import Chapter, register

CHAPTER = register(
    Chapter(
        name="headtohead",
        paper="Head to head",
        notebooks=("headtohead",),
        module="vlp_lib.papers.headtohead.book.chapter",
        methods=(),
        order=60,
        reads=("protoclip", "pyramidclip", "iclip", "icmlm"),
        measurements=("headtohead_calibration",),
    )
)
