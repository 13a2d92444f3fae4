"""A prepared dir, opened once and handed on: what `train` reads of `prepare`'s output.

`open_prepared_dir` reads the manifest and the tokenizer and checks that they agree;
the encoded splits are memory-mapped when first asked for and kept (`split`). The
training loop, the batches, subword sampling, validation, fine-tuning's vocabulary
check and the run dir's records all use this one handle, so each file of the dir is
opened once however many parts of a run read it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from transcli.data.encoded import EncodedAlignments, EncodedSplit, load_manifest
from transcli.data.tokenizer import TOKENIZER_FILE, Tokenizer
from transcli.system.errors import UserError


class PreparedDir:
    """The manifest, the tokenizer and the encoded splits of one prepared dir."""

    def __init__(self, directory: Path, manifest: dict[str, Any], tokenizer: Tokenizer):
        self.dir = directory
        self.manifest = manifest
        self.tokenizer = tokenizer
        self._splits: dict[str, EncodedSplit] = {}
        self._alignments: EncodedAlignments | None = None

    @property
    def vocab_size(self) -> int:
        return self.tokenizer.vocab_size

    @property
    def langs(self) -> tuple[str, str]:
        """(source language, target language): the suffixes of the split text files."""
        return self.manifest["src_lang"], self.manifest["tgt_lang"]

    @property
    def data_hash(self) -> str:
        return self.manifest["data_hash"]

    def split(self, name: str) -> EncodedSplit:
        """The encoded split `name` (train, valid, test), mapped on first use; ids outside
        the vocabulary are refused then."""
        if name not in self._splits:
            self._splits[name] = EncodedSplit(self.dir, name, self.vocab_size)
        return self._splits[name]

    def alignments(self, needed_by: str) -> EncodedAlignments:
        """The train split's word alignments as piece links (`data.alignments`), mapped
        on first use; a dir prepared without them is refused, naming `needed_by`."""
        if "alignments" not in self.manifest:
            raise UserError(f"{self.dir}: holds no word alignments, which {needed_by} needs: "
                            f"prepare it again with --set data.alignments=true")
        if self._alignments is None:
            self._alignments = EncodedAlignments(self.dir, self.split("train"))
        return self._alignments

    def text_paths(self, split: str) -> tuple[Path, Path]:
        """The cleaned text of a split, source and target side (line i = pair i)."""
        return tuple(self.dir / f"{split}.{lang}" for lang in self.langs)  # type: ignore


def open_prepared_dir(directory: str | Path) -> PreparedDir:
    """The prepared dir at `directory`, its manifest and tokenizer read and checked."""
    directory = Path(directory)
    manifest = load_manifest(directory)
    tokenizer = Tokenizer(directory / TOKENIZER_FILE)
    if manifest["vocab_size"] != tokenizer.vocab_size:
        raise UserError(f"{directory}: manifest.json says vocab_size {manifest['vocab_size']} "
                        f"but {TOKENIZER_FILE} has {tokenizer.vocab_size}")
    hashes = manifest.get("sha256")
    recorded = hashes.get(TOKENIZER_FILE) if isinstance(hashes, dict) else None
    if recorded is not None and recorded != tokenizer.sha256:
        raise UserError(f"{tokenizer.path}: not the tokenizer this dir was prepared with (its "
                        f"SHA-256 differs from manifest.json's): the splits were encoded with "
                        f"the other one; put it back, or run `transcli prepare` again")
    return PreparedDir(directory, manifest, tokenizer)
