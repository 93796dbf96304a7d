"""Data-set recipes: seeded synthetic images and scikit-learn's real digits."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from repro.npz import write_npz

# ImageNet's per-channel statistics, as MLPerf's ResNet-50 preprocessing uses them.
_MEAN = np.array([123.68, 116.78, 103.94], dtype=np.float32)
_STD = np.array([58.395, 57.12, 57.375], dtype=np.float32)


def write_synthetic_imagenet(out: Path, *, seed: int, count: int, height: int, width: int) -> None:
    """`count` preprocessed images: seeded uint8 pixels, smoothed, normalized per channel, NCHW."""
    rng = np.random.Generator(np.random.PCG64(seed))
    # Low-frequency structure: a coarse grid of pixels upsampled, plus fine noise.
    coarse = rng.integers(0, 256, size=(count, 3, 8, 8), dtype=np.uint8).astype(np.float32)
    rows = (np.arange(height) * 8) // height
    cols = (np.arange(width) * 8) // width
    image = coarse[:, :, rows][:, :, :, cols]
    noise = rng.integers(-16, 17, size=image.shape, dtype=np.int16).astype(np.float32)
    pixels = np.clip(image + noise, 0, 255)
    inputs = (pixels - _MEAN[None, :, None, None]) / _STD[None, :, None, None]
    write_npz(out, {"inputs": inputs.astype(np.float32)})


def digits_split(
    *, test_fraction: float, seed: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The digits data set as float32 in [0, 1], split (stratified, seeded) into train and test."""
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    digits = load_digits()
    x = (digits.data / 16.0).astype(np.float32)
    y = digits.target.astype(np.int64)
    x_train, x_test, y_train, y_test = train_test_split(
        x, y, test_size=test_fraction, random_state=seed, stratify=y
    )
    return x_train, x_test, y_train, y_test


def write_sklearn_digits(out: Path, *, split: str, test_fraction: float, seed: int) -> None:
    """The real digits data set bundled with scikit-learn, as inputs [N, 64] and labels [N]."""
    x_train, x_test, y_train, y_test = digits_split(test_fraction=test_fraction, seed=seed)
    if split == "train":
        x, y = x_train, y_train
    elif split == "test":
        x, y = x_test, y_test
    else:
        x, y = np.concatenate([x_train, x_test]), np.concatenate([y_train, y_test])
    write_npz(out, {"inputs": x, "labels": y})
