"""LightGCN, SASRec and KGIN run from RecBole itself (`recbole` 1.2.0, its models, data
loaders and trainer), on the MovieLens protocol of `benchmarks/movielens_peers.py`.

RecBole reads the split as pre-split "benchmark" files written from the graph, so its own
random split never applies:

- selection: train on the ratings before the validation start (every rating is a positive
  interaction, as for the `implicit` peers), evaluate each epoch on the likes of the
  validation window as HIR's examples label them (`window_likes`: a rating whose label
  is not known by the test start is left out; users' earlier ratings masked, RecBole's
  full ranking, NDCG@20),
  stop after 10 epochs without improvement; the best epoch fixes the epoch count;
- final fit: the same model, seeded the same way, trained for that many epochs on every
  rating before the test start, with no evaluation (the test window is never read);
- LightGCN (He et al. 2020) and KGIN (Wang et al. 2021) score a user's candidates by the
  dot product of the user's and the items' propagated embeddings; KGIN's knowledge graph is
  the graph's own `ad -> entity` structural edges before the cutoff (the Freebase links HIR
  reads, with the same entity filter); SASRec (Kang and McAuley 2018) reads each user's
  ratings before the cutoff in time order (the last 50, RecBole's default) and scores every
  item against the last position's state;
- hyperparameters are RecBole's defaults for each model (64-dimensional embeddings, Adam
  at 1e-3, batch 2048, one uniform negative for the pairwise models, full softmax for
  SASRec);
- given the validation window's queries, the selection fit (its best epoch, trained on
  the ratings before the validation start) also scores them, so the engagement prior's
  weight and decay can be chosen for a RecBole peer by the rule HIR's and the `implicit`
  peers' are chosen by (without it a RecBole peer would be the one model compared
  without the prior).

`recbole` is installed with `--no-deps` (it pins old versions); what it imports is listed
in `benchmarks/requirements-peers.txt`.
"""

from __future__ import annotations

import contextlib
import logging
import sys
import time
import types
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import scipy.sparse as sp
import torch

from hir_sdk.evaluation.conversion_retrieval import RankedLists
from hir_sdk.graph import TemporalGraph

from .protocol import Ratings, ratings, window_likes

MODELS = ("LightGCN", "SASRec", "KGIN")
KINDS = {"LightGCN": "general", "SASRec": "sequential", "KGIN": "knowledge"}
MAX_SEQUENCE = 50  # RecBole's MAX_ITEM_LIST_LENGTH default
PATIENCE = 10  # RecBole's stopping_step default
VALID_METRIC = "NDCG@20"


@dataclass(frozen=True)
class PeerFit:
    """One RecBole peer: its (U, A) scores over the candidates, the embeddings it scores
    with (rows for `user_nodes` / `ad_nodes`, zero where a node is unknown to it), the
    epoch count chosen on the validation window and the time both fits took."""

    name: str
    scores: np.ndarray
    user_nodes: np.ndarray
    user_vectors: np.ndarray
    ad_nodes: np.ndarray
    ad_vectors: np.ndarray
    epochs: int
    valid_score: float
    seconds: float
    # (U', A') scores of the validation queries by the selection fit (None: not asked)
    validation_scores: np.ndarray | None = None


