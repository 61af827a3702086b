"""Real drawings: CLIP and each paper's headline idea trained on human-made image-text pairs (Open Clip Art's drawings
with their authors' titles and descriptions, ``vlp_lib.data.openclipart``), and which of the head to head's verdicts
on the generated world carry over. A book-side chapter only: it defines no method (every run belongs to
its method's paper, and so do its stored records); ``book.chapter`` plans the runs and states the claims."""

from vlp_lib.papers import Chapter, register

CHAPTER = register(
    Chapter(
        name="drawings",
        paper="Real drawings",
        notebooks=("drawings",),
        module="vlp_lib.papers.drawings.book.chapter",
        methods=(),
        order=70,
        reads=("protoclip", "pyramidclip", "iclip", "icmlm", "headtohead"),
    )
)
