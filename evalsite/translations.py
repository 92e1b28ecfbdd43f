"""Compile the translation catalogs (``locale/<lang>/LC_MESSAGES/django.po`` → ``.mo``).

The ``.mo`` files are generated, so they are not committed: ``make install`` (through
``manage.py translations_compile``), the test suite (tests/environment.py) and the image build
write them with polib, which needs no system gettext. No Django imports: the test suite runs
this before Django loads its catalogs.
"""

from __future__ import annotations

import os
from pathlib import Path

import polib

LOCALE_DIR = Path(__file__).resolve().parent.parent / "locale"


def catalogs_compile(root: Path = LOCALE_DIR, *, force: bool = False) -> list[Path]:
    """Write the ``.mo`` of every ``.po`` under ``root`` that is missing or older than its
    source (every one with ``force``); return the files written.

    Fuzzy entries are left out, as ``msgfmt`` does: their translation is not yet checked.
    """
    written = []
    for po_path in sorted(root.glob("*/LC_MESSAGES/*.po")):
        mo_path = po_path.with_suffix(".mo")
        if not force and mo_path.exists() and mo_path.stat().st_mtime >= po_path.stat().st_mtime:
            continue
        catalog = polib.pofile(str(po_path))
        for entry in catalog.fuzzy_entries():
            catalog.remove(entry)
        partial = mo_path.with_suffix(".mo.tmp")
        catalog.save_as_mofile(str(partial))
        os.replace(partial, mo_path)  # a reader never sees half a file
        written.append(mo_path)
    return written
