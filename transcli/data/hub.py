"""Loading a Hugging Face `datasets.Dataset`: a save_to_disk dir, a local data file or
folder, or the hub. `datasets` is slow to import and chatty, so it is imported here only,
its progress bars and logs are silenced, and its many exception types become one line.
An unreachable hub fails at once instead of after `datasets`' retries.
"""

from __future__ import annotations

import logging
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
            return datasets.load_dataset(str(path), subset, split=split,
                                         cache_dir=str(cache_dir))
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
