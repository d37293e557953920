"""Configuration of the Hierarchical Encoder: nested, frozen, validated on construction."""

from __future__ import annotations

from dataclasses import dataclass, field


def check_encoder_sizes(dim: int, heads: int, layers: int, out_dim: int) -> None:
    """The sizes every encoder needs, checked before any data is read: each at least 1,
    and `dim` a multiple of `heads` (attention splits it over the heads)."""
    if min(dim, heads, layers, out_dim) < 1 or dim % heads:
        raise ValueError(
            "dim, heads, layers and out_dim must be >= 1 and dim a multiple of heads "
            f"(got dim {dim}, heads {heads}, layers {layers}, out_dim {out_dim})"
        )


@dataclass(frozen=True)
class DeepHashConfig:
    """Deep hash embedding of node ids: `codes` hash functions -> dense code -> MLP."""

    codes: int = 32
    hidden: int = 64
    min_degree: int = 2  # nodes with fewer visible edges get no id embedding (too rare)

    def __post_init__(self) -> None:
        if self.codes < 1 or self.hidden < 1 or self.min_degree < 0:
            raise ValueError("DeepHashConfig: need codes >= 1, hidden >= 1, min_degree >= 0")


@dataclass(frozen=True)
class PrototypeConfig:
    """Interest-cluster prototypes, coarse to fine; each level divides the previous one."""

    sizes: tuple[int, ...] = (16, 128, 1024)
    temperature: float = 0.1

    def __post_init__(self) -> None:
        if not self.sizes or min(self.sizes) < 1:
            raise ValueError("PrototypeConfig.sizes needs at least one level, each >= 1")
        for coarse, fine in zip(self.sizes, self.sizes[1:], strict=False):
            if fine % coarse:
                raise ValueError(
                    f"prototype level {fine} is not a multiple of {coarse}: "
                    "every fine prototype needs one coarse parent"
                )
        if not self.temperature > 0:
            raise ValueError("PrototypeConfig.temperature must be > 0")


@dataclass(frozen=True)
class EncoderConfig:
    """Sizes of the encoder. Data-dependent sizes (types, feature widths) come first."""

    num_node_types: int
    num_edge_types: int
    stats_dim: int  # per-node statistics (degree by edge type, recency, attributes)
    content_dim: int  # world-knowledge vector width (0: no content)
    rw_steps: int = 8
    max_distance: int = 4  # spd values 0..max_distance, and max_distance + 1 = far
    age_buckets: int = 16
    dim: int = 128
    heads: int = 4
    layers: int = 2
    mlp_ratio: int = 4
    dropout: float = 0.0
    out_dim: int = 32  # as training.config.ModelSizes, which a trained run uses
    center_types: bool = False  # centre the projection on per-type running means (heads.py)
    deep_hash: DeepHashConfig = field(default_factory=DeepHashConfig)
    prototypes: PrototypeConfig = field(default_factory=PrototypeConfig)

    def __post_init__(self) -> None:
        check_encoder_sizes(self.dim, self.heads, self.layers, self.out_dim)
        if min(self.num_node_types, self.num_edge_types) < 1:
            raise ValueError("EncoderConfig: num_node_types and num_edge_types must be >= 1")
        if self.stats_dim < 0 or self.content_dim < 0 or not 0 <= self.dropout < 1:
            raise ValueError("EncoderConfig: stats_dim, content_dim >= 0 and 0 <= dropout < 1")

    @property
    def spd_values(self) -> int:
        return self.max_distance + 2
