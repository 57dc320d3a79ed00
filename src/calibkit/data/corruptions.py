"""The CIFAR-10-C corruptions (Hendrycks & Dietterich, ICLR 2019), offline and seeded.

:func:`corrupt` applies one of :data:`CORRUPTIONS` at a severity 1-5 to uint8 ``(N, H, W, C)``
images (``C`` 1 or 3) and returns uint8 images of the same shape. Each image gets its own
random generator, seeded by ``(seed, key, corruption, severity, index)``, so a corrupted image
does not depend on the batch it came in, its order, or the chunk size; the deterministic work
(filters, resampling, colour transforms) runs vectorised over chunks of images.

Build, not depend. The ``imagecorruptions`` package (1.1.2) implements these corruptions, but
it pulls opencv-python, scikit-image, imageio, tifffile and lazy-loader, it uses the ImageNet-C
parameter tables (the CIFAR-10-C ones differ), and the corruptions are short formulas over
NumPy/SciPy, which calibkit already depends on. It is used only as a test-time reference
(parity of the shared formulas) where it imports.

Parameter tables: those of CIFAR-10-C, Hendrycks' ``make_cifar_c.py``
(github.com/hendrycks/robustness, ``ImageNet-C/create_c/make_cifar_c.py``), restated per
corruption below as ``params`` (one entry per severity). They were set for 32x32 images; other
sizes (at least :data:`MIN_SIDE` pixels a side) get the same parameters, in pixels (elastic's
are fractions of the side, as published). Where the published code departs from its own
intent, the published behaviour is kept, as that is what CIFAR-10-C is: glass blur's "swap" is
a copy (a NumPy aliasing slip in the original), and the final ``np.uint8`` truncates (a
``1e-6`` guard keeps exact integers from falling one level through float rounding).

Differences from CIFAR-10-C, each forced by a dependency calibkit does not take:

- ``motion_blur`` and the streaks of ``snow``: ImageMagick's ``MotionBlurImage`` (through
  Wand) in the original; here ``imagecorruptions``' NumPy re-implementation (a one-sided
  Gaussian-weighted line of edge-replicated shifts), with the CIFAR radii and sigmas;
- ``elastic_transform``: OpenCV's ``warpAffine`` rounds sampling points to 1/32 pixel; here
  they are exact (bilinear, reflect-101 borders as in OpenCV);
- ``defocus_blur``: OpenCV's 3x3 Gaussian anti-aliasing of the disk and its ``filter2D``
  (reflect-101 borders), restated in SciPy.

Not available: ``frost`` (a synthetic stand-in for its photographs would not be CIFAR-10-C's
frost) and ``spatter`` (one of the four extras), refused with the reason :data:`UNAVAILABLE`
gives.

>>> import numpy as np
>>> images = np.full((2, 32, 32, 3), 128, dtype=np.uint8)
>>> out = corrupt(images, "gaussian_noise", 3, key="doc")
>>> out.shape, out.dtype, bool((out != images).any())
((2, 32, 32, 3), dtype('uint8'), True)
>>> np.array_equal(corrupt(images[1:], "gaussian_noise", 3, key="doc", indices=[1]), out[1:])
True
>>> corrupt(images, "contrast", 6)
Traceback (most recent call last):
...
calibkit.core.errors.InputError: severity: expected an integer in 1..5, got 6
"""

from __future__ import annotations

import io
import zlib
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from calibkit.core import names
from calibkit.core.errors import InputError
from calibkit.core.registry import Registry

__all__ = ["CORRUPTIONS", "MIN_SIDE", "SEVERITIES", "UNAVAILABLE", "check_corruption", "corrupt"]

Floats = npt.NDArray[np.float64]
Gens = Sequence[np.random.Generator]
#: A corruption: ``(images, param, rngs) -> images``; ``images`` float64 in [0, 1] (or uint8
#: for the entries registered with ``uint8=True``), ``rngs`` one generator per image.
Corruption = Callable[[Any, Any, Gens], Any]

#: The severities, as published.
SEVERITIES = (1, 2, 3, 4, 5)
#: The smallest image side any corruption is applied to.
MIN_SIDE = 8
#: Images per vectorised chunk (bounds memory; results do not depend on it).
CHUNK = 1024

