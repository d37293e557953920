"""The tiny trained run (training window through the validation start), as the interests
tests have it."""

from tests.hir_sdk.interests.conftest import tiny_run  # noqa: F401
