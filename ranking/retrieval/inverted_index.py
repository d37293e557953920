"""`InvertedIndex`: BoM token -> posting list of items, searched by weighted token overlap
and re-scored by embedding inner product.

Notable:

- Postings are CSR: `offsets` (M*K + 1,) and `rows` (N*M,); the items holding global token
  `t = m * K + code` are `rows[offsets[t]:offsets[t + 1]]`, ascending. Every item holds
  exactly one token per codebook, so every item is in exactly M posting lists.
- Overlap score of item i for a query bag {t: w_t}:

      overlap(i) = sum over codebooks m = 0..M-1 whose token t = m*K + codes[i, m] is in the
                   bag, of  w_t * g(t)

  in float32, added in codebook order. g(t) is an item-independent token weight, fixed at
  build: "idf" (default) g(t) = ln((1 + N) / (1 + df(t))) + 1, with df(t) the posting-list
  length, so rare tokens count more and g >= 1; or "uniform" g(t) = 1, for query bags whose
  weights already say how relevant each token is (multi-probe bags, `probe_weights`).
- Candidates are the items sharing at least one token with the bag; the best
  `num_candidates` by (overlap desc, row asc) are re-scored by inner product with the query
  embedding and the best k by (inner product desc, row asc) are returned. Without query
  embeddings the best k by overlap are returned.
- `gather_codebooks=G` reads only the posting lists of codebooks < G (candidates are the
  items sharing a bag token there), while every codebook still adds to the overlap. With
  G = 1 this is an IVF-style index over codebook 0 with the later codebooks as refinement.
- Re-scored inner products are bit-reproducible: `rescoring` defines them per (query,
  item) pair, so they do not depend on batching, threads or the other queries.
- Batched, vectorised search (`PostingScan`); ties are broken by row everywhere. The scan
  keeps its own copy of the embeddings sorted by codebook-0 token (N * D * 4 bytes more).
  With G = 1 and every candidate re-scored, a bag's candidates are whole codebook-0 cells
  and the cell scan (`cell_scan`) scores each probed cell against all its bags in place.
- Saved as one .npz (written atomically); postings are rebuilt from the codes on load.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import numpy as np
import torch

from hir_sdk.errors import InputError
from hir_sdk.ranking.retrieval.cell_scan import EXACT_ROWS, rescore_cells
from hir_sdk.ranking.retrieval.input_checks import (
    ArrayLike,
    as_codes,
    as_embeddings,
    check_positive,
    check_rows,
    to_numpy,
)
from hir_sdk.ranking.retrieval.ordered_topk import PAD_KEY, decode_keys, ordered_topk
from hir_sdk.ranking.retrieval.posting_scan import PostingScan
from hir_sdk.ranking.retrieval.saved_arrays import read_arrays, write_arrays
from hir_sdk.ranking.retrieval.search_result import SearchResult
from hir_sdk.ranking.retrieval.token_bags import TokenBags
from hir_sdk.sampling.blas_threads import one_blas_thread

TokenWeighting = Literal["idf", "uniform"]
TOKEN_WEIGHTINGS = ("idf", "uniform")
FORMAT = "hir-sdk/bom-inverted-index"
FORMAT_VERSION = 1
MAX_ITEMS = 2**31 - 1
CELL_BATCH = 4096  # bags per cell scan: they share each cell's matmul


def token_weights_for(df: np.ndarray, num_items: int, weighting: str) -> np.ndarray:
    """(T,) float32 item-independent token weights g(t) from (T,) posting-list lengths."""
    if weighting == "idf":
        return (np.log((1.0 + num_items) / (1.0 + df)) + 1.0).astype(np.float32)
    if weighting == "uniform":
        return np.ones(df.shape, dtype=np.float32)
    raise InputError(f"token_weighting must be one of {TOKEN_WEIGHTINGS}, got {weighting!r}")


@dataclass(frozen=True, eq=False)
class InvertedIndex:
    """Items' BoM tokens as posting lists; build with `InvertedIndex.build`.

    Attributes:
        item_ids: (N,) int64 unique item ids; results report these.
        codes: (N, M) int64 BoM codes, `codes[i, m]` in [0, K).
        codebook_size: K.
        offsets: (M*K + 1,) int64 CSR offsets, one posting list per global token.
        rows: (N*M,) int64 item rows, ascending within each posting list.
        token_weights: (M*K,) float32 item-independent token weights g(t).
        token_weighting: "idf" or "uniform", how `token_weights` was made.
        embeddings: (N, D) float32 item embeddings for re-scoring, or None.
    """

    item_ids: np.ndarray
    codes: np.ndarray
    codebook_size: int
    offsets: np.ndarray
    rows: np.ndarray
    token_weights: np.ndarray
    token_weighting: str
    embeddings: np.ndarray | None
    _scan: PostingScan = field(init=False, repr=False)  # the search-time layout

    def __post_init__(self) -> None:
        scan = PostingScan.of(
            self.codes, self.codebook_size, self.offsets, self.rows, self.embeddings
        )
        object.__setattr__(self, "_scan", scan)

    @classmethod
    def build(
        cls,
        item_ids: ArrayLike,
        codes: ArrayLike,
        codebook_size: int,
        embeddings: ArrayLike | None = None,
        *,
        token_weighting: TokenWeighting = "idf",
    ) -> InvertedIndex:
        """Index N items by their BoM codes.

        Args:
            item_ids: (N,) unique integer ids.
            codes: (N, M) integer codes in [0, codebook_size).
            codebook_size: K, codewords per codebook.
            embeddings: optional (N, D) finite item embeddings, for re-scoring.
            token_weighting: "idf" or "uniform" (see the module docstring).
        """
        codes_ = as_codes(codes, codebook_size)
        num, levels = codes_.shape
        ids = to_numpy(item_ids)
        if ids.shape != (num,) or (num and ids.dtype.kind not in "iu"):
            raise InputError(f"item_ids must be ({num},) integers, got {ids.shape} {ids.dtype}")
        if not 1 <= num <= MAX_ITEMS:
            raise InputError(f"an index holds 1 to {MAX_ITEMS} items, got {num}")
        ids = ids.astype(np.int64)
        uniq, counts = np.unique(ids, return_counts=True)
        check_rows(counts == 1, "item_ids must be unique", lambda i: f"id {uniq[i]}")
        emb = None if embeddings is None else as_embeddings(embeddings, "embeddings", rows=num)
        flat = (codes_ + np.arange(levels, dtype=np.int64) * codebook_size).reshape(-1)
        order = np.argsort(flat, kind="stable")  # (N*M,); stable keeps rows ascending
        df = np.bincount(flat, minlength=levels * codebook_size)  # (M*K,)
        offsets = np.zeros(levels * codebook_size + 1, dtype=np.int64)
        np.cumsum(df, out=offsets[1:])
        return cls(
            item_ids=ids,
            codes=codes_,
            codebook_size=int(codebook_size),
            offsets=offsets,
            rows=(order // levels).astype(np.int64),
            token_weights=token_weights_for(df, num, token_weighting),
            token_weighting=token_weighting,
            embeddings=emb,
        )

    @property
    def num_items(self) -> int:
        return self.codes.shape[0]

    @property
    def num_codebooks(self) -> int:
        return self.codes.shape[1]

    @property
    def num_tokens(self) -> int:
        return self.num_codebooks * self.codebook_size

    def occupied(self) -> np.ndarray:
        """(M, K) bool: the codewords some indexed item holds (what multi-probe queries
        may probe, `probe_weights(..., occupied=)`)."""
        return (np.diff(self.offsets) > 0).reshape(self.num_codebooks, self.codebook_size)

    def postings(self, token: int) -> np.ndarray:
        """(df,) int64 rows of the items holding global token `token` in [0, M*K)."""
        if not 0 <= token < self.num_tokens:
            raise InputError(f"token must lie in [0, M*K = {self.num_tokens}), got {token}")
        return self.rows[self.offsets[token] : self.offsets[token + 1]]

    def search(
        self,
        bags: TokenBags | ArrayLike,
        k: int,
        *,
        query_embeddings: ArrayLike | None = None,
        num_candidates: int | None = None,
        gather_codebooks: int | None = None,
        batch_size: int = 32,
        num_threads: int | None = None,
    ) -> SearchResult:
        """Top-k items for each of B query bags.

        Args:
            bags: B weighted token bags: `TokenBags` (`TokenBags.from_codes` for users' own
                BoMs, `aggregate_tokens` for segments), or a dense (B, M*K) array of
                weights >= 0 where 0 means "not in the bag" (`probe_weights`).
            k: results per query.
            query_embeddings: (B, D) query embeddings; when given (the index must hold
                embeddings), candidates are re-scored by inner product.
            num_candidates: how many of the best-overlap candidates to re-score (>= k);
                None re-scores every candidate. Unused without `query_embeddings`.
            gather_codebooks: G in [1, M]: candidates are the items sharing a bag token of
                codebooks 0..G-1 (only those posting lists are read); tokens of later
                codebooks still add to the overlap of those items. Default M (all).
            batch_size: bags processed together; bags are grouped by posting volume
                first. Small batches keep the gathered (b, C, D) embeddings in cache. The
                cell scan (`gather_codebooks=1` with every candidate re-scored, see
                `cell_scan`) ignores it: it copies no embeddings and batches up to
                `CELL_BATCH` bags so that they share each cell's matmul. Results depend
                neither on it nor on `num_threads`.
            num_threads: batches searched in parallel (default `torch.get_num_threads()`).

        Returns:
            `SearchResult` (B, k): inner-product scores when re-scored, else overlap.
        """
        k = check_positive(k, "k")
        check_positive(batch_size, "batch_size")
        gather = self.num_codebooks if gather_codebooks is None else gather_codebooks
        if check_positive(gather, "gather_codebooks") > self.num_codebooks:
            raise InputError(f"gather_codebooks must be <= M = {self.num_codebooks}, got {gather}")
        threads = check_positive(num_threads or torch.get_num_threads(), "num_threads")
        num_bags, load, tables, cell_pairs = self._weight_tables(bags, gather)
        queries = None
        if query_embeddings is not None:
            if self.embeddings is None:
                raise InputError("query_embeddings given, but the index holds no embeddings")
            queries = as_embeddings(
                query_embeddings, "query_embeddings", rows=num_bags, dim=self.embeddings.shape[1]
            )
            if num_candidates is not None and check_positive(num_candidates, "num_candidates") < k:
                raise InputError(f"num_candidates ({num_candidates}) must be >= k ({k})")
        out = np.full((num_bags, k), PAD_KEY, dtype=np.int64)
        # batches of bags with similar posting volume: less padding in the (b, U) layouts
        by_load = np.argsort(load, kind="stable")
        scan = self._scan
        cells = queries is not None and num_candidates is None and gather == 1

        def run(start: int) -> None:
            which = by_load[start : start + batch_size]  # (b,) bag indices
            table = tables(which)  # (b, M*K) float32, w_t * g(t)
            if queries is None:
                keys = ordered_topk(scan.overlap_top(table, k, gather), k)
            elif num_candidates is None:  # every candidate is re-scored: no overlap needed
                keys = scan.rescore(scan.candidates(table, gather), queries[which], k)
            else:
                cand = scan.overlap_top(table, num_candidates, gather)  # (b, C) keys
                keys = scan.rescore(scan.positions(cand), queries[which], k)
            out[which, : keys.shape[1]] = keys

        parallel = threads > 1 and num_bags > (EXACT_ROWS if cells else batch_size)
        pool = ThreadPoolExecutor(threads) if parallel else None
        # one BLAS thread per search thread, one thread in all without a pool: OpenBLAS's
        # own threads for each small matmul would compete with ours (and with any other
        # process) for the cores
        with one_blas_thread(), pool or nullcontext():
            mapper = pool.map if pool else map
            if cells:  # one cell scan per CELL_BATCH bags, its exact passes on the threads
                assert queries is not None
                for start in range(0, num_bags, CELL_BATCH):
                    which = by_load[start : start + CELL_BATCH]
                    bag, cell = cell_pairs(which)  # by bag, then cell
                    out[which] = rescore_cells(
                        scan, bag, cell, queries[which], k, mapper, threads if pool else 1
                    )
            else:
                list(mapper(run, range(0, num_bags, batch_size)))
        scores, rows = decode_keys(out)
        return SearchResult.from_rows(rows, scores, self.item_ids)

    def _weight_tables(
        self, bags: TokenBags | ArrayLike, gather: int
    ) -> tuple[
        int,
        np.ndarray,
        Callable[[np.ndarray], np.ndarray],
        Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]],
    ]:
        """Check `bags`. Return B, each bag's (B,) posting volume in codebooks < `gather`,
        a function giving the (b, M*K) table w_t * g(t) of the bags at given indices, and
        one giving those bags' (bag, codebook-0 token) pairs of nonzero table entries, by
        bag then token (what the cell scan reads, without the table)."""
        width = self.num_tokens
        df = np.diff(self.offsets).astype(np.float64)  # (M*K,)
        df[gather * self.codebook_size :] = 0.0  # only gathered posting lists are read
        if isinstance(bags, TokenBags):
            check_rows(
                bags.tokens < width,
                f"bag tokens must be < M*K = {width}",
                lambda i: f"token {bags.tokens[i]}",
            )
            entry_bag = bags.bag_of_entry()
            load = np.bincount(entry_bag, weights=df[bags.tokens], minlength=len(bags))

            def entries(which: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
                """(t,) each entry's bag in `which`, token and weight w_t * g(t)."""
                lengths = np.diff(bags.offsets)[which]  # (b,)
                first = np.cumsum(lengths) - lengths
                entry = np.repeat(bags.offsets[which] - first, lengths) + np.arange(lengths.sum())
                tok = bags.tokens[entry]  # (t,)
                owner = np.repeat(np.arange(which.size), lengths)
                return owner, tok, bags.weights[entry] * self.token_weights[tok]

            def sparse(which: np.ndarray) -> np.ndarray:
                owner, tok, weight = entries(which)
                table = np.zeros((which.size, width), dtype=np.float32)
                table[owner, tok] = weight
                return table

            def sparse_cells(which: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
                owner, tok, weight = entries(which)
                keep = (tok < self.codebook_size) & (weight != 0)
                return owner[keep], tok[keep]

            return len(bags), load, sparse, sparse_cells
        dense = to_numpy(bags)
        if dense.ndim != 2 or dense.shape[1] != width or dense.dtype.kind not in "fiu":
            raise InputError(
                f"dense bags must be a numeric (B, M*K = {width}) array, got {dense.shape} "
                f"{dense.dtype}"
            )
        dense = np.asarray(dense, dtype=np.float32)
        check_rows(
            (np.isfinite(dense) & (dense >= 0)).all(axis=1),
            "dense bag weights must be finite and >= 0",
            lambda b: f"bag {b}",
        )
        gathered = gather * self.codebook_size
        load = (dense[:, :gathered] > 0).astype(np.float32) @ df[:gathered].astype(np.float32)
        first_codebook = self.token_weights[: self.codebook_size]

        def dense_cells(which: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
            bag, cell = np.nonzero(dense[which, : self.codebook_size] * first_codebook != 0)
            return bag, cell

        return dense.shape[0], load, lambda which: dense[which] * self.token_weights, dense_cells

    def save(self, path: str | Path) -> None:
        """Write the index to `path` (.npz) atomically: temp file, then rename."""
        arrays = {
            "item_ids": self.item_ids,
            "codes": self.codes,
            "codebook_size": np.array(self.codebook_size),
            "token_weighting": np.array(self.token_weighting),
        }
        if self.embeddings is not None:
            arrays["embeddings"] = self.embeddings
        write_arrays(path, FORMAT, FORMAT_VERSION, arrays)

    @classmethod
    def load(cls, path: str | Path) -> InvertedIndex:
        """Read an index written by `save` (no pickle); raises `InputError` naming the file."""
        arrays = read_arrays(
            path, FORMAT, FORMAT_VERSION, ("item_ids", "codes", "codebook_size"), "index"
        )
        try:
            return cls.build(
                arrays["item_ids"],
                arrays["codes"],
                int(arrays["codebook_size"]),
                arrays.get("embeddings"),
                token_weighting=str(arrays.get("token_weighting", "idf")),  # type: ignore[arg-type]
            )
        except InputError as err:
            raise InputError(err.problem, file=path, rows=err.rows, total=err.total) from err