#: The corruptions by name, declared (names and order) in
#: :data:`calibkit.core.names.CORRUPTIONS`. Metadata: ``params``, the published parameter per
#: severity; ``uint8``, whether it works on uint8 pixels.
CORRUPTIONS: Registry[Corruption] = Registry("corruption")
for _name in names.CORRUPTIONS:
    CORRUPTIONS.declare(_name, __name__)

#: Corruptions of CIFAR-10-C that calibkit does not provide, with the reason.
UNAVAILABLE = {
    "frost": "it blends Hendrycks' frost photographs, which calibkit does not ship",
    "spatter": "it is built on OpenCV (Canny edges, distance transform), not a dependency",
}


def _ndimage() -> Any:
    """``scipy.ndimage``, imported on first use (loading a dataset spec does not need it)."""
    from scipy import ndimage

    return ndimage


def _draw(rngs: Gens, f: Callable[[np.random.Generator], Any]) -> Floats:
    """One draw per image, stacked (each image's generator draws its own, in order)."""
    return np.stack([np.asarray(f(r)) for r in rngs])


def _gaussian(x: Floats, sigma: float, mode: str = "nearest", truncate: float = 4.0) -> Floats:
    """scikit-image's ``gaussian`` over the two spatial axes of ``(N, H, W, C)`` images."""
    return np.asarray(
        _ndimage().gaussian_filter(x, (0, sigma, sigma, 0), mode=mode, truncate=truncate),
        dtype=np.float64,
    )


def rgb_to_hsv(x: Floats) -> Floats:
    """scikit-image's ``rgb2hsv`` on ``(..., 3)`` values in [0, 1].

    >>> rgb_to_hsv(np.array([[1.0, 0.5, 0.0]])).round(4).tolist()
    [[0.0833, 1.0, 1.0]]
    """
    v = x.max(-1)
    delta = v - x.min(-1)
    safe = np.where(delta == 0, 1.0, delta)
    s = np.where(delta == 0, 0.0, delta / np.where(v == 0, 1.0, v))
    r, g, b = x[..., 0], x[..., 1], x[..., 2]
    h = np.where(r == v, (g - b) / safe, 0.0)  # later matches win, as in scikit-image
    h = np.where(g == v, 2.0 + (b - r) / safe, h)
    h = np.where(b == v, 4.0 + (r - g) / safe, h)
    h = np.where(delta == 0, 0.0, (h / 6.0) % 1.0)
    return np.stack([h, s, v], axis=-1)


def hsv_to_rgb(x: Floats) -> Floats:
    """scikit-image's ``hsv2rgb`` on ``(..., 3)`` values in [0, 1].

    >>> hsv_to_rgb(rgb_to_hsv(np.array([[0.2, 0.4, 0.9]]))).round(6).tolist()
    [[0.2, 0.4, 0.9]]
    """
    h, s, v = x[..., 0], x[..., 1], x[..., 2]
    hi = np.floor(h * 6)
    f = h * 6 - hi
    p, q, t = v * (1 - s), v * (1 - f * s), v * (1 - (1 - f) * s)
    options = np.stack(
        [
            np.stack(c, axis=-1)
            for c in ((v, t, p), (q, v, p), (p, v, t), (p, q, v), (t, p, v), (v, p, q))
        ]
    )
    sector = (hi.astype(np.int64) % 6)[None, ..., None]
    return np.asarray(
        np.take_along_axis(options, np.broadcast_to(sector, (1, *x.shape)), 0)[0], dtype=np.float64
    )


def _on_rgb(x: Floats, f: Callable[[Floats], Floats]) -> Floats:
    """``f`` on RGB images; grey images are made RGB, and their first channel kept (as
    ``imagecorruptions`` does)."""
    if x.shape[-1] == 3:
        return f(x)
    return f(np.repeat(x, 3, axis=-1))[..., :1]


