"""Deep-funnel offline evaluation (installed as `hir_sdk.evaluation`); uses core and ranking."""
