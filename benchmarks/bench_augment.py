"""Cost of the batched training augmentations (ProtoCLIP IV-A-3, Table XI). Prints ``name value`` lines.

    python benchmarks/bench_augment.py [--batch-size 256] [--repeats 20]

``augment_ms_<name>``: milliseconds to augment one batch of 32 px images; ``augment_share_<name>``: that time
as a fraction of one rn-tiny fp32 training step (forward, backward, AdamW) on the same batch.
"""

from __future__ import annotations

import argparse
import time

import torch

from vlp_lib.data.transforms import AUGMENTATIONS, augment
from vlp_lib.losses.clip import clip_loss
from vlp_lib.models import create_model


def _ms(fn, repeats: int) -> float:
    fn()  # warm-up: allocator, kernel selection
    t0 = time.perf_counter()
    for _ in range(repeats):
        fn()
    return 1000 * (time.perf_counter() - t0) / repeats


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument("--repeats", type=int, default=20)
    args = parser.parse_args()
    torch.manual_seed(0)
    images = torch.randn(args.batch_size, 3, 32, 32)
    texts = torch.randint(1, 200, (args.batch_size, 24))
    model = create_model("rn-tiny", vocab_size=282, context_length=24, seed=0)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)

    def step() -> None:
        out = model(images, texts)
        loss = clip_loss(out["image_features"], out["text_features"], out["logit_scale"])
        opt.zero_grad()
        loss.backward()
        opt.step()

    step_ms = _ms(step, max(3, args.repeats // 4))
    print(f"train_step_ms_rn-tiny {step_ms:.1f}")
    for name in AUGMENTATIONS:
        gen = torch.Generator().manual_seed(0)
        ms = _ms(lambda: augment(images, name, generator=gen), args.repeats)
        print(f"augment_ms_{name} {ms:.2f}")
        print(f"augment_share_{name} {ms / step_ms:.3f}")


if __name__ == "__main__":
    main()