def _clipped_zoom(x: Floats, z: float) -> Floats:
    """``make_cifar_c.py``'s ``clipped_zoom``: the centre ``ceil(side / z)`` crop zoomed by
    ``z`` (linear), trimmed back to the image's size (per axis, so not only squares)."""
    h, w = x.shape[1:3]
    ch, cw = int(np.ceil(h / z)), int(np.ceil(w / z))
    top, left = (h - ch) // 2, (w - cw) // 2
    # SciPy's linear zoom of each axis, as a matrix (zoom is linear: zoom the identity).
    rows = _ndimage().zoom(np.eye(ch), (z, 1), order=1)
    cols = _ndimage().zoom(np.eye(cw), (z, 1), order=1)
    th, tw = (rows.shape[0] - h) // 2, (cols.shape[0] - w) // 2
    rows, cols = rows[th : th + h], cols[tw : tw + w]
    crop = x[:, top : top + ch, left : left + cw]
    return np.asarray(
        np.einsum("ij,njkc,lk->nilc", rows, crop, cols, optimize=True), dtype=np.float64
    )


def _motion_blur(x: Floats, radius: int, sigma: float, angles: Floats) -> Floats:
    """``imagecorruptions``' ``_motion_blur`` (its stand-in for ImageMagick's), one angle
    (degrees) per image: a line of ``2 * radius + 1`` edge-replicated shifts weighted by a
    one-sided Gaussian of ``sigma``; a shift past the image ends the line."""
    n, h, w = x.shape[:3]
    width = 2 * radius + 1
    k = np.exp(-(np.arange(width) ** 2) / (2 * sigma**2))
    k /= k.sum()
    rad = np.deg2rad(angles)
    py, px = width * np.sin(rad), width * np.cos(rad)
    hyp = np.hypot(py, px)
    out = np.zeros_like(x)
    alive = np.ones(n, dtype=bool)
    rows, cols, idx = np.arange(h), np.arange(w), np.arange(n)[:, None, None]
    for i in range(width):
        dy = -np.ceil(i * py / hyp - 0.5).astype(np.int64)
        dx = -np.ceil(i * px / hyp - 0.5).astype(np.int64)
        alive &= (np.abs(dy) < h) & (np.abs(dx) < w)
        r = np.clip(rows[None, :] - dy[:, None], 0, h - 1)[:, :, None]
        c = np.clip(cols[None, :] - dx[:, None], 0, w - 1)[:, None, :]
        out += np.where(alive[:, None, None, None], k[i] * x[idx, r, c], 0.0)
    return out


def _disk(radius: float, alias_blur: float) -> Floats:
    """``make_cifar_c.py``'s ``disk``: a normalised disk on a 17x17 grid (``2r+1`` past radius
    8), blurred by OpenCV's 3x3 (5x5 past 8) Gaussian of ``alias_blur`` (reflect-101
    borders), cropped to its support."""
    half = 8 if radius <= 8 else int(radius)
    grid = np.arange(-half, half + 1)
    xx, yy = np.meshgrid(grid, grid)
    d = ((xx**2 + yy**2) <= radius**2).astype(np.float64)
    d /= d.sum()
    k = 1 if radius <= 8 else 2
    g = np.exp(-(np.arange(-k, k + 1) ** 2) / (2 * alias_blur**2))
    g /= g.sum()
    d = _ndimage().correlate1d(_ndimage().correlate1d(d, g, 0, mode="mirror"), g, 1, mode="mirror")
    keep = np.flatnonzero(d.any(axis=0))  # symmetric: the same rows and columns
    return np.asarray(d[keep[0] : keep[-1] + 1, keep[0] : keep[-1] + 1], dtype=np.float64)


def _plasma(rngs: Gens, size: int, decay: float) -> Floats:
    """``make_cifar_c.py``'s ``plasma_fractal`` (diamond-square), one map per generator."""
    n = len(rngs)
    m = np.zeros((n, size, size))
    step, wibble = size, 100.0

    def wibbled(a: Floats) -> Floats:
        return a / 4 + wibble * _draw(rngs, lambda r: r.uniform(-wibble, wibble, a.shape[1:]))

    while step >= 2:
        half = step // 2
        corner = m[:, 0:size:step, 0:size:step]
        square = corner + np.roll(corner, -1, axis=1)
        square += np.roll(square, -1, axis=2)
        m[:, half:size:step, half:size:step] = wibbled(square)
        dr = m[:, half:size:step, half:size:step]
        ul = m[:, 0:size:step, 0:size:step]
        lt = dr + np.roll(dr, 1, axis=1) + ul + np.roll(ul, -1, axis=2)
        m[:, 0:size:step, half:size:step] = wibbled(lt)
        tt = dr + np.roll(dr, 1, axis=2) + ul + np.roll(ul, -1, axis=1)
        m[:, half:size:step, 0:size:step] = wibbled(tt)
        step //= 2
        wibble /= decay
    m -= m.min(axis=(1, 2), keepdims=True)
    return np.asarray(m / m.max(axis=(1, 2), keepdims=True), dtype=np.float64)


