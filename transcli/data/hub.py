"""Loading a Hugging Face `datasets.Dataset`: a save_to_disk dir, a local data file or
folder, or the hub. `datasets` is slow to import and chatty, so it is imported here only,
its progress bars and logs are silenced, and its many exception types become one line.
An unreachable hub fails at once instead of after `datasets`' retries.
"""

from __future__ import annotations

import logging
import os
import socket
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator, Optional
from urllib.parse import urlparse

from transcli.config.formats import data_suffix
from transcli.system.errors import UserError

DATA_FILE_BUILDERS = {".json": "json", ".jsonl": "json", ".csv": "csv", ".parquet": "parquet"}


def import_datasets(name: str) -> Any:
    """The Hugging Face `datasets` package, imported only for dataset sources: it is slow
    to import, and GPU images may lack it while file pairs and TSVs need nothing more."""
    try:
        import datasets
    except ImportError:
        raise UserError(f"dataset '{name}': dataset sources need the Hugging Face `datasets` "
                        f"package (pip install datasets); --src-file/--tgt-file and --tsv "
                        f"work without it") from None
    return datasets


def load_hf_dataset(name: str, subset: Optional[str], split: str, cache_dir: Path) -> Any:
    """A `datasets.Dataset` from a save_to_disk dir, a local data file or folder, or the hub.

    Local files are converted into `cache_dir` (the run's scratch space), so nothing
    is written outside it; hub datasets use the usual Hugging Face cache.
    """
    datasets = import_datasets(name)
    datasets.disable_progress_bars()  # ours shows progress; theirs would interleave
    datasets.logging.set_verbosity(logging.CRITICAL)  # its errors become our one line
    _quiet_hub_logs()
    path = Path(name).expanduser()
    try:
        if path.is_dir() and _is_saved_dataset(path):
            return _pick_split(datasets.load_from_disk(str(path)), name, split)
        if path.is_file():
            builder = DATA_FILE_BUILDERS.get(data_suffix(path))
            if builder is None:
                raise UserError(f"dataset '{name}': unsupported file type; use "
                                f"{', '.join(DATA_FILE_BUILDERS)} (or --tsv / --src-file)")
            return datasets.load_dataset(builder, data_files=str(path), split="train",
                                         cache_dir=str(cache_dir))
        if path.is_dir():
            return _load_folder(datasets, path, name, subset, split, cache_dir)
        if _looks_like_path(name):
            raise UserError(f"dataset '{name}': no such file or directory")
        with _offline_unless_reachable(datasets.config) as offline:
            try:
                return datasets.load_dataset(name, subset, split=split)
            except Exception:
                if offline:
                    raise UserError(f"dataset '{name}': not a local file or directory, not in "
                                    f"the Hugging Face cache, and the hub is unreachable "
                                    f"(offline)") from None
                raise
    except UserError:
        raise
    except Exception as exc:  # datasets raises many types; the user needs one line
        raise UserError(f"dataset '{name}'" + (f" (subset '{subset}')" if subset else "")
                        + f": cannot load: {_one_line(exc)}") from None


def _load_folder(datasets: Any, path: Path, name: str, subset: Optional[str], split: str,
                 cache_dir: Path) -> Any:
    """A folder of data files as the hub lays them out (train.jsonl and test.jsonl,
    data/train-*.parquet). `datasets` takes any folder for one: it globs every file below
    it (minutes for /usr) and reads whatever it finds (/tmp gave pyarrow's cast error).
    So a folder holding anything but data files is refused first, in one line that says
    what it is not and what --dataset takes; so is one whose files do not fit together."""
    try:
        _check_data_folder(path)
    except ValueError as exc:
        raise _not_a_dataset(name, str(exc)) from None
    try:
        return datasets.load_dataset(str(path), subset, split=split, cache_dir=str(cache_dir))
    except datasets.exceptions.DatasetGenerationError as exc:
        if not _caused_by(exc, datasets.table.CastError):
            raise
        raise _not_a_dataset(name, "its data files do not share one set of columns") from None


