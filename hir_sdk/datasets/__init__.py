"""Public data sets mapped onto the input contract: MovieLens-100K read from an installed
package, the MovieLens CSV releases read from a folder the user downloaded."""

from hir_sdk.dataset_names import MOVIELENS_100K, MOVIELENS_CSV
from hir_sdk.datasets.movielens import MovieLensConfig, locate_movielens_100k, movielens_100k
from hir_sdk.datasets.movielens_csv import MovieLensCsvConfig, movielens_csv

__all__ = [
    "MOVIELENS_100K",
    "MOVIELENS_CSV",
    "MovieLensConfig",
    "MovieLensCsvConfig",
    "locate_movielens_100k",
    "movielens_100k",
    "movielens_csv",
]