# ----- the corruptions, in make_cifar_c.py's order; params are its CIFAR-10-C tables -----


@CORRUPTIONS.register("gaussian_noise", params=(0.04, 0.06, 0.08, 0.09, 0.10))
def gaussian_noise(x: Floats, c: float, rngs: Gens) -> Floats:
    """``x + N(0, c^2)`` per pixel and channel."""
    return x + c * _draw(rngs, lambda r: r.normal(size=x.shape[1:]))


@CORRUPTIONS.register("shot_noise", params=(500, 250, 100, 75, 50))
def shot_noise(x: Floats, c: float, rngs: Gens) -> Floats:
    """``Poisson(x * c) / c``."""
    return np.stack([r.poisson(xi * c) for r, xi in zip(rngs, x, strict=True)]) / c


@CORRUPTIONS.register("impulse_noise", params=(0.01, 0.02, 0.03, 0.05, 0.07))
def impulse_noise(x: Floats, c: float, rngs: Gens) -> Floats:
    """scikit-image's salt and pepper: each value set to 0 or 1 (evenly) with probability
    ``c``."""
    flip = _draw(rngs, lambda r: r.random(x.shape[1:]) < c)
    salt = _draw(rngs, lambda r: r.random(x.shape[1:]) < 0.5)
    return np.where(flip, np.where(salt, 1.0, 0.0), x)


@CORRUPTIONS.register(
    "defocus_blur", params=((0.3, 0.4), (0.4, 0.5), (0.5, 0.6), (1, 0.2), (1.5, 0.1))
)
def defocus_blur(x: Floats, c: tuple[float, float], rngs: Gens) -> Floats:
    """Correlation with a disk of radius ``c[0]`` anti-aliased by a Gaussian of ``c[1]``."""
    kernel = _disk(*c)
    return np.asarray(
        _ndimage().correlate(x, kernel[None, :, :, None], mode="mirror"), dtype=np.float64
    )


@CORRUPTIONS.register(
    "glass_blur", params=((0.05, 1, 1), (0.25, 1, 1), (0.4, 1, 1), (0.25, 1, 2), (0.4, 1, 2))
)
def glass_blur(x: Floats, c: tuple[float, int, int], rngs: Gens) -> Floats:
    """Gaussian blur of ``c[0]``, quantised; ``c[2]`` passes over the pixels from the bottom
    right, each taking the value of a random neighbour within ``c[1]`` (the published "swap"
    copies); Gaussian blur again."""
    sigma, d, passes = c
    n, h, w = x.shape[:3]
    y = np.floor(_gaussian(x, sigma) * 255).astype(np.uint8)
    spots = [(i, j) for i in range(h - d, d, -1) for j in range(w - d, d, -1)] * passes
    moves = _draw(rngs, lambda r: r.integers(-d, d, size=(len(spots), 2)))  # (dx, dy)
    idx = np.arange(n)
    for s, (i, j) in enumerate(spots):
        y[idx, i, j] = y[idx, i + moves[:, s, 1], j + moves[:, s, 0]]
    return _gaussian(y / 255.0, sigma)


@CORRUPTIONS.register("motion_blur", params=((6, 1), (6, 1.5), (6, 2), (8, 2), (9, 2.5)))
def motion_blur(x: Floats, c: tuple[int, float], rngs: Gens) -> Floats:
    """Motion blur of radius ``c[0]`` and sigma ``c[1]`` at an angle uniform in [-45, 45]."""
    angles = _draw(rngs, lambda r: r.uniform(-45, 45))
    return _motion_blur(x, c[0], c[1], angles)


_ZOOMS = tuple(tuple(np.arange(1, top, 0.01).tolist()) for top in (1.06, 1.11, 1.16, 1.21, 1.26))