def _check_data_folder(path: Path) -> None:
    """ValueError unless every file below `path` is a data file of `DATA_FILE_BUILDERS`'
    types, a dataset card or a licence (hidden ones, such as .git, aside), and one is."""
    found = False
    for folder, folders, files in os.walk(path):
        folders[:] = sorted(name for name in folders if not name.startswith("."))
        for file in sorted(name for name in files if not name.startswith(".")):
            if data_suffix(Path(file)) in DATA_FILE_BUILDERS:
                found = True
            elif not file.endswith(".md") and not file.startswith(("LICENSE", "COPYING")):
                raise ValueError(f"it holds {Path(folder, file)}, which is not a json, jsonl, "
                                 f"csv or parquet file")
    if not found:
        raise ValueError("no json, jsonl, csv or parquet file in it")


def _not_a_dataset(name: str, reason: str) -> UserError:
    return UserError(f"dataset '{name}': a folder that is not a dataset ({reason}); --dataset "
                     f"takes a hub name (owner/name), a json/jsonl/csv/parquet file, a folder "
                     f"written by save_to_disk, or a folder of such files with the same columns")


def _caused_by(exc: BaseException, kind: type) -> bool:
    """Whether `kind` is in the chain of exceptions that led to `exc`."""
    while exc is not None:
        if isinstance(exc, kind):
            return True
        exc = exc.__cause__ or exc.__context__  # type: ignore[assignment]
    return False


def _is_saved_dataset(path: Path) -> bool:
    return any((path / marker).is_file()
               for marker in ("dataset_dict.json", "state.json", "dataset_info.json"))


def _pick_split(loaded: Any, name: str, split: str) -> Any:
    """A save_to_disk DatasetDict holds splits; a plain Dataset is the split itself."""
    if not hasattr(loaded, "keys"):
        return loaded
    if split not in loaded:
        raise UserError(f"dataset '{name}': no split '{split}' (splits: {', '.join(loaded)})")
    return loaded[split]


def _looks_like_path(name: str) -> bool:
    """Hub names are `owner/name`; these can only be meant as local paths."""
    return (name.startswith((".", "/", "~")) or "\\" in name
            or Path(name).suffix.lower() in DATA_FILE_BUILDERS or name.count("/") > 1)


@contextmanager
def _offline_unless_reachable(datasets_config: Any) -> Iterator[bool]:
    """Yields whether the hub is off limits. Hugging Face retries an unreachable hub for
    a long while before failing; when the endpoint's name does not even resolve we go
    offline at once (cached datasets still load, others fail in a moment)."""
    from huggingface_hub import constants

    if constants.HF_HUB_OFFLINE or datasets_config.HF_HUB_OFFLINE:
        yield True
        return
    host = urlparse(constants.ENDPOINT).hostname
    try:
        socket.getaddrinfo(host or "", 443)
    except OSError:
        pass
    else:
        yield False
        return
    saved = constants.HF_HUB_OFFLINE, datasets_config.HF_HUB_OFFLINE
    constants.HF_HUB_OFFLINE = datasets_config.HF_HUB_OFFLINE = True
    try:
        yield True
    finally:
        constants.HF_HUB_OFFLINE, datasets_config.HF_HUB_OFFLINE = saved


def _quiet_hub_logs() -> None:
    try:
        from huggingface_hub.utils import logging as hub_logging
    except ImportError:
        return
    hub_logging.set_verbosity(logging.CRITICAL)


def _one_line(exc: BaseException) -> str:
    """The most telling line of an exception chain from `datasets`."""
    seen: list[str] = []
    while exc is not None and len(seen) < 5:
        text = " ".join(str(exc).split())
        if text:
            seen.append(f"{text[:300]}")
        exc = exc.__cause__ or exc.__context__  # type: ignore[assignment]
    if not seen:
        return "unknown error"
    generic = ("An error occurred while generating the dataset",)
    useful = [s for s in seen if not s.startswith(generic)]
    return (useful or seen)[0]
