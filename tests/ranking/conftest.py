"""The tiny trained run and its snapshot, as the interests tests have them."""

from tests.hir_sdk.interests.conftest import snapshot, tiny_run  # noqa: F401