@CORRUPTIONS.register("zoom_blur", params=_ZOOMS)
def zoom_blur(x: Floats, c: Sequence[float], rngs: Gens) -> Floats:
    """The mean of the image and its centre zooms by each factor of ``c``."""
    out = x.copy()
    for z in c:
        out += _clipped_zoom(x, z)
    return out / (len(c) + 1)


@CORRUPTIONS.register("snow", params=(
    (0.1, 0.2, 1, 0.6, 8, 3, 0.95),
    (0.1, 0.2, 1, 0.5, 10, 4, 0.9),
    (0.15, 0.3, 1.75, 0.55, 10, 4, 0.9),
    (0.25, 0.3, 2.25, 0.6, 12, 6, 0.85),
    (0.3, 0.3, 1.25, 0.65, 14, 12, 0.8),
))  # fmt: skip
def snow(x: Floats, c: tuple[float, ...], rngs: Gens) -> Floats:
    """A layer ``N(c[0], c[1]^2)`` zoomed by ``c[2]``, cut below ``c[3]``, motion-blurred
    (radius ``c[4]``, sigma ``c[5]``, angle in [-135, -45]) and added twice (turned by 180
    degrees); the image is first brightened towards ``1.5 * grey + 0.5`` by ``1 - c[6]``."""
    _n, h, w = x.shape[:3]
    layer = _draw(rngs, lambda r: r.normal(c[0], c[1], size=(h, w)))[..., None]
    layer = _clipped_zoom(layer, c[2])
    layer[layer < c[3]] = 0
    layer = (np.clip(layer, 0, 1) * 255).astype(np.uint8).astype(np.float64)
    angles = _draw(rngs, lambda r: r.uniform(-135, -45))
    layer = np.round(_motion_blur(layer, int(c[4]), c[5], angles)) / 255.0
    grey = x @ np.array([0.299, 0.587, 0.114]) if x.shape[-1] == 3 else x[..., 0]
    x = c[6] * x + (1 - c[6]) * np.maximum(x, grey[..., None] * 1.5 + 0.5)
    return x + layer + layer[:, ::-1, ::-1]


@CORRUPTIONS.register("fog", params=((0.2, 3), (0.5, 3), (0.75, 2.5), (1, 2), (1.5, 1.75)))
def fog(x: Floats, c: tuple[float, float], rngs: Gens) -> Floats:
    """Add ``c[0]`` times a plasma fractal (roughness decay ``c[1]``), rescale by
    ``max / (max + c[0])``."""
    h, w = x.shape[1:3]
    size = 1 << (max(h, w) - 1).bit_length()  # CIFAR: 32
    top = x.max(axis=(1, 2, 3), keepdims=True)
    x = x + c[0] * _plasma(rngs, size, c[1])[:, :h, :w, None]
    return np.asarray(x * top / (top + c[0]), dtype=np.float64)


@CORRUPTIONS.register("brightness", params=(0.05, 0.1, 0.15, 0.2, 0.3))
def brightness(x: Floats, c: float, rngs: Gens) -> Floats:
    """HSV value ``+ c`` (clipped to 1)."""

    def f(rgb: Floats) -> Floats:
        hsv = rgb_to_hsv(rgb)
        hsv[..., 2] = np.clip(hsv[..., 2] + c, 0, 1)
        return hsv_to_rgb(hsv)

    return _on_rgb(x, f)


@CORRUPTIONS.register("contrast", params=(0.75, 0.5, 0.4, 0.3, 0.15))
def contrast(x: Floats, c: float, rngs: Gens) -> Floats:
    """``(x - m) * c + m``, ``m`` each channel's mean over the image."""
    m = x.mean(axis=(1, 2), keepdims=True)
    return np.asarray((x - m) * c + m, dtype=np.float64)


