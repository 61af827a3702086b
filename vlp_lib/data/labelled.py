"""A labelled evaluation split, whatever made it: a task of the generated world (``data.tasks``) or an image folder
(``data.folder_tasks``)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class Task:
    """A labelled evaluation split: images, int labels into ``classnames``, zero-shot ``templates``."""

    name: str
    split: str
    images: np.ndarray  # uint8 [n, H, W, 3]
    labels: np.ndarray  # int64 [n] in [0, len(classnames))
    classnames: list[str]
    templates: list[str]
    stands_in_for: str
    description: str = ""

    def __len__(self) -> int:
        return len(self.labels)
