"""Retrieval from Bag-of-Meaning (BoM) tokens with an inverted index.

Every entity has an embedding and a BoM: its codes from an additive quantizer with M
codebooks of K codewords, as global tokens `m * K + code`. The index maps each token to
the items holding it; a query (one BoM, a segment's aggregated bag, or a multi-probe bag)
collects candidates by weighted token overlap and re-scores the best of them by inner
product. `exact_knn` is the exact reference and `neighbor_recall` compares the two.

- `InvertedIndex`: CSR posting lists; build, batched search, save / load (.npz).
- `TokenBags`: batches of weighted token bags (jagged); `TokenBags.from_codes`.
- `aggregate_tokens`: a segment's members -> one weighted bag.
- `probe_weights`, `probe_bags`: multi-probe bags (dense, sparse) from per-codeword
  query scores; `probe_queries`: sparse bags straight from query embeddings and the
  codebooks, independent of the batch; `CellRouter`: codebook-0 cell scores learned from
  sample queries.
- `exact_knn`, `neighbor_recall`, `per_query_neighbor_recall`, `SearchResult`.
"""

from hir_sdk.ranking.retrieval.aggregate import aggregate_tokens
from hir_sdk.ranking.retrieval.cell_router import CellRouter
from hir_sdk.ranking.retrieval.embedding_probes import probe_queries
from hir_sdk.ranking.retrieval.exact import exact_knn
from hir_sdk.ranking.retrieval.inverted_index import InvertedIndex, TokenWeighting
from hir_sdk.ranking.retrieval.multi_probe import probe_bags, probe_weights
from hir_sdk.ranking.retrieval.recall import neighbor_recall, per_query_neighbor_recall
from hir_sdk.ranking.retrieval.search_result import SearchResult
from hir_sdk.ranking.retrieval.token_bags import TokenBags

__all__ = [
    "CellRouter",
    "InvertedIndex",
    "SearchResult",
    "TokenBags",
    "TokenWeighting",
    "aggregate_tokens",
    "exact_knn",
    "per_query_neighbor_recall",
    "probe_bags",
    "probe_queries",
    "probe_weights",
    "neighbor_recall",
]
