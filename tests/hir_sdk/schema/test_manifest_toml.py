"""The manifest is written with a TOML writer: any name round-trips, and names that
cannot be node types or relation names (control characters, path separators) are refused
with the reason, never written into a file that cannot be read back."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hir_sdk.cli.main import main
from hir_sdk.schema import EdgeTypeSpec, load_manifest
from hir_sdk.schema.manifest import type_name_problem
from tests.conftest import mini_manifest

# every code point but surrogates (which are not text): quotes, backslashes, NUL, newlines,
# escape characters, right-to-left marks, emoji ...
TEXT = st.text(st.characters(exclude_categories=("Cs",)), max_size=12)
HOSTILE = st.sampled_from(['"', "\\", "\n", "\x00", "\x07", "\x1b[31m", "'''", '"""', "\t"])
NAMES = st.one_of(TEXT, st.lists(st.one_of(TEXT, HOSTILE), max_size=4).map("".join))


@settings(max_examples=150, deadline=None)
@given(name=NAMES, node_type=NAMES, rel=NAMES)
def test_any_name_round_trips_or_is_refused_with_a_reason(tmp_path_factory, name, node_type, rel):
    base = mini_manifest()
    path = tmp_path_factory.mktemp("m") / "manifest.toml"
    problems = [type_name_problem(node_type), type_name_problem(rel)]
    if node_type in base.node_types:
        return  # a duplicate node type: refused for another reason, tested elsewhere
    try:
        manifest = replace(
            base,
            name=name,
            node_types=(*base.node_types, node_type),
            edge_types=(*base.edge_types, EdgeTypeSpec("user", rel, node_type, "engagement")),
        )
    except ValueError as err:
        assert any(p and p in str(err) for p in problems), f"refused for another reason: {err}"
        return
    assert not any(problems)
    path.write_text(manifest.to_toml(), encoding="utf-8")
    assert load_manifest(path) == manifest


@pytest.mark.parametrize(
    ("node_type", "problem"),
    [
        ("adv/ertiser", "path separator"),
        ("adv\\ertiser", "path separator"),
        ("adv\x00", "control character"),
        ("adv\nertiser", "control character"),
        ("", "non-empty"),
        ("x" * 201, "longer than 200 bytes"),
    ],
)
def test_type_name_rule(node_type, problem):
    assert problem in (type_name_problem(node_type) or "")


@pytest.mark.parametrize("fine", ["ad", "ad.v2", "Annonce publicitaire", "広告", "ad-group #2"])
def test_ordinary_names_are_accepted(fine):
    assert type_name_problem(fine) is None


def test_graph_info_reads_a_name_with_control_characters(write_dataset, tmp_path, capsys):
    # the name used to be written into the graph's manifest.toml unescaped: exit 0 from
    # `hir graph build`, then `hir graph info` failed on its own output
    manifest = replace(mini_manifest(), name='mini\x07 "log"\\\n\x1b')
    data = write_dataset(manifest=manifest.to_toml())
    assert main(["graph", "build", "--data", str(data), "--out", str(tmp_path / "g")]) == 0
    capsys.readouterr()
    assert main(["graph", "info", str(tmp_path / "g"), "--json"]) == 0
    assert '"name": "mini\\u0007 \\"log\\"\\\\\\n\\u001b"' in capsys.readouterr().out
    assert load_manifest(tmp_path / "g" / "manifest.toml") == manifest
