"""Public data sets mapped onto the input contract (read from installed packages)."""

from hir_sdk.datasets.movielens import (
    NAME as MOVIELENS_100K,
)
from hir_sdk.datasets.movielens import (
    MovieLensConfig,
    locate_movielens_100k,
    movielens_100k,
)

__all__ = ["MOVIELENS_100K", "MovieLensConfig", "locate_movielens_100k", "movielens_100k"]
