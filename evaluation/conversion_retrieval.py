"""Retrieval of the ads users go on to convert on: recall@K of BoM retrieval from a HIR
snapshot, side by side with exact k-NN on the embeddings and a popularity list.

```
truth     (user, ad) pairs with a conversion label in the test window (labels as `hir ab`),
          for users and ads in the snapshot
BoM       the user's tokens query an inverted index over the snapshot's ads (weighted token
          overlap), candidates re-scored by embedding similarity
probe     the same index queried with each codebook's `probes` nearest codewords of the
          user's embedding (multi-probe), re-scored
exact     exact inner-product k-NN of the user's embedding over the ads
popular   the ads most engaged with (any edge into them) before the test start, one list
recall@K  share of truth pairs whose ad is in the user's top K
```
The snapshot must be as of the test start or earlier, so nothing of the test window is
in the queries or the index.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import polars as pl

from hir_sdk.errors import InputError
from hir_sdk.evaluation.examples import build_examples
from hir_sdk.graph import TemporalGraph
from hir_sdk.interests import EntityEmbeddings
from hir_sdk.interests.hierarchy import snapshot_nodes, snapshot_rows
from hir_sdk.ranking.retrieval import InvertedIndex, TokenBags, exact_knn, probe_weights

K_VALUES = (20, 100)
PROBES = 16


@dataclass(frozen=True)
class ConversionRecall:
    users: int
    pairs: int
    ads: int
    k_values: tuple[int, ...]
    recall: dict[str, list[float]]  # method -> recall at each K

    def render(self) -> list[str]:
        """A Markdown table, one row per method."""
        lines = [
            f"{self.users:,} users who convert on {self.pairs:,} (user, ad) pairs in the test "
            f"window; {self.ads:,} ads in the index",
            "",
            "| method | " + " | ".join(f"recall@{k}" for k in self.k_values) + " |",
            "|---|" + "---:|" * len(self.k_values),
        ]
        for name, values in self.recall.items():
            lines.append(f"| {name} | " + " | ".join(f"{r:.3f}" for r in values) + " |")
        return lines


def conversion_recall(
    graph: TemporalGraph,
    snapshot: EntityEmbeddings,
    *,
    k_values: tuple[int, ...] = K_VALUES,
    probes: int = PROBES,
) -> ConversionRecall:
    """recall@K of each method (see the module) for the test window's conversions."""
    cutoff = graph.manifest.time.test_start
    if snapshot.as_of > cutoff:
        raise InputError("the snapshot is newer than the test start: it would see the test window")
    nodes = snapshot_nodes(snapshot, graph)
    row_of = snapshot_rows(snapshot, graph)
    ads = snapshot.of_type("ad")
    ad_nodes = nodes[ads]
    test = build_examples(graph, "test").frame.filter(pl.col("label") == 1)
    truth = test.filter(pl.col("ad").is_in(ad_nodes) & pl.col("user").is_in(nodes))
    truth = truth.unique(["user", "ad"]).sort(["user", "ad"])
    users = np.unique(truth["user"].to_numpy())
    if len(users) == 0:
        raise InputError("no conversions in the test window by users of the snapshot")
    queries = row_of[users]
    z = snapshot.embeddings()
    size = int(snapshot.meta["bom"]["codewords"])
    probes = min(probes, size - 1)  # codewords probed per codebook: fewer than K
    codes = snapshot.quantizer.codes(snapshot.tokens())
    index = InvertedIndex.build(ad_nodes, codes[ads], size, z[ads])
    top = max(k_values)
    wide = 4 * top
    bom = index.search(
        TokenBags.from_codes(codes[queries], size),
        top,
        query_embeddings=z[queries],
        num_candidates=wide,
    )
    scores = np.einsum("bd,mkd->bmk", z[queries], snapshot.quantizer.codebooks)
    probed = index.search(
        probe_weights(scores, probes),
        top,
        query_embeddings=z[queries],
        num_candidates=wide,
    )
    exact = exact_knn(z[queries], z[ads], top, item_ids=ad_nodes)
    seen = np.bincount(graph.dst[: graph.edges_before(cutoff)], minlength=graph.num_nodes)
    popular = ad_nodes[np.lexsort((ad_nodes, -seen[ad_nodes]))][:top]
    lists = {
        "BoM inverted index, re-scored": np.asarray(bom.ids),
        f"BoM index, {probes}-probe query, re-scored": np.asarray(probed.ids),
        "exact k-NN on embeddings": np.asarray(exact.ids),
        "popularity (engagement before test)": np.tile(popular, (len(users), 1)),
    }
    position = np.searchsorted(users, truth["user"].to_numpy())
    ad = truth["ad"].to_numpy()
    recall = {
        name: [float((top_ids[position, :k] == ad[:, None]).any(axis=1).mean()) for k in k_values]
        for name, top_ids in lists.items()
    }
    return ConversionRecall(len(users), len(truth), len(ads), tuple(k_values), recall)
