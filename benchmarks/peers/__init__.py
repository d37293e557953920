"""Peer recommenders for the MovieLens-100K comparison (`benchmarks/movielens_peers.py`):
the shared protocol, the `implicit` peers and the RecBole peers. Benchmark code only: none
of these packages is a dependency of the SDK (`benchmarks/requirements-peers.txt`)."""
