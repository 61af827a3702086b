#!/usr/bin/env bash
# The GPU figures of the README ("Several processes"): bench_scale.py on one GPU in bf16, at 224 px.
#
#   benchmarks/bench_gpu.sh [OUT_DIR] [STEPS]
#
# CLIP and ProtoCLIP on ViT-B-32 and RN50 (the papers' towers) at batch 256, then every other method of the book on
# ViT-B-32, then CLIP on ViT-B-32 at batch 1024 (how far a larger batch fills the GPU). CLIP's runs also time the
# bare step (--bare: the model alone, batches on the GPU in advance) against the trainer. Each configuration runs in
# its own process under a time limit, so that one failure costs its own figures only; its output goes to
# OUT_DIR/<tag>.log and every `scale_*` line to OUT_DIR/bench_gpu.txt.
set -u
out=${1:-bench_gpu_out}
steps=${2:-20}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee "$out/bench_gpu.txt"
${PYTHON:-python3} -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda)" | tee -a "$out/bench_gpu.txt"

bench() {  # tag, then bench_scale.py's arguments
    local tag=$1
    shift
    echo "== $tag" | tee -a "$out/bench_gpu.txt"
    timeout 150 ${PYTHON:-python3} "$here/bench_scale.py" --precision bf16 --image-size 224 "$@" >"$out/$tag.log" 2>&1
    echo "exit $?" >>"$out/$tag.log"
    grep -E "^scale_|^exit|Error|error" "$out/$tag.log" | tail -20 | tee -a "$out/bench_gpu.txt"
}

for model in ViT-B-32 RN50; do
    for method in clip protoclip; do
        bare=$([ "$method" = clip ] && echo --bare)
        bench "${model}_${method}" --model "$model" --method "$method" --batch-size 256 --steps "$steps" $bare
    done
done
for method in pyramidclip iclip unicl dimefm tp icmlm; do
    bench "ViT-B-32_${method}" --model ViT-B-32 --method "$method" --batch-size 256 --steps $((steps / 2))
done
bench "ViT-B-32_clip_b1024" --model ViT-B-32 --method clip --batch-size 1024 --steps $((steps / 2)) --bare
