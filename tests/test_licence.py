"""The licence is stated the same way everywhere a reuser looks: LICENSE (Apache-2.0, its full
text), pyproject.toml and CITATION.cff (with the fields Citation File Format 1.2.0 requires)."""

import tomllib
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent


def test_the_licence_is_apache_2_in_full_and_named_the_same_everywhere():
    text = (ROOT / "LICENSE").read_text()
    assert "Apache License" in text and "Version 2.0, January 2004" in text
    assert "END OF TERMS AND CONDITIONS" in text  # the whole text, not a pointer to it
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["license"] == "Apache-2.0" and project["license-files"] == ["LICENSE"]
    citation = yaml.safe_load((ROOT / "CITATION.cff").read_text())
    assert citation["license"] == project["license"]
    assert citation["version"] == project["version"]
    assert citation["cff-version"] == "1.2.0"
    assert citation["message"] and citation["title"] and citation["authors"]