@CORRUPTIONS.register("elastic_transform", params=(
    (0.0, 0.0, 0.08), (0.05, 0.2, 0.07), (0.08, 0.06, 0.06), (0.1, 0.04, 0.05), (0.1, 0.03, 0.03)
))  # fmt: skip
def elastic_transform(x: Floats, c: tuple[float, float, float], rngs: Gens) -> Floats:
    """A random affine warp (three points moved up to ``c[2]``), then a displacement field of
    smoothed noise (scale ``c[0]``, Gaussian ``c[1]``); all in fractions of the side (32 for
    CIFAR), bilinear."""
    n, h, w = x.shape[:3]
    size = min(h, w)
    scale, smooth, shift = (v * size for v in c)
    ch, cw = h // 2, w // 2  # published: (h, w) used as (x, y); the same for squares
    sq = size // 3
    src = np.array([[ch + sq, cw + sq], [ch + sq, cw - sq], [ch - sq, cw - sq]], dtype=np.float64)
    dst = src + _draw(rngs, lambda r: r.uniform(-shift, shift, size=(3, 2)))
    # warpAffine maps output (col, row) through the inverse of src -> dst, i.e. dst -> src.
    a = np.concatenate([dst, np.ones((n, 3, 1))], axis=2)
    inv = np.linalg.solve(a, np.broadcast_to(src, (n, 3, 2)))  # (n, 3, 2): [col, row, 1] @ inv
    rows, cols = np.meshgrid(np.arange(h), np.arange(w), indexing="ij")
    pts = np.stack([cols, rows, np.ones_like(rows)], axis=-1).astype(np.float64)
    mapped = np.einsum("hwk,nkj->nhwj", pts, inv)  # (n, h, w, [col, row])
    x = _sample(x, mapped[..., 1], mapped[..., 0], "mirror")
    fields = [_draw(rngs, lambda r: r.uniform(-1, 1, size=(h, w))) for _ in range(2)]
    dx, dy = (
        _ndimage().gaussian_filter(f, (0, smooth, smooth), mode="reflect", truncate=3) * scale
        for f in fields
    )
    return _sample(x, rows + dy, cols + dx, "reflect")


def _sample(x: Floats, rows: Floats, cols: Floats, mode: str) -> Floats:
    """``x`` at real ``(rows, cols)`` per image (bilinear, scipy border ``mode``), every
    channel."""
    n, h, w, k = x.shape
    grid = np.broadcast_to(np.arange(n)[:, None, None, None], (n, h, w, k))
    chan = np.broadcast_to(np.arange(k), (n, h, w, k))
    coords = [
        grid,
        np.broadcast_to(rows[..., None], (n, h, w, k)),
        np.broadcast_to(cols[..., None], (n, h, w, k)),
        chan,
    ]
    return np.asarray(
        _ndimage().map_coordinates(x, np.stack(coords), order=1, mode=mode), dtype=np.float64
    )


def _pil_each(x: npt.NDArray[np.uint8], f: Callable[[Any], Any]) -> npt.NDArray[np.uint8]:
    from PIL import Image

    grey = x.shape[-1] == 1
    out = [np.asarray(f(Image.fromarray(im[..., 0] if grey else im))) for im in x]
    return np.stack(out).reshape(x.shape)


@CORRUPTIONS.register("pixelate", params=(0.95, 0.9, 0.85, 0.75, 0.65), uint8=True)
def pixelate(x: npt.NDArray[np.uint8], c: float, rngs: Gens) -> npt.NDArray[np.uint8]:
    """PIL box resize to ``int(side * c)`` and back (box)."""
    from PIL import Image

    h, w = x.shape[1:3]
    small = (int(w * c), int(h * c))
    return _pil_each(
        x, lambda im: im.resize(small, Image.Resampling.BOX).resize((w, h), Image.Resampling.BOX)
    )


@CORRUPTIONS.register("jpeg_compression", params=(80, 65, 58, 50, 40), uint8=True)
def jpeg_compression(x: npt.NDArray[np.uint8], c: int, rngs: Gens) -> npt.NDArray[np.uint8]:
    """PIL's JPEG encoder at quality ``c``, decoded."""
    from PIL import Image

    def f(im: Any) -> Any:
        buf = io.BytesIO()
        im.save(buf, "JPEG", quality=c)
        return Image.open(buf)

    return _pil_each(x, f)


# ----- the extras (Hendrycks & Dietterich's validation corruptions), but spatter -----


@CORRUPTIONS.register("speckle_noise", params=(0.06, 0.1, 0.12, 0.16, 0.2))
def speckle_noise(x: Floats, c: float, rngs: Gens) -> Floats:
    """``x + x * N(0, c^2)``."""
    return x + x * c * _draw(rngs, lambda r: r.normal(size=x.shape[1:]))


