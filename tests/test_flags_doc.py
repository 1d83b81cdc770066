"""docs/flags.md names every EMBER_* environment variable the library reads (and none it does not)."""
import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parents[1]


def _read(pattern_dir: str) -> set:
    out = set()
    for p in (ROOT / pattern_dir).rglob("*.py"):
        out |= set(re.findall(r'"(EMBER_[A-Z0-9_]+)"', p.read_text()))
    return out


def test_every_flag_is_documented():
    doc = set(re.findall(r"`(EMBER_[A-Z0-9_]+)`", (ROOT / "docs" / "flags.md").read_text()))
    code = _read("ember")
    assert not code - doc, f"flags read in ember/ but missing from docs/flags.md: {sorted(code - doc)}"
    assert not doc - code, f"flags in docs/flags.md that ember/ no longer reads: {sorted(doc - code)}"
