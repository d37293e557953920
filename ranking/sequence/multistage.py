"""The multi-stage sequence ranker, trained and served on deep-funnel examples.

```
training (joint):   examples (user, ad, owner, t, labels) in shuffled mini-batches
   unique (user, snapshot_time(t)) --UserModel over <= history events before it--> u
   u + recent events before t + candidate --OnlineRanker--> click, conversion logits
   loss = BCE(conversion) + click_weight * BCE(click); early stopping on validation
serving:            UserEmbeddingCache.refresh for the (user, snapshot) pairs needed
   (batch, no candidate), then the online ranker per candidate reading the cache;
   conversion probabilities Platt-calibrated on the validation window
```
HIR enters three ways when a `HirLookup` is given: the HIR embedding of every event's
item (both stages), the candidate's HIR embedding and BoM tokens, and the MoE route (the
candidate's super-interest, cluster level 0). Every lookup is as of the time the stage
reads it: the snapshot time for stage 1, the request time for stage 2.

A click label is a click by the user on the same ad within `click_window_s` after the
exposure, and never later than the example's attribution window (`label_window_s`, the
manifest's by default): an example is labelled only when that window ends before its
label horizon, so a longer click window would read clicks past the horizon (a training
label from the validation period).
"""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F

from hir_sdk.graph import TemporalGraph
from hir_sdk.graph.event_index import EventIndex
from hir_sdk.ranking.calibration import PROBABILITY_FLOOR, PlattScaling
from hir_sdk.ranking.hir_lookup import HirLookup
from hir_sdk.ranking.sequence.config import MultiStageConfig
from hir_sdk.ranking.sequence.dense_inputs import DenseScaler
from hir_sdk.ranking.sequence.examples import RankingExamples
from hir_sdk.ranking.sequence.history import EventHistory, EventWindow
from hir_sdk.ranking.sequence.online_ranker import (
    CandidateInputs,
    OnlineRanker,
)
from hir_sdk.ranking.sequence.ranker_bundle import OnlineInputs, OnlineRankerBundle
from hir_sdk.ranking.sequence.user_cache import UserEmbeddingCache, snapshot_time
from hir_sdk.ranking.sequence.user_model import UserModel


