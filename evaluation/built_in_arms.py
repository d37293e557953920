"""The names of the A/B's built-in arms, in the order `hir_sdk.evaluation.rankers`
registers them (tests/evaluation/test_rankers.py checks that the two agree).

A module of its own, without XGBoost or torch, so that `hir ab` builds its choices from
it at start-up: the command line offers these arms, not the ones a user registers."""

BUILT_IN_ARMS = (
    "xgboost",
    "popularity",
    "xgboost+hir",
    "multistage",
    "xgboost+multistage",
    "xgboost+hir+multistage",
)
