"""Write the parameter names and shapes of three timm models, as timm's source builds them.

    python tests/models/timm_shapes/derive.py      # rewrites the *.json beside this file

timm cannot be imported here (it needs torchvision), so the lists are derived by hand from
the constructors in huggingface/pytorch-image-models at commit aa4b5850c154 (2026-08-08):

- ``timm/models/vision_transformer.py`` (``VisionTransformer``, ``Block``, ``Attention``;
  ``vit_small_patch16_224``: patch 16, embed_dim 384, depth 12, heads 6, mlp_ratio 4,
  qkv_bias, class token, position embedding covering the class token, final ``norm``,
  ``fc_norm``/``ls1``/``ls2``/``q_norm``/``k_norm`` identities), ``timm/layers/mlp.py``
  (``Mlp``: ``fc1``, ``fc2``) and ``timm/layers/patch_embed.py`` (``PatchEmbed.proj``);
- ``timm/models/mlp_mixer.py`` (``MlpMixer``, ``MixerBlock``; ``mixer_b16_224``: patch 16,
  embed_dim 768, 12 blocks, mlp_ratio (0.5, 4.0), stem ``PatchEmbed``);
- ``timm/models/resnet.py`` (``ResNet`` with ``Bottleneck`` blocks (3, 4, 23, 3), 7x7 stem,
  1x1 conv + BN ``downsample``, ``fc``).

It imports nothing from calibkit: the test compares calibkit's models with these lists.
"""

from __future__ import annotations

import json
from pathlib import Path

Shapes = dict[str, list[int]]


def linear(name: str, fan_in: int, fan_out: int) -> Shapes:
    return {f"{name}.weight": [fan_out, fan_in], f"{name}.bias": [fan_out]}


def layer_norm(name: str, dim: int) -> Shapes:
    return {f"{name}.weight": [dim], f"{name}.bias": [dim]}


def batch_norm(name: str, dim: int) -> Shapes:
    return {
        f"{name}.weight": [dim],
        f"{name}.bias": [dim],
        f"{name}.running_mean": [dim],
        f"{name}.running_var": [dim],
        f"{name}.num_batches_tracked": [],
    }


def vit_small_patch16_224() -> Shapes:
    dim, tokens = 384, (224 // 16) ** 2 + 1
    out: Shapes = {"cls_token": [1, 1, dim], "pos_embed": [1, tokens, dim]}
    out["patch_embed.proj.weight"] = [dim, 3, 16, 16]
    out["patch_embed.proj.bias"] = [dim]
    for i in range(12):
        b = f"blocks.{i}"
        out |= layer_norm(f"{b}.norm1", dim) | linear(f"{b}.attn.qkv", dim, 3 * dim)
        out |= linear(f"{b}.attn.proj", dim, dim) | layer_norm(f"{b}.norm2", dim)
        out |= linear(f"{b}.mlp.fc1", dim, 4 * dim) | linear(f"{b}.mlp.fc2", 4 * dim, dim)
    return out | layer_norm("norm", dim) | linear("head", dim, 1000)


def mixer_b16_224() -> Shapes:
    dim, tokens = 768, (224 // 16) ** 2
    out: Shapes = {"stem.proj.weight": [dim, 3, 16, 16], "stem.proj.bias": [dim]}
    for i in range(12):
        b = f"blocks.{i}"
        out |= layer_norm(f"{b}.norm1", dim)
        out |= linear(f"{b}.mlp_tokens.fc1", tokens, dim // 2)
        out |= linear(f"{b}.mlp_tokens.fc2", dim // 2, tokens)
        out |= layer_norm(f"{b}.norm2", dim)
        out |= linear(f"{b}.mlp_channels.fc1", dim, 4 * dim)
        out |= linear(f"{b}.mlp_channels.fc2", 4 * dim, dim)
    return out | layer_norm("norm", dim) | linear("head", dim, 1000)


def resnet101() -> Shapes:
    out: Shapes = {"conv1.weight": [64, 3, 7, 7]} | batch_norm("bn1", 64)
    in_planes = 64
    stages = zip((64, 128, 256, 512), (3, 4, 23, 3), strict=True)
    for stage, (width, n) in enumerate(stages, start=1):
        for j in range(n):
            b = f"layer{stage}.{j}"
            out[f"{b}.conv1.weight"] = [width, in_planes, 1, 1]
            out |= batch_norm(f"{b}.bn1", width)
            out[f"{b}.conv2.weight"] = [width, width, 3, 3]
            out |= batch_norm(f"{b}.bn2", width)
            out[f"{b}.conv3.weight"] = [4 * width, width, 1, 1]
            out |= batch_norm(f"{b}.bn3", 4 * width)
            if j == 0:
                out[f"{b}.downsample.0.weight"] = [4 * width, in_planes, 1, 1]
                out |= batch_norm(f"{b}.downsample.1", 4 * width)
            in_planes = 4 * width
    return out | linear("fc", 2048, 1000)


def main() -> None:
    here = Path(__file__).parent
    for build in (vit_small_patch16_224, mixer_b16_224, resnet101):
        rows = [f"  {json.dumps(k)}: {json.dumps(v)}" for k, v in build().items()]
        text = "{\n" + ",\n".join(rows) + "\n}\n"
        (here / f"{build.__name__}.json").write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
