"""The public data sets' names, as `hir dataset` takes them and their manifests carry them.

Apart from `hir_sdk.datasets`, whose readers load numpy and polars, so that the command
line builds its choices without them. (That package cannot defer its imports: one of its
names, `movielens_csv`, is also the name of one of its modules.)
"""

MOVIELENS_100K = "movielens-100k"
MOVIELENS_CSV = "movielens-csv"