class MultiStageRanker:
    name = "multistage"

    def __init__(
        self,
        graph: TemporalGraph,
        hir: HirLookup | None = None,
        config: MultiStageConfig | None = None,
        *,
        history: EventHistory | None = None,
        label_window_s: int | None = None,
    ) -> None:
        """`label_window_s`: the attribution window (seconds) the examples' conversion
        labels were read with (default: the manifest's); click labels read no further."""
        self.graph, self.hir = graph, hir
        self.config = config or MultiStageConfig()
        if label_window_s is None:
            label_window_s = graph.manifest.attribution_window_s
        if label_window_s < 1:
            raise ValueError(f"MultiStageRanker: label_window_s must be >= 1, got {label_window_s}")
        self.click_window_s = min(self.config.click_window_s, int(label_window_s))
        self.history = history or EventHistory(graph)
        clicks = graph.role_codes("click")
        mask = np.isin(graph.etype, clicks)
        self._clicks = EventIndex(
            graph.src[mask] * graph.num_nodes + graph.dst[mask], graph.ts[mask]
        )
        self.user_model: UserModel | None = None
        self.ranker: OnlineRanker | None = None
        self.scaler: DenseScaler | None = None
        self.sizes: dict[str, int] = {}  # the OnlineRanker's sizes, set by fit
        self.calibration = PlattScaling()
        self.cache: UserEmbeddingCache | None = None
        self.history_log: list[dict[str, float]] = []
        # history events read by stage 1 and the online stage while training (forward and
        # backward): the token count behind training compute (evaluation.scaling)
        self.training_tokens = 0

    # ---- inputs ------------------------------------------------------------------------
    def _events(self, window: EventWindow, t: np.ndarray) -> tuple[torch.Tensor, ...]:
        hir_z = hir_found = None
        if self.hir is not None:
            rows = self.hir.lookup(window.item, t[:, None])
            hir_z = torch.from_numpy(rows.z)
            hir_found = torch.from_numpy(rows.found & window.mask)
        return (
            torch.from_numpy(window.item),
            torch.from_numpy(window.action),
            torch.from_numpy(window.age),
            torch.from_numpy(window.mask),
            hir_z,
            hir_found,
        )

    def _stage1(self, users: np.ndarray, as_of: np.ndarray) -> torch.Tensor:
        window = self.history.window(users, as_of, self.config.user_model.history).trimmed()
        if self.user_model.training:
            self.training_tokens += int(window.mask.sum())
        return self.user_model(*self._events(window, as_of))

    def embed_users(self, users: np.ndarray, as_of: np.ndarray) -> np.ndarray:
        """Stage 1 alone: (n, out_dim) user embeddings as of snapshot times (no grad)."""
        self.user_model.eval()
        with torch.inference_mode():
            return self._stage1(np.asarray(users), np.asarray(as_of)).numpy()

    def _candidates(self, ex: RankingExamples) -> CandidateInputs:
        n = len(ex)
        if self.hir is not None:
            rows = self.hir.lookup(ex.ad, ex.ts)
            z, found, bom = rows.z, rows.found, rows.tokens
            route = rows.clusters[:, 0]
        else:
            z = np.zeros((n, 0), dtype=np.float32)
            found = np.zeros(n, dtype=bool)
            bom = np.full((n, 1), -1, dtype=np.int64)
            route = np.full(n, -1, dtype=np.int64)
        return CandidateInputs(
            ad=torch.from_numpy(ex.ad),
            owner=torch.from_numpy(ex.owner),
            bom=torch.from_numpy(bom),
            hir=torch.from_numpy(z),
            hir_found=torch.from_numpy(found),
            route=torch.from_numpy(route),
            dense=torch.from_numpy(self.scaler.transform(ex.dense)),
        )

    def _online(self, ex: RankingExamples, user: torch.Tensor) -> OnlineInputs:
        recent = self.history.window(ex.user, ex.ts, self.config.ranker.recent)
        if self.ranker.training:
            self.training_tokens += int(recent.mask.sum()) + len(ex)  # + the candidates
        return OnlineInputs(user, self._events(recent, ex.ts), self._candidates(ex))

    def _logits(self, ex: RankingExamples, user: torch.Tensor) -> torch.Tensor:
        x = self._online(ex, user)
        return self.ranker(x.user, x.recent, x.cand)

    def click_labels(self, ex: RankingExamples) -> np.ndarray:
        """1 where the user clicked the ad within `click_window_s` after the exposure,
        capped at the attribution window (see the module docstring)."""
        pair = ex.user * self.graph.num_nodes + ex.ad
        return (self._clicks.count_between(pair, ex.ts, ex.ts + self.click_window_s) > 0).astype(
            np.float32
        )

    # ---- training ----------------------------------------------------------------------
    def _build(self, train: RankingExamples) -> None:
        c = self.config
        torch.manual_seed(c.seed)
        hir_dim = self.hir.dim if self.hir is not None else 0
        self.scaler = DenseScaler(train.dense, bins=c.dense_bins)
        bom_vocab = self.hir.codebooks * self.hir.codewords if self.hir is not None else 1
        routes = self.hir.prototype_sizes[0] if self.hir is not None else 0
        self.make_stages(
            {
                "num_actions": self.history.num_actions,
                "user_dim": c.user_model.out_dim,
                "hir_dim": hir_dim,
                "dense_dim": self.scaler.width,
                "bom_vocab": bom_vocab,
                "routes": routes,
            }
        )

    def make_stages(self, sizes: dict[str, int]) -> None:
        """The two stages, untrained, for the online ranker's `sizes`: those `fit` derives
        from its data, or a saved ranker's (`multistage_files`)."""
        self.sizes = dict(sizes)
        c = self.config
        self.user_model = UserModel(c.user_model, sizes["num_actions"], sizes["hir_dim"])
        self.ranker = OnlineRanker(c.ranker, **sizes)

    def _sample(self, ex: RankingExamples, limit: int, salt: int) -> RankingExamples:
        if len(ex) <= limit:
            return ex
        rng = np.random.default_rng([self.config.seed, salt])
        return ex.take(np.sort(rng.choice(len(ex), limit, replace=False)))

    def _batch_loss(self, ex: RankingExamples, clicks: np.ndarray) -> torch.Tensor:
        c = self.config
        snap = snapshot_time(ex.ts, c.refresh_s)
        pairs, inverse = np.unique(np.stack([ex.user, snap], 1), axis=0, return_inverse=True)
        u = self._stage1(pairs[:, 0], pairs[:, 1])[torch.from_numpy(inverse.reshape(-1))]
        logits = self._logits(ex, u)
        conv = F.binary_cross_entropy_with_logits(logits[:, 1], torch.from_numpy(ex.label))
        click = F.binary_cross_entropy_with_logits(logits[:, 0], torch.from_numpy(clicks))
        return conv + c.click_weight * click

    def fit(self, train: RankingExamples, valid: RankingExamples) -> MultiStageRanker:
        c = self.config
        train = self._sample(train, c.max_train_examples, 1)
        valid = self._sample(valid, c.max_valid_examples, 2)
        self._build(train)
        clicks = self.click_labels(train)
        params = [*self.user_model.parameters(), *self.ranker.parameters()]
        optimizer = torch.optim.AdamW(params, lr=c.lr, weight_decay=c.weight_decay)
        rng = np.random.default_rng([c.seed, 3])
        best, best_state = float("inf"), None
        for epoch in range(c.epochs):
            self.user_model.train()
            self.ranker.train()
            order = rng.permutation(len(train))
            total = 0.0
            for start in range(0, len(order), c.batch_size):
                rows = np.sort(order[start : start + c.batch_size])
                loss = self._batch_loss(train.take(rows), clicks[rows])
                optimizer.zero_grad(set_to_none=True)
                loss.backward()
                torch.nn.utils.clip_grad_norm_(params, 1.0)
                optimizer.step()
                total += loss.item() * len(rows)
            logits = self.logits(valid, cache=self._new_cache())
            val = float(
                F.binary_cross_entropy_with_logits(
                    torch.from_numpy(logits), torch.from_numpy(valid.label)
                )
            )
            self.history_log.append(
                {"epoch": epoch + 1, "train_loss": total / len(train), "val_conv_logloss": val}
            )
            if val < best:
                best = val
                best_state = (
                    {k: v.clone() for k, v in self.user_model.state_dict().items()},
                    {k: v.clone() for k, v in self.ranker.state_dict().items()},
                    logits,
                )
        self.user_model.load_state_dict(best_state[0])
        self.ranker.load_state_dict(best_state[1])
        self.calibration = PlattScaling.fit(best_state[2], valid.label)
        return self

    # ---- serving -----------------------------------------------------------------------
    def logits(
        self, ex: RankingExamples, *, cache: UserEmbeddingCache | None = None, batch: int = 2048
    ) -> np.ndarray:
        """Uncalibrated conversion logits: refresh the stage-1 cache for the (user,
        snapshot) pairs needed, then run the online stage reading it."""
        if cache is None:
            cache = self.cache if self.cache is not None else self._new_cache()
        snap = snapshot_time(ex.ts, self.config.refresh_s)
        cache.refresh(self.embed_users, ex.user, snap, cost=self.history.count_before)
        self.ranker.eval()
        out = np.zeros(len(ex), dtype=np.float64)
        with torch.inference_mode():
            for start in range(0, len(ex), batch):
                rows = np.arange(start, min(start + batch, len(ex)))
                part = ex.take(rows)
                u = torch.from_numpy(cache.get(part.user, snap[rows]))
                out[rows] = self._logits(part, u)[:, 1].double().numpy()
        return out

    def predict(self, ex: RankingExamples) -> np.ndarray:
        """Calibrated conversion probabilities."""
        if self.ranker is None:
            raise RuntimeError("MultiStageRanker.predict before fit")
        if self.cache is None:
            self.cache = self._new_cache()
        p = self.calibration(self.logits(ex, cache=self.cache))
        return np.clip(p, PROBABILITY_FLOOR, 1 - PROBABILITY_FLOOR)

    def bundle(self, sample: RankingExamples, rows: int = 256) -> OnlineRankerBundle:
        """The online stage as a saveable `OnlineRankerBundle`, with the online inputs of
        the first `rows` of `sample` (real requests, for export parity checks)."""
        if self.ranker is None:
            raise RuntimeError("MultiStageRanker.bundle before fit")
        part = sample.take(np.arange(min(rows, len(sample))))
        if self.cache is None:
            self.cache = self._new_cache()
        snap = snapshot_time(part.ts, self.config.refresh_s)
        self.cache.refresh(self.embed_users, part.user, snap, cost=self.history.count_before)
        user = torch.from_numpy(self.cache.get(part.user, snap))
        return OnlineRankerBundle(
            self.ranker,
            self.calibration,
            dict(self.sizes),
            self._online(part, user),
            self.graph.fingerprint,
        )

    def _new_cache(self) -> UserEmbeddingCache:
        return UserEmbeddingCache(self.config.user_model.out_dim)
