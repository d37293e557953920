"""Rankers that consume HIR features (installed as `hir_sdk.ranking`); may import the core."""
