"""`PostingScan`: the search-time copy of an `InvertedIndex` and the vectorised scans
over its posting lists.

Notable:

- Layout: items are stored by position, sorted by (codebook-0 token, row), so each
  codebook-0 posting list is a contiguous range of positions ("cell") and re-scoring reads
  a cell's embeddings contiguously. `order` maps position -> row, `position` row ->
  position; results and tie-breaks always use rows.
- A batch of B bags is a dense (B, M*K) table of w_t * g(t). Its nonzero tokens' posting
  lists are concatenated (a ragged arange, no Python loop) into L entries (bag, item).
  Each entry looks up its item's M tokens in the table (level-major (M, N) token ids), so
  it gets the item's whole overlap, added in codebook order, without a scatter-add or a
  (B, N) buffer. An item reached through several gathered codebooks is kept once: from
  its first matching codebook (no sort needed).
- Per-bag top-C: entries are padded to (B, U) int64 keys packing (score, row)
  (`ordered_topk`) and partitioned, so selection is deterministic and exact. The caller
  batches bags of similar posting volume together, which keeps U close to the mean.
- Re-scoring gathers the candidates' embeddings, (B, C, D), and takes fast inner
  products with the (B, D) queries in one batched matmul; `rescoring.best_rescored` then
  scores exactly (bit-reproducibly) only the candidates near their bag's k-th best.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from hir_sdk.ranking.retrieval.ordered_topk import (
    PAD_KEY,
    decode_rows,
    encode_keys,
    ordered_topk,
)
from hir_sdk.ranking.retrieval.rescoring import best_rescored


class Entries(NamedTuple):
    """One entry per (bag, gathered token, item holding it), grouped by bag; each (L,).

    Attributes:
        bag: the query bag.
        pos: the item's position.
        level: the token's codebook (None once duplicates are removed, or when only
            codebook 0 is gathered).
        score: float32 overlap so far (codebook 0's term when only it is gathered).
        slot: the entry's flat index in a (B, width) row-per-bag layout.
        width: U, the most entries of any bag.
    """

    bag: np.ndarray
    pos: np.ndarray
    level: np.ndarray | None
    score: np.ndarray
    slot: np.ndarray
    width: int


@dataclass(frozen=True, eq=False)
class PostingScan:
    """Position-ordered arrays for search (build with `PostingScan.of`).

    Attributes:
        codebook_size: K.
        offsets: (M*K + 1,) int64 CSR offsets (shared with the index).
        order: (N,) int64 row of each position.
        position: (N,) int64 position of each row.
        postings: (N*M,) int64 the index's posting lists, as positions.
        item_tokens: (M, N) int16 / int32 global token id of each position, per codebook.
        vectors: (N, D) float32 embeddings by position, or None.
        max_norm: an upper bound of the L2 norms of `vectors` (0.0 without them).
    """

    codebook_size: int
    offsets: np.ndarray
    order: np.ndarray
    position: np.ndarray
    postings: np.ndarray
    item_tokens: np.ndarray
    vectors: np.ndarray | None
    max_norm: float

    @classmethod
    def of(
        cls,
        codes: np.ndarray,
        codebook_size: int,
        offsets: np.ndarray,
        rows: np.ndarray,
        embeddings: np.ndarray | None,
    ) -> PostingScan:
        """From an index's (N, M) codes, CSR `offsets` / `rows` and optional embeddings."""
        num, levels = codes.shape
        order = rows[:num]  # codebook 0's posting lists hold every item once, by token
        position = np.empty(num, dtype=np.int64)
        position[order] = np.arange(num)
        small = np.int16 if levels * codebook_size <= np.iinfo(np.int16).max else np.int32
        tokens = codes[order] + np.arange(levels, dtype=np.int64) * codebook_size  # (N, M)
        return cls(
            codebook_size=codebook_size,
            offsets=offsets,
            order=order,
            position=position,
            postings=position[rows],
            item_tokens=np.ascontiguousarray(tokens.astype(small).T),
            vectors=None if embeddings is None else np.take(embeddings, order, axis=0),
            max_norm=0.0 if embeddings is None else largest_norm(embeddings),
        )

    def positions(self, keys: np.ndarray) -> np.ndarray:
        """(B, C) positions of the rows packed in `keys`; -1 for `PAD_KEY`."""
        rows = decode_rows(keys)
        return np.where(rows >= 0, np.take(self.position, rows), -1)

    def entries(self, table: np.ndarray, gather: int) -> Entries:
        """Expand the posting lists of the nonzero tokens of `table` (B, M*K) in codebooks
        < `gather` into entries (bag, token, item), grouped by bag (a ragged arange)."""
        bag, tok = np.nonzero(table[:, : gather * self.codebook_size])  # (T,), (T,)
        lengths = np.take(self.offsets[1:], tok) - np.take(self.offsets[:-1], tok)  # (T,)
        first = np.cumsum(lengths) - lengths  # (T,) each pair's first entry
        total = int(lengths.sum())
        counter = np.arange(total)  # (L,)
        # entry e of pair j reads postings at offsets[tok[j]] + e
        where = np.repeat(np.take(self.offsets, tok) - first, lengths) + counter
        per_bag = np.bincount(bag, weights=lengths, minlength=len(table)).astype(np.int64)
        width = int(per_bag.max()) if per_bag.size else 0
        bag_first = np.cumsum(per_bag) - per_bag  # (B,)
        # entry e of pair j fills slot first[j] + e - bag_first[bag[j]] of its bag's row
        slot = np.repeat(bag * width - np.take(bag_first, bag), lengths) + counter
        entry_bag = np.repeat(bag, lengths)  # (L,)
        if gather == 1:  # codebook 0's posting lists are position ranges; its term is known
            score = np.repeat(table[bag, tok], lengths)
            return Entries(entry_bag, where, None, score, slot, width)
        level = np.repeat(tok // self.codebook_size, lengths)
        pos = np.take(self.postings, where)
        return Entries(entry_bag, pos, level, np.zeros(total, np.float32), slot, width)

    def add_terms(
        self, table: np.ndarray, entries: Entries, gather: int, upto: int | None = None
    ) -> list[np.ndarray]:
        """Add the entries' items' table values of codebooks < `upto` (default M) to
        `entries.score`, codebook by codebook (codebook 0 is already in when `gather` is 1);
        return the hit masks (value > 0) of codebooks < `gather`."""
        base = entries.bag * table.shape[1]  # (L,) where the entry's bag starts in the table
        flat_table = table.reshape(-1)
        hits = []
        for m in range(1 if gather == 1 else 0, upto or self.item_tokens.shape[0]):
            term = np.take(flat_table, np.take(self.item_tokens[m], entries.pos) + base)
            np.add(entries.score, term, out=entries.score)  # (L,), in codebook order
            if m < gather:
                hits.append(term > 0)
        return hits

    def dedupe(self, entries: Entries, hits: list[np.ndarray], num_bags: int) -> Entries:
        """Keep each (bag, item) once: from its first matching gathered codebook."""
        assert entries.level is not None
        keep = np.argmax(np.stack(hits, axis=1), axis=1) == entries.level
        bag = entries.bag[keep]
        slot, width = pad_slots(bag, num_bags)
        return Entries(bag, entries.pos[keep], None, entries.score[keep], slot, width)

    def overlap_top(self, table: np.ndarray, limit: int | None, gather: int) -> np.ndarray:
        """(B, <= limit) int64 keys of the best items by overlap, in no particular order;
        PAD_KEY fills rows with fewer candidates. `limit` None keeps every candidate.

        `table` (B, M*K) holds w_t * g(t) (0 = not in the bag); candidates come from the
        posting lists of its nonzero tokens in codebooks < `gather`.
        """
        entries = self.entries(table, gather)
        hits = self.add_terms(table, entries, gather)
        if gather > 1:
            entries = self.dedupe(entries, hits, len(table))
        keys = np.full(len(table) * entries.width, PAD_KEY, dtype=np.int64)  # (B*U,)
        keys[entries.slot] = encode_keys(entries.score, np.take(self.order, entries.pos))
        keys = keys.reshape(len(table), entries.width)
        return keys if limit is None else ordered_topk(keys, limit, ordered=False)

    def candidates(self, table: np.ndarray, gather: int) -> np.ndarray:
        """(B, U) positions of every candidate, -1 padded (no overlap scores needed)."""
        entries = self.entries(table, gather)
        if gather > 1:
            probe = entries._replace(score=np.zeros(entries.pos.size, np.float32))
            hits = self.add_terms(table, probe, gather, upto=gather)
            entries = self.dedupe(entries, hits, len(table))
        pos = np.full(len(table) * entries.width, -1, dtype=np.int64)  # (B*U,)
        pos[entries.slot] = entries.pos
        return pos.reshape(len(table), entries.width)

    def rescore(self, pos: np.ndarray, queries: np.ndarray, k: int) -> np.ndarray:
        """(B, C) candidate positions (-1 = none) -> (B, <= k) keys by inner product with
        the (B, D) queries."""
        assert self.vectors is not None
        gathered = np.take(self.vectors, pos.reshape(-1), axis=0)  # (B*C, D); -1 reads junk
        gathered = gathered.reshape(*pos.shape, self.vectors.shape[1])  # (B, C, D)
        fast = np.matmul(gathered, queries[:, :, None])[:, :, 0]  # (B, C)
        return best_rescored(fast, pos, self.vectors, self.order, queries, self.max_norm, k)


def largest_norm(embeddings: np.ndarray) -> float:
    """An upper bound of the (N, D) float32 rows' L2 norms: the largest float32 norm (its
    relative rounding error is below (D + 2) * 2**-24) raised by twice that."""
    slack = 2.0 * (embeddings.shape[1] + 2) * 2.0**-24
    return float(np.linalg.norm(embeddings, axis=1).max()) * (1.0 + slack)


def pad_slots(bag: np.ndarray, num_bags: int) -> tuple[np.ndarray, int]:
    """Flat slots of (L,) entries grouped by sorted `bag` in a (B, U) row-per-bag layout,
    and U."""
    counts = np.bincount(bag, minlength=num_bags)  # (B,)
    width = int(counts.max()) if counts.size else 0
    first = np.cumsum(counts) - counts
    return bag * width + np.arange(bag.size) - np.repeat(first, counts), width
