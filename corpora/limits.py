"""How much an uploaded or imported file may hold, checked before and while it is parsed.

A few hundred bytes can cost minutes: YAML aliases that expand a billion times, a Parquet file
whose dictionary encoding turns 6 KB into a million rows, nesting deep enough to overflow the
parser's stack. So a file is measured before it is parsed, on its size as stored and on what
it decodes to, and refused whole with a message naming the limit.

Two tiers (docs/datasets.md, "Upload limits"): ``FILES`` for files a command reads on the
server (``import_dataset``, ``campaign_create``, ``import_judgments``), ``UPLOADS`` for files
sent to the web process (the wizard, the API), sized so that the largest file it accepts is
read and stored within about two seconds. Every reader checks ``FILES`` itself; a web entry
point checks ``UPLOADS`` first with ``upload_check``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from corpora.records import DatasetError

MIB = 1024 * 1024


@dataclass(frozen=True)
class Limits:
    """The most a file may hold: its bytes as stored, its bytes decoded (Parquet's columns),
    its rows (lines of a text file, rows of a Parquet file) and the bytes of one line."""

    bytes: int
    decoded_bytes: int
    rows: int
    line_bytes: int


FILES = Limits(bytes=256 * MIB, decoded_bytes=1024 * MIB, rows=500_000, line_bytes=MIB)
UPLOADS = Limits(bytes=5 * MIB, decoded_bytes=16 * MIB, rows=5_000, line_bytes=MIB)

# A study file (YAML or JSON): its bytes, the aliases it may use, the nodes it may expand to
# through them, and how deeply it may nest.
STUDY_FILE_MAX_BYTES = MIB
YAML_MAX_ALIASES = 100
YAML_MAX_NODES = 100_000
YAML_MAX_DEPTH = 50


def _size(n: int) -> str:
    return f"{n // MIB} MB" if n >= MIB else f"{n // 1024} KB"


def file_bytes(path: Path, name: str, limits: Limits = FILES) -> bytes:
    """Return a text file's bytes once its size, line count and longest line are within
    ``limits``; raise DatasetError naming ``name`` and the limit."""
    try:
        size = path.stat().st_size
    except OSError as exc:
        raise DatasetError(f"{name}: cannot open: {exc.strerror}") from None
    if size > limits.bytes:
        raise DatasetError(f"{name}: the file is larger than {_size(limits.bytes)}.")
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise DatasetError(f"{name}: cannot open: {exc.strerror}") from None
    lines_check(data, name, limits)
    return data


def lines_check(data: bytes, name: str, limits: Limits) -> None:
    """Refuse text with more lines than ``limits.rows`` or a line longer than its line bytes."""
    rows = data.count(b"\n") + (not data.endswith(b"\n"))
    if rows > limits.rows:
        raise DatasetError(f"{name}: more than {limits.rows:,} lines; split the file.")
    start = 0
    while start < len(data):
        end = data.find(b"\n", start)
        end = len(data) if end < 0 else end
        if end - start > limits.line_bytes:
            line = data.count(b"\n", 0, start) + 1
            raise DatasetError(
                f"{name}, line {line}: longer than {_size(limits.line_bytes)}; "
                "no field may be that long."
            )
        start = end + 1


def parquet_check(path: Path, name: str, limits: Limits = FILES) -> None:
    """Refuse a Parquet file over ``limits`` before its rows are built: its size and row
    count from the footer, then its columns decoded a batch at a time with a running byte
    count (dictionary and run-length encoding make a few KB stand for a million values)."""
    import pyarrow.parquet as pq

    if path.stat().st_size > limits.bytes:
        raise DatasetError(f"{name}: the file is larger than {_size(limits.bytes)}.")
    try:
        parquet = pq.ParquetFile(path)
    except Exception as exc:  # pyarrow raises several types for a file that is not Parquet
        raise DatasetError(f"{name}: not a readable Parquet file ({exc})") from None
    with parquet:
        if parquet.metadata.num_rows > limits.rows:
            raise DatasetError(
                f"{name}: {parquet.metadata.num_rows:,} rows; at most {limits.rows:,} allowed."
            )
        decoded = 0
        try:
            for batch in parquet.iter_batches(batch_size=1024):
                decoded += batch.nbytes
                if decoded > limits.decoded_bytes:
                    raise DatasetError(
                        f"{name}: decodes to more than {_size(limits.decoded_bytes)}."
                    )
        except DatasetError:
            raise
        except Exception as exc:
            raise DatasetError(f"{name}: not a readable Parquet file ({exc})") from None


def upload_check(path: Path, name: str, *, parquet: bool = False) -> None:
    """Refuse a file sent to the web process that is over ``UPLOADS``, before any reader
    parses it (the readers then check ``FILES`` again, which it is within)."""
    if parquet:
        parquet_check(path, name, UPLOADS)
    else:
        file_bytes(path, name, UPLOADS)


# --- YAML ------------------------------------------------------------------------------------


class _BoundedLoader(yaml.SafeLoader):
    """PyYAML's safe loader, counting as it composes: aliases used, nodes the document
    expands to once every alias is replaced by what it names, and nesting depth.

    ``yaml.safe_load`` shares an aliased node rather than copying it, so a 400-byte
    "billion laughs" loads at once; what then walks it (``json.dumps``, a settings check)
    expands it and holds a thread for minutes. Deep nesting overflows the composer's stack.
    """

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self.aliases = 0
        self.depth = 0
        self.expanded: dict[int, tuple[int, int]] = {}  # id(node) → (nodes, depth) expanded

    def compose_node(self, parent: Any, index: Any) -> Any:
        mark = self.peek_event().start_mark
        if self.check_event(yaml.AliasEvent):
            self.aliases += 1
            if self.aliases > YAML_MAX_ALIASES:
                raise _refusal(f"YAML aliases are limited to {YAML_MAX_ALIASES} a file", mark)
            return super().compose_node(parent, index)
        self.depth += 1
        if self.depth > YAML_MAX_DEPTH:
            raise _refusal(f"YAML nesting is limited to {YAML_MAX_DEPTH} levels", mark)
        node = super().compose_node(parent, index)
        self.depth -= 1
        children = node.value if isinstance(node, yaml.SequenceNode) else []
        if isinstance(node, yaml.MappingNode):
            children = [child for pair in node.value for child in pair]
        sizes = [self.expanded[id(child)] for child in children]
        nodes = 1 + sum(n for n, _ in sizes)
        depth = 1 + max((d for _, d in sizes), default=0)
        if nodes > YAML_MAX_NODES:
            raise _refusal(
                f"YAML aliases are limited to {YAML_MAX_NODES:,} values once expanded", mark
            )
        if depth > YAML_MAX_DEPTH:
            raise _refusal(f"YAML nesting is limited to {YAML_MAX_DEPTH} levels", mark)
        self.expanded[id(node)] = (nodes, depth)
        return node


def _refusal(problem: str, mark: Any) -> yaml.MarkedYAMLError:
    return yaml.composer.ComposerError(None, None, problem, mark)


def yaml_load(text: str) -> Any:
    """Parse YAML with the safe loader within the alias, size and depth limits above; raise
    ``yaml.MarkedYAMLError`` (its ``problem`` says which limit, its mark where)."""
    if len(text.encode("utf-8")) > STUDY_FILE_MAX_BYTES:
        raise _refusal(f"YAML files are limited to {_size(STUDY_FILE_MAX_BYTES)}", None)
    loader = _BoundedLoader(text)
    try:
        return loader.get_single_data()
    finally:
        loader.dispose()