def _rows(path: Path, header: list[str], rows: list[list[str]]) -> None:
    lines = ["\t".join(header), *("\t".join(r) for r in rows)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def _sequences(train: Ratings) -> dict[int, list[int]]:
    """Each user's rated movies in time order (ties in edge order)."""
    order = np.lexsort((np.arange(len(train.ts)), train.ts, train.user))
    out: dict[int, list[int]] = {}
    for u, a in zip(train.user[order], train.ad[order], strict=True):
        out.setdefault(int(u), []).append(int(a))
    return out


def _seq_text(items: list[int]) -> str:
    return " ".join(str(a) for a in items[-MAX_SEQUENCE:])


def _write_split(
    folder: Path, kind: str, graph: TemporalGraph, train: Ratings, valid: Ratings, cutoff: int
) -> None:
    """RecBole benchmark files `peers.{train,valid,test}.inter` (the test file repeats the
    validation rows: RecBole wants three files, nothing reads the third), and for KGIN the
    knowledge graph before `cutoff` with each movie in it linked to itself (a movie with no
    triple stays a plain item)."""
    folder.mkdir(parents=True)
    known_users, known_ads = set(train.user.tolist()), set(train.ad.tolist())
    likes = [
        (int(u), int(a), int(t))
        for u, a, t, liked in zip(valid.user, valid.ad, valid.ts, valid.liked, strict=True)
        if liked and u in known_users and a in known_ads
    ]
    if kind == "sequential":
        header = ["user_id:token", "item_id_list:token_seq", "item_id:token"]
        history = _sequences(train)
        train_rows = [
            [str(u), _seq_text(items[:i]), str(items[i])]
            for u, items in history.items()
            for i in range(1, len(items))
        ]
        valid_rows = [[str(u), _seq_text(history[u]), str(a)] for u, a, _ in likes]
    else:
        header = ["user_id:token", "item_id:token", "timestamp:float"]
        train_rows = [
            [str(u), str(a), str(t)] for u, a, t in zip(train.user, train.ad, train.ts, strict=True)
        ]
        valid_rows = [[str(u), str(a), str(t)] for u, a, t in likes]
    _rows(folder / "peers.train.inter", header, train_rows)
    for name in ("valid", "test"):
        _rows(folder / f"peers.{name}.inter", header, valid_rows)
    if kind == "knowledge":
        k = graph.edges_before(cutoff)
        structural = np.flatnonzero(np.isin(graph.etype[:k], graph.role_codes("structural")))
        relation = [graph.manifest.edge_types[c].rel for c in graph.etype[structural]]
        _rows(
            folder / "peers.kg",
            ["head_id:token", "relation_id:token", "tail_id:token"],
            [
                [str(h), r, str(t)]
                for h, r, t in zip(
                    graph.src[structural], relation, graph.dst[structural], strict=True
                )
            ],
        )
        # RecBole links a movie to its entity only if the entity is in the graph's triples
        ads = sorted(known_ads & set(graph.src[structural].tolist()))
        _rows(
            folder / "peers.link",
            ["item_id:token", "entity_id:token"],
            [[str(a), str(a)] for a in ads],
        )


def compatibility() -> None:
    """RecBole 1.2.0 predates NumPy 2 and SciPy 1.15. Its `Config` aliases `np.float` to
    `np.float_` (and the like), names NumPy 2 removed: restore those old names, pointing at
    the types they always meant. Its graph models (LightGCN, KGIN) fill their adjacency
    through `dok_matrix._update`, a private method SciPy dropped: give it back as the bulk
    dictionary update it was. KGIN imports `scatter_mean` from `torch_scatter`, a compiled
    extension with no build for this torch: provide it in plain torch. All only let
    RecBole run unchanged here."""
    for old, new in (("float_", np.float64), ("complex_", np.complex128), ("unicode_", np.str_)):
        if old not in np.__dict__:
            setattr(np, old, new)
    if not hasattr(sp.dok_matrix, "_update"):
        sp.dok_matrix._update = lambda self, data: self._dict.update(data)
    if "torch_scatter" not in sys.modules:
        sys.modules["torch_scatter"] = types.SimpleNamespace(scatter_mean=_scatter_mean)


def _scatter_mean(src: torch.Tensor, index: torch.Tensor, dim_size: int, dim: int = 0):
    """`torch_scatter.scatter_mean` along dim 0 (the one use KGIN makes of that compiled
    extension, which has no build for this torch): the mean of the rows of `src` sent to
    each of `dim_size` slots, 0 for a slot none is sent to."""
    if dim != 0:
        raise ValueError("scatter_mean: only dim 0 is provided")
    total = src.new_zeros((dim_size, *src.shape[1:])).index_add_(0, index, src)
    count = torch.bincount(index, minlength=dim_size).clamp(min=1).to(src.dtype)
    return total / count.view(-1, *([1] * (src.dim() - 1)))


def _config(model: str, folder: Path, *, epochs: int, seed: int):
    compatibility()
    from recbole.config import Config

    kind = KINDS[model]
    inter = (
        ["user_id", "item_id_list", "item_id"]
        if kind == "sequential"
        else ["user_id", "item_id", "timestamp"]
    )
    load_col: dict[str, list[str]] = {"inter": inter}
    extra: dict[str, object] = {}
    if kind == "sequential":
        extra = {
            "alias_of_item_id": ["item_id_list"],
            "train_neg_sample_args": None,
            "MAX_ITEM_LIST_LENGTH": MAX_SEQUENCE,
        }
    if kind == "knowledge":
        load_col |= {"kg": ["head_id", "relation_id", "tail_id"], "link": ["item_id", "entity_id"]}
    settings = {
        "data_path": str(folder.parent),
        "benchmark_filename": ["train", "valid", "test"],
        "load_col": load_col,
        "USER_ID_FIELD": "user_id",
        "ITEM_ID_FIELD": "item_id",
        "TIME_FIELD": "timestamp",
        "use_gpu": torch.cuda.is_available(),
        "seed": seed,
        "reproducibility": True,
        "show_progress": False,
        "state": "WARNING",
        "checkpoint_dir": str(folder / "saved"),
        "epochs": epochs,
        "eval_step": 1,
        "stopping_step": PATIENCE,
        "metrics": ["Recall", "NDCG"],
        "topk": [20],
        "valid_metric": VALID_METRIC,
        **extra,
    }
    argv = sys.argv
    sys.argv = argv[:1]  # RecBole reads `--key=value` from the command line
    try:
        return Config(model=model, dataset=folder.name, config_dict=settings)
    finally:
        sys.argv = argv


def train_recbole(config, workdir: Path, *, validate: bool):
    """RecBole's quick start (`run_recbole`) without its hyper-parameter search imports:
    data, model and trainer from `config`, trained (early stopping on the validation data
    when `validate`, back to the best epoch's weights); returns (model, trainer, the
    train / valid / test loaders)."""
    from recbole.data import create_dataset, data_preparation
    from recbole.utils import get_model, get_trainer, init_seed

    init_seed(config["seed"], config["reproducibility"])
    dataset = create_dataset(config)
    loaders = data_preparation(config, dataset)
    init_seed(config["seed"] + config["local_rank"], config["reproducibility"])
    model = get_model(config["model"])(config, loaders[0]._dataset).to(config["device"])
    with contextlib.chdir(workdir):  # RecBole's trainer writes a tensorboard log in the cwd
        trainer = get_trainer(config["MODEL_TYPE"], config["model"])(config, model)
        trainer.fit(
            loaders[0], loaders[1] if validate else None, saved=validate, show_progress=False
        )
        trainer.tensorboard.close()
    if validate:
        saved = torch.load(trainer.saved_model_file, weights_only=False)
        model.load_state_dict(saved["state_dict"])
    return model, trainer, loaders


def _train(model_name: str, folder: Path, *, epochs: int, seed: int, validate: bool):
    """Train on the files in `folder`; returns (model, dataset, best epoch count, best
    validation score)."""
    config = _config(model_name, folder, epochs=epochs, seed=seed)
    model, trainer, loaders = train_recbole(config, folder, validate=validate)
    last = max(trainer.train_loss_dict)
    best = last - trainer.cur_step if validate else last
    score = float(trainer.best_valid_score) if validate else float("nan")
    return model, loaders[0]._dataset, best + 1, score


def _vectors(model_name: str, model, dataset, history: dict[int, list[int]], users: np.ndarray):
    """(user rows for `users`, item rows for every RecBole item id) the model scores with."""
    with torch.no_grad():
        model.eval()
        if model_name == "LightGCN":
            u, items = model.forward()
        elif model_name == "KGIN":
            # RecBole's KGIN drops half of the graph's edges in every forward pass, at
            # evaluation too; the paper's code drops them only in training: embed on all.
            model.gcn.node_dropout_rate = 0.0
            u, entities, _ = model.forward()
            items = entities[: model.n_items]
        else:  # SASRec: the last position's state over the user's ratings
            ids = dataset.field2token_id["item_id"]
            seqs = np.zeros((len(users), MAX_SEQUENCE), dtype=np.int64)
            lengths = np.ones(len(users), dtype=np.int64)
            for row, user in enumerate(users):
                items_of = [ids[str(a)] for a in history.get(int(user), [])][-MAX_SEQUENCE:]
                if items_of:
                    seqs[row, : len(items_of)] = items_of
                    lengths[row] = len(items_of)
            state = (
                model.forward(
                    torch.from_numpy(seqs).to(model.device),
                    torch.from_numpy(lengths).to(model.device),
                )
                .cpu()
                .numpy()
            )
            known = np.array([int(user) in history for user in users])
            return np.where(known[:, None], state, 0.0), model.item_embedding.weight.cpu().numpy()
    u, items = u.cpu(), items.cpu()
    user_ids = dataset.field2token_id["user_id"]
    rows = np.zeros((len(users), u.shape[1]), dtype=np.float32)
    for row, user in enumerate(users):
        if str(int(user)) in user_ids:
            rows[row] = u[user_ids[str(int(user))]].numpy()
    return rows, items.numpy()


def _scores(
    model_name: str, model, dataset, train: Ratings, ranked: RankedLists
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(user nodes, their vectors, the candidates' vectors, (U, A) scores of `ranked`'s
    query users over its candidates) of a model fitted on `train`; a query user or a
    candidate the model never saw gets a zero vector."""
    history = _sequences(train)
    user_nodes = np.unique(train.user)
    user_vectors, items = _vectors(model_name, model, dataset, history, user_nodes)
    item_ids = dataset.field2token_id["item_id"]
    ad_nodes = np.asarray(ranked.ads)
    ad_vectors = np.zeros((len(ad_nodes), items.shape[1]), dtype=np.float32)
    for row, ad in enumerate(ad_nodes):
        if str(int(ad)) in item_ids:
            ad_vectors[row] = items[item_ids[str(int(ad))]]
    query_rows = np.searchsorted(user_nodes, ranked.users)
    query_rows = np.minimum(query_rows, len(user_nodes) - 1)
    known = user_nodes[query_rows] == ranked.users
    query = np.where(known[:, None], user_vectors[query_rows], 0.0)
    return user_nodes, user_vectors, ad_vectors, query @ ad_vectors.T


def recbole_fit(
    model_name: str,
    graph: TemporalGraph,
    ranked: RankedLists,
    workdir: Path,
    *,
    max_epochs: int = 300,
    seed: int = 0,
    log=None,
    validation: RankedLists | None = None,
) -> PeerFit:
    """Select `model_name`'s epoch count on the validation window, refit on every rating
    before the test start and score the query users' candidates (see the module); with
    `validation` (the validation window's queries), the selection fit scores those too."""
    kind = KINDS[model_name]
    t = graph.manifest.time
    all_ratings = ratings(graph)
    logging.getLogger().setLevel(logging.WARNING)
    started = time.perf_counter()
    select_dir = workdir / f"{model_name}-select" / "peers"
    _write_split(
        select_dir,
        kind,
        graph,
        all_ratings.before(t.validation_start),
        window_likes(graph, "validation"),  # HIR's validation labels, nothing after them
        t.validation_start,
    )
    early, early_data, epochs, valid_score = _train(
        model_name, select_dir, epochs=max_epochs, seed=seed, validate=True
    )
    validation_scores = None
    if validation is not None:
        early_train = all_ratings.before(t.validation_start)
        validation_scores = _scores(model_name, early, early_data, early_train, validation)[3]
    if log is not None:
        log(f"{model_name}: {epochs} epochs chosen ({VALID_METRIC} {valid_score:.4f})")
    final_dir = workdir / f"{model_name}-final" / "peers"
    train = all_ratings.before(t.test_start)
    _write_split(
        final_dir,
        kind,
        graph,
        train,
        all_ratings.between(t.validation_start, t.test_start),
        t.test_start,
    )
    model, dataset, _, _ = _train(model_name, final_dir, epochs=epochs, seed=seed, validate=False)
    user_nodes, user_vectors, ad_vectors, scores = _scores(
        model_name, model, dataset, train, ranked
    )
    return PeerFit(
        name=f"RecBole {model_name} (peer)",
        scores=scores,
        user_nodes=user_nodes,
        user_vectors=user_vectors,
        ad_nodes=np.asarray(ranked.ads),
        ad_vectors=ad_vectors,
        epochs=epochs,
        valid_score=valid_score,
        seconds=time.perf_counter() - started,
        validation_scores=validation_scores,
    )
