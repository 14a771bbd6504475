"""The README's listings are what the commands print today.

Each listing in README.md is preceded by a marker `<!-- readme-listing: ARGS -->`;
`zygopy ARGS` is run from the repository root and its output, with the repository's
absolute path made relative, must equal the listing.
"""
from __future__ import annotations

import contextlib
import io
import os
import re
import sys
from pathlib import Path

import pytest

from jit.cli.commands import main

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
MARKER = re.compile(r"<!-- readme-listing: (.*?) -->\n```text\n(.*?)```", re.S)
RUN = re.compile(r"<!-- readme-run -->\n```python\n(.*?)```", re.S)


def listings() -> list:
    return MARKER.findall(README.read_text(encoding="utf-8"))


def run_cli(args: str) -> str:
    out = io.StringIO()
    cwd = os.getcwd()
    os.chdir(ROOT)
    try:
        with contextlib.redirect_stdout(out):
            assert main(args.split()) in (0, None)
    finally:
        os.chdir(cwd)
    return out.getvalue().replace(str(ROOT) + os.sep, "")


def test_readme_has_listings():
    assert len(listings()) >= 3


@pytest.mark.parametrize("args,expected", listings(), ids=[a for a, _ in listings()])
def test_readme_listing_is_current(args, expected):
    assert run_cli(args).rstrip("\n") == expected.rstrip("\n")


def snippets() -> list:
    return RUN.findall(README.read_text(encoding="utf-8"))


@pytest.mark.parametrize("code", snippets(), ids=[f"snippet{k}" for k in range(len(snippets()))])
def test_readme_snippet_runs(code):
    """A `<!-- readme-run -->` block runs from the repository root; its asserts hold."""
    assert snippets()
    cwd = os.getcwd()
    os.chdir(ROOT)
    sys.path.insert(0, str(ROOT))
    try:
        exec(compile(code, "README.md", "exec"), {"__name__": "readme"})
    finally:
        sys.path.remove(str(ROOT))
        os.chdir(cwd)
