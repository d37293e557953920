"""Peers the benchmarks compare hir-sdk with: for the MovieLens-100K comparison
(`benchmarks/movielens_peers.py`) the shared protocol, the `implicit` peers and the
RecBole peers; for `benchmarks/sampler_throughput.py` a plain vectorised torch temporal
sampler. Benchmark code only: none of the peer packages is a dependency of the SDK
(`benchmarks/requirements-peers.txt`)."""