@CORRUPTIONS.register("gaussian_blur", params=(0.4, 0.6, 0.7, 0.8, 1.0))
def gaussian_blur(x: Floats, c: float, rngs: Gens) -> Floats:
    """Gaussian blur of sigma ``c`` (scikit-image's: nearest borders, truncated at 4 sigma)."""
    return _gaussian(x, c)


@CORRUPTIONS.register("saturate", params=((0.3, 0), (0.1, 0), (1.5, 0), (2, 0.1), (2.5, 0.2)))
def saturate(x: Floats, c: tuple[float, float], rngs: Gens) -> Floats:
    """HSV saturation ``* c[0] + c[1]`` (clipped to 1)."""

    def f(rgb: Floats) -> Floats:
        hsv = rgb_to_hsv(rgb)
        hsv[..., 1] = np.clip(hsv[..., 1] * c[0] + c[1], 0, 1)
        return hsv_to_rgb(hsv)

    return _on_rgb(x, f)


def check_corruption(name: str, severity: object) -> int:
    """The severity as an int, after checking ``name`` and ``severity``.

    Unknown names are refused listing the valid ones (and why frost and spatter are not).
    """
    if name not in CORRUPTIONS:
        why = "; ".join(f"{k} is not available: {v}" for k, v in UNAVAILABLE.items())
        raise InputError(
            "corruption", f"one of {', '.join(CORRUPTIONS.names())} ({why})", repr(name)
        )
    if not isinstance(severity, int | np.integer) or isinstance(severity, bool):
        raise InputError("severity", "an integer in 1..5", repr(severity))
    if int(severity) not in SEVERITIES:
        raise InputError("severity", "an integer in 1..5", repr(severity))
    return int(severity)


def _generators(seed: int, key: str, name: str, severity: int, ids: Sequence[int]) -> Gens:
    base = [seed, zlib.crc32(key.encode()), zlib.crc32(name.encode()), severity]
    return [np.random.default_rng([*base, int(i)]) for i in ids]


def corrupt(
    images: npt.ArrayLike,
    corruption: str,
    severity: int,
    *,
    seed: int = 0,
    key: str = "",
    indices: npt.ArrayLike | None = None,
) -> npt.NDArray[np.uint8]:
    """``images`` (uint8 ``(N, H, W, C)``, ``C`` 1 or 3, sides >= :data:`MIN_SIDE`) with
    ``corruption`` at ``severity`` (1-5), uint8 of the same shape.

    Image ``i`` is corrupted by its own generator, seeded by ``(seed, key, corruption,
    severity, indices[i])``; ``indices`` defaults to ``0..N-1`` and ``key`` names the
    collection (:func:`~calibkit.data.load_dataset` passes ``dataset/split`` and each
    image's place in the split), so the result for an image does not depend on the others.
    """
    severity = check_corruption(corruption, severity)
    x = np.asarray(images)
    if x.dtype != np.uint8 or x.ndim != 4 or x.shape[-1] not in (1, 3):
        raise InputError(
            "images", "uint8 images (N, H, W, C) with C 1 or 3", f"{x.dtype} {x.shape}"
        )
    if x.size and min(x.shape[1:3]) < MIN_SIDE:
        raise InputError(
            "images", f"sides of at least {MIN_SIDE} pixels for {corruption}", f"{x.shape[1:3]}"
        )
    ids = np.arange(len(x)) if indices is None else np.asarray(indices).reshape(-1)
    if ids.shape != (len(x),) or (ids.size and not np.issubdtype(ids.dtype, np.integer)):
        raise InputError("indices", f"{len(x)} integers", f"{ids.dtype} {ids.shape}")
    info = CORRUPTIONS.info(corruption)
    param = info["params"][severity - 1]
    f = CORRUPTIONS.get(corruption)
    out = np.empty_like(x)
    for start in range(0, len(x), CHUNK):
        part, part_ids = x[start : start + CHUNK], ids[start : start + CHUNK]
        rngs = _generators(seed, key, corruption, severity, part_ids.tolist())
        if info.get("uint8", False):
            out[start : start + len(part)] = f(part, param, rngs)
        else:
            y = f(part / 255.0, param, rngs)
            out[start : start + len(part)] = np.floor(np.clip(y, 0, 1) * 255 + 1e-6)
    return out
