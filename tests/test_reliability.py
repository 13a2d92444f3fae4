"""Never lose a user's work or files (issue 12): each class of fault made for real.

Real files, real signals, real size limits: RLIMIT_FSIZE (portable: writes past the
limit fail with EFBIG) everywhere, a size-limited tmpfs and a read-only bind mount
where the machine lets us mount (root), skipped with the reason where it does not.

1. outputs: never an input, written through FIFOs/devices/symlinks, atomic, mode kept
2. --force never deletes what transcli did not write
3. one process per run dir; failed or killed starts leave a usable dir
4. loaded state is checked before it is used
5. every I/O failure is one line naming the file or stream
6. signals lose no work: one line, 128 + N, the output holds the whole lines done
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import resource
import shutil
import signal
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Callable, Iterator, Optional

import numpy as np
import pytest
from helpers import PAIRS, ROOT, default_signals, write_output
from helpers.cli import one_error_line
from helpers.training import fast_config, train_cli, train_dirs, transcli_process, wait_for
from helpers.waiting import DEADLINE, Collected

from transcli.config.loading import load_config
from transcli.data.encoded import MANIFEST_FILE, load_manifest
from transcli.model.transformer import Transformer
from transcli.rundir.checkpoints import load_weights
from transcli.rundir.layout import (
    CHECKPOINT_DIR,
    CONFIG_FILE,
    LOCK_FILE,
    METRICS_FILE,
    RUN_FILE,
    TENSORBOARD_DIR,
    TENSORBOARD_EVENTS,
    complete_steps,
    step_path,
)
from transcli.rundir.metrics import read_metrics
from transcli.system.errors import UserError
from transcli.system.outputs import output_file
from transcli.system.replacing import scratch_dir

ENGLISH = [en for en, _ in PAIRS]
SPANISH = [es for _, es in PAIRS]
ENV = {**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1"}



# ----------------------------------------------------------------------------- helpers


def cli(*args: str | Path, stdin: Optional[bytes] = None,
        preexec: Optional[Callable[[], None]] = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "transcli", *map(str, args)], input=stdin,
                          capture_output=True, cwd=ROOT, env=ENV, timeout=300,
                          preexec_fn=preexec)


def shell(command: str) -> subprocess.CompletedProcess:
    """A command line run by bash, for redirections (`>&-`, `2>&-`, `> /dev/full`)."""
    return subprocess.run(["bash", "-c", command], capture_output=True, text=True, cwd=ROOT,
                          env={**ENV, "PY": sys.executable}, timeout=300)


def file_size_limit(size: int) -> Callable[[], None]:
    """For `preexec_fn`: writes past `size` bytes fail with EFBIG (not SIGXFSZ)."""
    def limit() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (size, size))
    return limit


def error_of(result: subprocess.CompletedProcess) -> str:
    """The one error line of a bytes-mode result: exit 1, no traceback, nothing else on
    stderr but progress bars (which a file input shows until the error)."""
    err = result.stderr.decode(errors="replace")
    lines = [line for line in err.replace("\r", "\n").splitlines()
             if line.strip() and not re.search(r"\d+/(\d+|\?) \[", line)]
    return one_error_line(subprocess.CompletedProcess(
        result.args, result.returncode, stdout="", stderr="\n".join(lines)))


def train_error(result: subprocess.CompletedProcess) -> str:
    """Training's error: exit 1, no traceback, one error line, the last after its log."""
    err = result.stderr.decode(errors="replace").replace("\r", "\n")
    assert result.returncode == 1 and "Traceback" not in err, err
    errors = [line for line in err.splitlines() if line.startswith("transcli: error: ")]
    assert len(errors) == 1 and err.strip().splitlines()[-1] == errors[0], err
    return errors[0]


def snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*"))
            if p.is_file()}


def temp_files(folder: Path) -> list[str]:
    return sorted(str(p) for p in folder.rglob(".*") if p.name != LOCK_FILE)


def _mount(*args: str) -> bool:
    if shutil.which("mount") is None:
        return False
    return subprocess.run(["mount", *args], capture_output=True).returncode == 0


@contextlib.contextmanager
def small_filesystem(folder: Path, size: str) -> Iterator[Path]:
    """A real tmpfs of `size` at `folder` (needs root: skipped otherwise)."""
    folder.mkdir()
    if not _mount("-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(folder)):
        pytest.skip("cannot mount a tmpfs here (needs root); RLIMIT_FSIZE tests cover the path")
    try:
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], capture_output=True)


@contextlib.contextmanager
def read_only(folder: Path) -> Iterator[Path]:
    """`folder` made read-only: by its mode, or for root (whom modes do not stop) by a
    read-only bind mount; skipped where neither works."""
    if os.geteuid() != 0:
        folder.chmod(0o555)
        try:
            yield folder
        finally:
            folder.chmod(0o755)
        return
    if not _mount("--bind", str(folder), str(folder)):
        pytest.skip("root ignores file modes, and a read-only bind mount is not allowed here")
    try:
        if not _mount("-o", "remount,bind,ro", str(folder)):
            pytest.skip("cannot remount a bind mount read-only here")
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], capture_output=True)


@pytest.fixture
def lines(tmp_path: Path) -> Path:
    path = tmp_path / "in.en"
    path.write_text("".join(line + "\n" for line in ENGLISH), encoding="utf-8")
    return path


@pytest.fixture
def run(run_dir: Path, tmp_path: Path) -> Path:
    """A copy of the memorised run that a test may damage."""
    return Path(shutil.copytree(run_dir, tmp_path / "run"))


def translate_args(run: Path, *args: str | Path) -> list[str | Path]:
    return ["translate", "-m", run, "--checkpoint", "last", "--greedy", *args]


# ----------------------------------------------------------------------------- 1. outputs


@pytest.mark.slow
@pytest.mark.parametrize("victim", ["input", "hard link", "config", "checkpoint", "tokenizer"])
def test_translate_never_writes_over_one_of_its_inputs(run: Path, lines: Path,
                                                       victim: str) -> None:
    target = {"input": lines, "hard link": lines.with_name("link.en"),
              "config": run / CONFIG_FILE, "checkpoint": step_path(run, 200),
              "tokenizer": run / "spm.model"}[victim]
    if victim == "hard link":
        os.link(lines, target)
    before = snapshot(run), lines.read_bytes()
    line = error_of(cli(*translate_args(run, "-i", lines, "-o", target)))
    assert f"{target}: is also an input of this command" in line
    assert (snapshot(run), lines.read_bytes()) == before


def test_evaluate_hyp_out_never_replaces_the_reference_or_source(run: Path, lines: Path,
                                                                 tmp_path: Path) -> None:
    ref = tmp_path / "ref.es"
    ref.write_text("".join(line + "\n" for line in SPANISH), encoding="utf-8")
    for target in (ref, lines):
        before = target.read_bytes()
        result = cli("evaluate", "-m", run, "--checkpoint", "last", "--src", lines, "--ref", ref,
                     "--hyp-out", target)
        assert "is also an input of this command" in error_of(result)
        assert target.read_bytes() == before


@pytest.mark.slow
def test_outputs_write_through_fifos_devices_and_symlinks(run: Path, lines: Path,
                                                          tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    received: list[bytes] = []
    reader = threading.Thread(target=lambda: received.append(fifo.read_bytes()))
    reader.start()
    result = cli(*translate_args(run, "-i", lines, "-o", fifo))
    reader.join(timeout=60)
    assert result.returncode == 0, result.stderr
    assert received == ["".join(s + "\n" for s in SPANISH).encode()]
    assert stat.S_ISFIFO(fifo.lstat().st_mode)

    # A character device: a copy of /dev/null's node where we may make one (root), else
    # /dev/null itself (a non-root process cannot replace it, so a regression still fails).
    device = Path("/dev/null")
    if os.geteuid() == 0:
        device = tmp_path / "null"
        os.mknod(device, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    result = cli(*translate_args(run, "-i", lines, "-o", device))
    assert result.returncode == 0, result.stderr
    assert stat.S_ISCHR(device.lstat().st_mode) and device.lstat().st_size == 0

    target, link = tmp_path / "target.es", tmp_path / "link.es"
    write_output(target, "old\n")  # transcli's own file: one it may replace
    link.symlink_to(target.name)
    assert cli(*translate_args(run, "-i", lines, "-o", link)).returncode == 0
    assert link.is_symlink() and target.read_text().splitlines() == SPANISH


def test_an_output_replaces_only_a_file_transcli_wrote(run: Path, lines: Path,
                                                       tmp_path: Path) -> None:
    """-o over a user's file is refused (translate, score, evaluate); transcli's own
    output, unchanged since, is replaced; so is an empty file."""
    notes = tmp_path / "notes.txt"
    notes.write_text("my notes\n")
    refs = tmp_path / "refs.es"
    refs.write_text("".join(s + "\n" for s in SPANISH), encoding="utf-8")
    for args, what in ((translate_args(run, "-i", lines), "translations"),
                       (["score", "-m", run, "--checkpoint", "last", "--src", lines,
                         "--tgt", refs], "scores"),
                       (["evaluate", "-m", run, "--checkpoint", "last", "--greedy", "--src",
                         lines, "--ref", refs, "--hyp-out", notes], "hypotheses")):
        args = [*args, "-o", notes] if "--hyp-out" not in args else args
        assert error_of(cli(*args)) == (
            f"transcli: error: {notes}: exists and was not written by transcli (or was "
            f"changed since); refusing to replace it with the {what}: remove it first or "
            f"choose another file")
    assert notes.read_text() == "my notes\n"

    out = tmp_path / "out.es"
    for _ in range(2):  # written, then replaced: it is transcli's
        assert cli(*translate_args(run, "-i", lines, "-o", out)).returncode == 0
    assert out.read_text().splitlines() == SPANISH
    with open(out, "a") as edit:
        edit.write("my correction\n")
    assert "was not written by transcli (or was changed since)" in error_of(
        cli(*translate_args(run, "-i", lines, "-o", out)))
    assert out.read_text().endswith("my correction\n")

    empty = tmp_path / "empty.es"
    empty.touch()
    assert cli(*translate_args(run, "-i", lines, "-o", empty)).returncode == 0


def test_without_its_state_folder_an_existing_output_is_kept(tmp_path: Path) -> None:
    """A state folder that cannot be written: transcli forgets what it wrote, and so
    treats the file as the user's."""
    out = tmp_path / "out.txt"
    state = os.environ["XDG_STATE_HOME"]
    os.environ["XDG_STATE_HOME"] = "/proc/no-state-here"
    try:
        write_output(out, "first\n")
        with pytest.raises(UserError, match="was not written by transcli"):
            write_output(out, "second\n")
    finally:
        os.environ["XDG_STATE_HOME"] = state
    assert out.read_text() == "first\n"


def test_replaced_outputs_keep_their_mode_and_new_ones_follow_the_umask(tmp_path: Path) -> None:
    old = tmp_path / "old.txt"
    write_output(old, "x")  # transcli's own file: one it may replace
    old.chmod(0o640)
    umask = os.umask(0o027)
    try:
        for path in (old, tmp_path / "new.txt"):
            with output_file(path) as handle:
                handle.write(b"written\n")
    finally:
        os.umask(umask)
    assert stat.S_IMODE(old.stat().st_mode) == 0o640
    assert stat.S_IMODE((tmp_path / "new.txt").stat().st_mode) == 0o640  # 0o666 & ~0o027
    assert old.read_text() == "written\n" and temp_files(tmp_path) == []


@pytest.mark.slow
@pytest.mark.parametrize("command", ["translate", "evaluate"])
def test_a_write_past_a_size_limit_keeps_the_old_output(run: Path, tmp_path: Path,
                                                        command: str) -> None:
    """A full disk in the middle of an output: one line naming it, the old file whole."""
    source = tmp_path / "many.en"
    source.write_text("".join(line + "\n" for line in ENGLISH * 20), encoding="utf-8")
    ref = tmp_path / "ref.es"
    ref.write_text("".join(line + "\n" for line in SPANISH * 20), encoding="utf-8")
    out = tmp_path / "out.es"
    write_output(out, "the previous output\n")  # transcli's, so it may be replaced
    args = (translate_args(run, "-i", source, "-o", out) if command == "translate" else
            ["evaluate", "-m", run, "--checkpoint", "last", "--src", source, "--ref", ref,
             "--hyp-out", out])
    line = error_of(cli(*args, preexec=file_size_limit(2000)))
    assert f"{out}: cannot write the" in line and "File too large" in line
    assert out.read_text() == "the previous output\n" and temp_files(tmp_path) == []


@pytest.mark.slow
def test_a_full_filesystem_is_one_line_naming_the_output(run: Path, lines: Path,
                                                         tmp_path: Path) -> None:
    with small_filesystem(tmp_path / "small", "16k") as small:
        (small / "filler").write_bytes(b"\0" * 12 * 1024)
        source = tmp_path / "many.en"
        source.write_text("".join(line + "\n" for line in ENGLISH * 100), encoding="utf-8")
        line = error_of(cli(*translate_args(run, "-i", source, "-o", small / "out.es")))
        assert f"{small / 'out.es'}: cannot write the translations (No space left" in line
        assert sorted(p.name for p in small.iterdir()) == ["filler"]


# ----------------------------------------------------------------------------- 2. --force


@pytest.mark.slow
def test_train_force_never_deletes_a_users_files(prepared: Path, tmp_path: Path) -> None:
    """A dir that is not a run: --force writes beside the user's files but never over
    them; over a run it removes only what the run wrote."""
    mine = tmp_path / "mine"
    (mine / CHECKPOINT_DIR).mkdir(parents=True)
    (mine / CHECKPOINT_DIR / "model.pt").write_bytes(b"weeks of work")
    before = snapshot(mine)
    with pytest.raises(UserError, match="checkpoints: exists and was not written by transcli "
                                        "train .* even with --force"):
        train_dirs(fast_config("train.max_steps=2"), prepared, mine, force=True)
    assert snapshot(mine) == before

    run = tmp_path / "run"
    train_dirs(fast_config("train.max_steps=10"), prepared, run)
    (run / "notes.txt").write_text("mine")
    (run / CHECKPOINT_DIR / "keep.safetensors").write_bytes(b"mine too")
    board = run / TENSORBOARD_DIR
    board.mkdir()
    (board / f"{TENSORBOARD_EVENTS}1.host.1.0").write_bytes(b"the old run's curves")
    (board / "mine.txt").write_text("mine")
    train_dirs(fast_config("train.max_steps=5", "train.save_every=5"), prepared, run, force=True)
    assert (run / "notes.txt").read_text() == "mine"
    assert [p.name for p in board.iterdir()] == ["mine.txt"]
    assert (run / CHECKPOINT_DIR / "keep.safetensors").read_bytes() == b"mine too"
    assert complete_steps(run) == [5]  # the old run's steps 10 (and 5) were replaced

    other = tmp_path / "other"
    other.mkdir()
    (other / "notes.txt").write_text("mine")
    with pytest.raises(UserError, match="not empty .* --force to write beside them"):
        train_dirs(fast_config("train.max_steps=2"), prepared, other)
    train_dirs(fast_config("train.max_steps=2"), prepared, other, force=True)
    assert (other / "notes.txt").read_text() == "mine" and complete_steps(other) == [2]


@pytest.mark.slow
def test_export_force_never_overwrites_a_users_file(sample_run: Path, tmp_path: Path) -> None:
    pytest.importorskip("ctranslate2")
    out = tmp_path / "out"
    out.mkdir()
    (out / "config.json").write_text("the user's config")
    result = cli("export", "-m", sample_run, "-f", "ct2", "-o", out, "--checkpoint", "200",
                 "--force")
    assert "config.json: exists and was not written by transcli export" in error_of(result)
    assert [p.name for p in out.iterdir()] == ["config.json"]
    assert (out / "config.json").read_text() == "the user's config"
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


# ----------------------------------------------------------------------------- 3. run dirs


@pytest.mark.slow
def test_one_trainer_per_run_dir(prepared: Path, tmp_path: Path) -> None:
    run = tmp_path / "run"
    first = transcli_process(*train_cli(prepared, run, "train.max_steps=100000",
                                        "train.save_every=100000"))
    try:
        wait_for(run / METRICS_FILE)
        for extra in ([], ["--resume"], ["--force"]):
            result = cli(*train_cli(prepared, run, "train.max_steps=3"), *extra)
            assert (f"{run}: in use by another training process (pid {first.pid})"
                    in train_error(result))
        first.send_signal(signal.SIGTERM)
        _, err = first.communicate(timeout=120)
        assert first.returncode == 0, err
    finally:
        first.kill()
    assert not (run / LOCK_FILE).exists()
    metrics = read_metrics(run / METRICS_FILE)
    assert [r["step"] for r in metrics] == sorted(r["step"] for r in metrics)  # one writer


def test_a_lock_left_by_a_dead_process_blocks_nobody(prepared: Path, tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    (run / LOCK_FILE).write_text("999999\n")  # its holder died: the OS lock died with it
    train_dirs(fast_config("train.max_steps=2"), prepared, run)
    assert complete_steps(run) == [2] and not (run / LOCK_FILE).exists()


def test_a_failed_start_leaves_nothing_that_blocks_the_next(prepared: Path,
                                                            tmp_path: Path) -> None:
    run = tmp_path / "run"
    with pytest.raises(UserError, match="no training pair fits model.max_positions=2"):
        train_dirs(fast_config("model.max_positions=2"), prepared, run)
    assert not run.exists()
    train_dirs(fast_config("train.max_steps=2"), prepared, run)  # the same command, data fixed
    assert complete_steps(run) == [2]


@pytest.mark.slow
def test_a_start_killed_before_the_first_save_is_taken_over(prepared: Path,
                                                            tmp_path: Path) -> None:
    run = tmp_path / "run"
    proc = transcli_process(*train_cli(prepared, run, "train.max_steps=100000",
                                       "train.save_every=100000", "train.log_every=100000",
                                       "train.valid_every=100000"))
    try:
        wait_for(run / RUN_FILE)
        proc.kill()
        proc.wait(timeout=60)
    finally:
        proc.kill()
    assert not complete_steps(run)
    train_dirs(fast_config("train.max_steps=2"), prepared, run, resume=True)  # --resume accepts it
    run2 = tmp_path / "run2"
    shutil.copytree(run, run2)
    shutil.rmtree(run2 / CHECKPOINT_DIR)
    (run2 / METRICS_FILE).unlink()
    train_dirs(fast_config("train.max_steps=2"), prepared, run2)  # so does a plain re-run
    assert complete_steps(run) == complete_steps(run2) == [2]


def test_temp_files_of_killed_writes_are_removed_on_the_next_start(prepared: Path,
                                                                   tmp_path: Path) -> None:
    run = tmp_path / "run"
    train_dirs(fast_config("train.max_steps=10"), prepared, run)
    stale = [run / CHECKPOINT_DIR / ".step-0000015.safetensors.transcli-k2j4h.tmp",
             run / ".metrics.jsonl.transcli-a8b9c.tmp", run / ".config.yaml.transcli-zz1.tmp"]
    for path in stale:
        path.write_bytes(b"\0" * 100_000)
    foreign = run / ".notes.txt.abc.tmp"  # not a temp of transcli's: no mark
    foreign.write_text("mine")
    train_dirs(fast_config("train.max_steps=12"), prepared, run, resume=True)
    assert not any(path.exists() for path in stale) and foreign.read_text() == "mine"


# ----------------------------------------------------------------------------- 4. loading


def _copy(prepared: Path, tmp_path: Path) -> Path:
    return Path(shutil.copytree(prepared, tmp_path / "data"))


def test_a_token_id_outside_the_vocabulary_is_refused_at_load(prepared: Path,
                                                              tmp_path: Path) -> None:
    data = _copy(prepared, tmp_path)
    ids = np.load(data / "train.tgt.npy")
    ids[len(ids) // 2] = load_manifest(data)["vocab_size"] + 7
    np.save(data / "train.tgt.npy", ids)
    with pytest.raises(UserError, match=r"train.tgt.npy: token id \d+ is outside the "
                                        r"vocabulary"):
        train_dirs(fast_config("train.max_steps=2"), data, tmp_path / "run")
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize("key", ["src_lang", "vocab_size", "data_hash"])
def test_a_manifest_missing_a_key_is_named(prepared: Path, tmp_path: Path, key: str) -> None:
    data = _copy(prepared, tmp_path)
    manifest = json.loads((data / MANIFEST_FILE).read_text())
    del manifest[key]
    (data / MANIFEST_FILE).write_text(json.dumps(manifest))
    with pytest.raises(UserError, match=f"manifest.json: '{key}' is missing"):
        train_dirs(fast_config("train.max_steps=2"), data, tmp_path / "run")


@pytest.mark.parametrize("content, message", [
    (b"\xff\xfe garbage", "run.json: unreadable"),
    (b"[1, 2]", "run.json: not a transcli run record .not a JSON object"),
    (b'{"vocab_size": 5}', "run.json: not a transcli run record .no 'data_hash'"),
])
def test_a_damaged_run_record_is_one_line(prepared: Path, tmp_path: Path, content: bytes,
                                          message: str) -> None:
    run = tmp_path / "run"
    train_dirs(fast_config("train.max_steps=2"), prepared, run)
    (run / RUN_FILE).write_bytes(content)
    before = snapshot(run)
    for resume, force in ((True, False), (False, True)):
        with pytest.raises(UserError, match=message):
            train_dirs(fast_config("train.max_steps=4"), prepared, run, resume=resume, force=force)
    assert snapshot(run) == before


def test_a_metrics_log_with_binary_garbage_still_resumes(prepared: Path,
                                                         tmp_path: Path) -> None:
    run = tmp_path / "run"
    train_dirs(fast_config("train.max_steps=10"), prepared, run)
    with open(run / METRICS_FILE, "ab") as handle:
        handle.write(b"\xff\xfe\x00torn\n")
    train_dirs(fast_config("train.max_steps=15"), prepared, run, resume=True)
    steps = [r["step"] for r in read_metrics(run / METRICS_FILE, "train")]
    assert steps == [5, 10, 15] and b"torn" not in (run / METRICS_FILE).read_bytes()


# ----------------------------------------------------------------------------- 5. I/O errors


@pytest.mark.parametrize("redirect, status, message", [
    (">&-", 1, "transcli: error: stdout is closed"),
    ("> /dev/full", 1, "transcli: error: stdout: cannot write (No space left on device)"),
    ("2>&-", 0, ""),
    ("2> /dev/full", 0, ""),
])
def test_evaluate_with_a_closed_or_full_std_stream(tmp_path: Path, redirect: str, status: int,
                                                   message: str) -> None:
    if "/dev/full" in redirect and not Path("/dev/full").exists():
        pytest.skip("no /dev/full here")
    ref = tmp_path / "ref.es"
    ref.write_text("".join(line + "\n" for line in SPANISH), encoding="utf-8")
    result = shell(f'"$PY" -m transcli evaluate --hyp {ref} --ref {ref} {redirect}')
    assert result.returncode == status, result.stderr
    assert "Traceback" not in result.stderr and result.stderr.strip().startswith(message)
    assert len(result.stderr.splitlines()) == (1 if message else 0)


@pytest.mark.parametrize("redirect, message", [
    (">&-", "stdout is closed"),
    ("<&-", "stdin is closed"),
    ("> /dev/full", "stdout: cannot write the translations (No space left on device)"),
])
@pytest.mark.slow
def test_translate_with_a_closed_or_full_std_stream(run: Path, lines: Path, redirect: str,
                                                    message: str) -> None:
    if "/dev/full" in redirect and not Path("/dev/full").exists():
        pytest.skip("no /dev/full here")
    source = "" if redirect == "<&-" else f"< {lines}"
    result = shell(f'"$PY" -m transcli translate -m {run} --checkpoint last --greedy '
                   f'{source} {redirect}')
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert result.stderr.strip().splitlines()[-1].startswith(f"transcli: error: {message}")


@pytest.mark.parametrize("files, redirect, message", [
    ("-i LINES -o /dev/stdout", ">&-", "/dev/stdout: stdout is closed"),
    ("-i LINES -o /proc/self/fd/1", ">&-", "/proc/self/fd/1: stdout is closed"),
    ("-i LINES -o //proc/thread-self/fd/1", ">&-", "//proc/thread-self/fd/1: stdout is closed"),
    ("-i LINES -o LINK", ">&-", "LINK: stdout is closed"),  # a symlink to /dev/stdout
    ("-i /dev/stdin -o OUT", "<&-", "/dev/stdin: stdin is closed"),
])
@pytest.mark.slow
def test_a_path_to_a_closed_std_stream_is_refused_as_the_stream_is(
        run: Path, lines: Path, tmp_path: Path, files: str, redirect: str, message: str) -> None:
    """A closed descriptor is plugged with /dev/null: a path that names it would write into
    nothing (exit 0, the output lost) or read nothing; refused as `-` is."""
    (tmp_path / "link").symlink_to("/dev/stdout")
    files = files.replace("LINES", str(lines)).replace("OUT", str(tmp_path / "out.es"))
    files, message = (text.replace("LINK", str(tmp_path / "link")) for text in (files, message))
    result = shell(f'"$PY" -m transcli translate -m {run} --checkpoint last --greedy {files} '
                   f'{redirect}')
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert result.stderr.strip().splitlines()[-1] == f"transcli: error: {message} " + (
        "(there is nothing to read; give an input file instead)" if "stdin" in message else
        "(nothing can be written to it; give an output file, or leave stdout open)")
    assert not (tmp_path / "out.es").exists()


def test_a_config_from_a_closed_stdin_is_refused() -> None:
    """`-c /dev/stdin <&-` read the /dev/null plugging it: every default, exit 0."""
    result = shell('"$PY" -m transcli config -c /dev/stdin <&-')
    assert result.returncode == 1 and result.stdout == ""
    assert result.stderr.strip() == ("transcli: error: /dev/stdin: stdin is closed (there is "
                                     "nothing to read; give an input file instead)")


@pytest.mark.slow
def test_an_input_that_is_also_stdout_or_stdin_is_refused(run: Path, lines: Path,
                                                          tmp_path: Path) -> None:
    """`-i f > f` (the shell emptied f first; cat says "input file is output file") and
    `-o /dev/stdin` with stdin a pipe (it would write into its own input, forever)."""
    same = tmp_path / "same.en"
    same.write_text("Hello.\n", encoding="utf-8")
    result = shell(f'"$PY" -m transcli translate -m {run} --checkpoint last --greedy '
                   f'-i {same} > {same}')
    assert result.returncode == 1 and result.stderr.strip().splitlines()[-1] == (
        f"transcli: error: {same}: is both an input and standard output (`>` empties it "
        f"before the command starts); write the translations to another file")
    same.write_text("Hello.\n", encoding="utf-8")
    result = shell(f'"$PY" -m transcli translate -m {run} --checkpoint last --greedy '
                   f'< {same} >> {same}')  # would append its translations to its input
    assert result.returncode == 1 and "standard input: is both an input and standard " \
        "output" in result.stderr and same.read_text(encoding="utf-8") == "Hello.\n"
    result = shell(f'echo Hi. | "$PY" -m transcli translate -m {run} --checkpoint last '
                   f'--greedy -i {same} -o /dev/stdin')  # the pipe it holds itself
    assert result.returncode == 1 and "/dev/stdin: is this command's standard input" \
        in result.stderr
    result = shell(f'cat {lines} | timeout 60 "$PY" -m transcli translate -m {run} '
                   f'--checkpoint last --greedy -o /dev/stdin')
    assert result.returncode == 1 and result.stderr.strip().splitlines()[-1] == (
        "transcli: error: /dev/stdin: is this command's standard input; refusing to write "
        "the translations into it")


@pytest.mark.slow
def test_a_closed_stderr_is_not_handed_to_an_output_file(run: Path, lines: Path,
                                                         tmp_path: Path) -> None:
    """`2>&-`: descriptor 2 is plugged, so the output file cannot land on it."""
    out = tmp_path / "out.es"
    result = shell(f'"$PY" -m transcli translate -m {run} --checkpoint last --greedy -i {lines} '
                   f'-o {out} 2>&-')
    assert result.returncode == 0
    assert out.read_text(encoding="utf-8").splitlines() == SPANISH


@pytest.mark.slow
def test_train_stops_with_one_line_when_a_write_fails(prepared: Path, tmp_path: Path) -> None:
    """Each of train's writes past a size limit: the file named, the last complete
    checkpoint intact and loadable, no temp file left."""
    run = tmp_path / "run"
    result = cli(*train_cli(prepared, run, "train.max_steps=40", "train.save_every=5"),
                 preexec=file_size_limit(150_000))
    line = train_error(result)
    assert f"{run}/" in line and "cannot write the" in line and "(File too large)" in line
    assert "training stopped at step" in line
    steps = complete_steps(run)
    if steps:
        model = Transformer(load_config(run / CONFIG_FILE).model, _vocab(prepared))
        load_weights(model, step_path(run, steps[-1]))
        assert f"the last good checkpoint (step {steps[-1]}) is intact" in line
    assert temp_files(run) == []


def _vocab(prepared: Path) -> int:
    return int(load_manifest(prepared)["vocab_size"])


@pytest.mark.slow
def test_train_on_a_full_filesystem(prepared: Path, tmp_path: Path) -> None:
    with small_filesystem(tmp_path / "small", "600k") as small:
        result = cli(*train_cli(prepared, small / "run", "train.max_steps=60",
                                "train.save_every=5"))
        line = train_error(result)
        assert "No space left on device" in line and "training stopped at step" in line
        assert [p for p in (small / "run").rglob(".*") if p.name != LOCK_FILE] == []


@pytest.mark.slow
def test_train_refuses_an_unwritable_run_dir_before_training(prepared: Path,
                                                             tmp_path: Path) -> None:
    run = tmp_path / "run"
    train_dirs(fast_config("train.max_steps=2"), prepared, run)
    with read_only(run / CHECKPOINT_DIR):
        line = train_error(cli(*train_cli(prepared, run, "train.max_steps=4"), "--resume"))
        assert f"{run / CHECKPOINT_DIR}: cannot write the checkpoints" in line
    with read_only(run):
        line = train_error(cli(*train_cli(prepared, run, "train.max_steps=4"), "--resume"))
        assert f"{run / LOCK_FILE}: cannot create the lock file" in line
    assert complete_steps(run) == [2]


def _unreadable_best(best: Path) -> None:
    """The run's only weights as a best.safetensors nobody may read (root ignores modes)."""
    if os.geteuid() == 0:
        pytest.skip("root reads a file of mode 000; the directory and FIFO cases run as root")
    step_path(best.parent.parent, 200).rename(best)
    best.chmod(0)


@pytest.mark.slow
@pytest.mark.parametrize("make, reason, commands", [
    (Path.mkdir, "a directory, not a checkpoint", ("translate", "export")),
    (os.mkfifo, "not a regular file, not a checkpoint", ("translate", "export")),
    (_unreadable_best, "cannot read the checkpoint (Permission denied)",
     ("translate", "export", "info")),
])
def test_a_best_checkpoint_that_cannot_be_read_says_why(run: Path, tmp_path: Path, make,
                                                        reason: str, commands) -> None:
    """Once "No such file", or (a directory, a FIFO) the newest step taken in its place
    with a note that the run had no best checkpoint yet."""
    best = run / CHECKPOINT_DIR / "best.safetensors"
    make(best)
    args = {"translate": ["translate", "-m", run], "info": ["info", run],
            "export": ["export", "-m", run, "--format", "ct2", "-o", tmp_path / "ct2"]}
    for command in commands:
        line = error_of(cli(*args[command], stdin=b"Hello.\n"))
        assert line == f"transcli: error: {best}: {reason}" + (
            "" if "Permission" in reason else " (move it away, or give another --checkpoint)")
    assert not (tmp_path / "ct2").exists()


# ----------------------------------------------------------------------------- 6. signals


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP])
def test_translate_stopped_by_a_signal_keeps_the_lines_done(run: Path, tmp_path: Path,
                                                            sig: int) -> None:
    """A stop in the middle of a long input: 128 + N, and the output file holds the whole
    lines translated before it (the first chunks' translations, in order), no temp file."""
    source = tmp_path / "many.en"
    source.write_text("".join(line + "\n" for line in ENGLISH * 2000), encoding="utf-8")
    out = tmp_path / "out.es"
    proc = subprocess.Popen([sys.executable, "-m", "transcli", *map(str, translate_args(
        run, "-i", source, "-o", out))], stderr=subprocess.PIPE, cwd=ROOT, env=ENV,
        preexec_fn=default_signals)
    err = Collected(proc, proc.stderr)
    err.wait_for(r"\| *[1-9]\d{3,}/")  # a chunk of 1000 lines done
    proc.send_signal(sig)
    assert proc.wait(timeout=DEADLINE) == 128 + sig
    name = signal.Signals(sig).name
    last = err.whole().replace("\r", "\n").strip().splitlines()[-1]
    assert last == f"transcli: stopped by {name}; {out} holds only the translations " \
                   f"written before it"
    done = out.read_text(encoding="utf-8").splitlines()
    assert 1000 <= len(done) < len(ENGLISH) * 2000 and done == (SPANISH * 2000)[:len(done)]
    assert temp_files(tmp_path) == []


def test_a_stopped_stream_keeps_its_whole_lines_in_the_output(tmp_path: Path) -> None:
    """The loop of translate, evaluate and score, stopped by a signal in its third chunk:
    the output file (over an earlier output of transcli's) holds the two chunks done."""
    from transcli.inference.streaming import Output, drain, stream
    from transcli.system.signals import Interrupted

    out = tmp_path / "scores.tsv"
    write_output(out, "an earlier output\n")

    def work(chunk: list[str], first: int) -> list[str]:
        if first == 4:
            raise Interrupted(signal.SIGTERM)
        return [f"{first + i}\t{line}" for i, line in enumerate(chunk)]

    with pytest.raises(Interrupted):
        drain(stream(iter("abcdefgh"), work, Output(out, [], "scores"), progress=False,
                     lines=2))
    assert out.read_text().splitlines() == ["0\ta", "1\tb", "2\tc", "3\td"]
    with pytest.raises(Interrupted):  # stopped in the middle of a line: it is cut off
        with output_file(out, "scores", streamed=True) as handle:
            handle.write(b"0\ta\n1\tb\n2\t")
            raise Interrupted(signal.SIGINT)
    assert out.read_bytes() == b"0\ta\n1\tb\n"
    with pytest.raises(Interrupted):  # nothing whole written: the earlier output stays
        with output_file(out, "scores", streamed=True) as handle:
            handle.write(b"0\t")
            raise Interrupted(signal.SIGINT)
    assert out.read_bytes() == b"0\ta\n1\tb\n" and temp_files(tmp_path) == []


@pytest.mark.slow
def test_ctrl_c_stops_prepare_during_sentencepiece_training_at_once(tmp_path: Path) -> None:
    """Sentencepiece's C++ trainer would hold Ctrl-C back until it is done: ten times as
    long as reading the corpus before it. The stop takes less time than that reading."""
    rng = np.random.default_rng(0)
    letters = np.array(list("abcdefghijklmnopqrstuvwxyz"))
    words = ["".join(rng.choice(letters, rng.integers(3, 10))) for _ in range(20_000)]
    corpus = tmp_path / "corpus.tsv"
    with open(corpus, "w", encoding="utf-8") as handle:
        for _ in range(100_000):
            pick = rng.integers(0, len(words), 16)
            handle.write(" ".join(words[i] for i in pick[:8]) + "\t"
                         + " ".join(words[i] for i in pick[8:]) + "\n")
    out = tmp_path / "prepared"
    started = time.monotonic()
    proc = subprocess.Popen([sys.executable, "-m", "transcli", "prepare", "--tsv", str(corpus),
                             "--out", str(out), "--set", "data.vocab_size=8000"],
                            stderr=subprocess.PIPE, cwd=ROOT, env=ENV,
                            preexec_fn=default_signals)
    err = Collected(proc, proc.stderr)
    err.wait_for("training sentencepiece")
    sent = time.monotonic()
    proc.send_signal(signal.SIGINT)
    assert proc.wait(timeout=DEADLINE) == 130
    stopped, reading = time.monotonic() - sent, sent - started
    assert stopped < reading, f"stopped in {stopped:.1f} s; the corpus read in {reading:.1f} s"
    assert "transcli: stopped by SIGINT" in err.whole()
    assert not out.exists() and sorted(p.name for p in tmp_path.iterdir()) == ["corpus.tsv"]


@pytest.mark.slow
def test_nohup_keeps_training_through_a_hangup(prepared: Path, tmp_path: Path) -> None:
    """A signal ignored at start (`nohup` ignores SIGHUP) stays ignored: of a SIGHUP and
    then a SIGTERM (both pending at once are taken SIGHUP first), the SIGTERM alone stops
    training, once."""
    run = tmp_path / "run"
    def nohup() -> None:
        default_signals()
        signal.signal(signal.SIGHUP, signal.SIG_IGN)

    proc = transcli_process(*train_cli(prepared, run, "train.max_steps=100000",
                                       "train.save_every=100000"), preexec_fn=nohup)
    try:
        wait_for(run / METRICS_FILE)  # training's stop signals are in place
        proc.send_signal(signal.SIGHUP)
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=DEADLINE)
        assert proc.returncode == 0, err
        assert "SIGTERM received" in err and "SIGHUP" not in err, err
    finally:
        proc.kill()


def test_a_scratch_dir_left_by_a_killed_process_is_removed_by_the_next(tmp_path: Path) -> None:
    out = tmp_path / "out"
    with scratch_dir(out) as live:
        with scratch_dir(out) as other:  # a live one is kept
            assert live.is_dir() and other.is_dir()
    abandoned = tmp_path / ".out.transcli-dead.tmp"
    abandoned.mkdir()
    (abandoned / "train.en").write_bytes(b"\0" * 100_000)
    held = tmp_path / ".out.transcli-held.tmp"
    held.mkdir()
    holder = os.open(held, os.O_RDONLY)
    try:
        fcntl.flock(holder, fcntl.LOCK_EX)  # a process still working in it
        with scratch_dir(out):
            pass
    finally:
        os.close(holder)
    assert not abandoned.exists() and held.is_dir()


@pytest.mark.slow
def test_a_signal_with_stdout_redirected_to_a_file_says_what_it_holds(run: Path,
                                                                      tmp_path: Path) -> None:
    """`> out.es` is the shell's file, written as lines come: the stop line says that it
    holds only the lines before the signal, not that no output was left half-written."""
    source = tmp_path / "many.en"
    source.write_text("".join(line + "\n" for line in ENGLISH * 2000), encoding="utf-8")
    with open(tmp_path / "out.es", "wb") as redirected:
        proc = subprocess.Popen([sys.executable, "-m", "transcli", *map(str, translate_args(
            run, "-i", source))], stdout=redirected, stderr=subprocess.PIPE, cwd=ROOT,
            env=ENV, preexec_fn=default_signals)
        err = Collected(proc, proc.stderr)
        err.wait_for("line/s")
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=DEADLINE) == 128 + signal.SIGTERM
    last = err.whole().replace("\r", "\n").strip().splitlines()[-1]
    assert last == ("transcli: stopped by SIGTERM; stdout, a file, holds only the "
                    "translations written before it")


def test_the_record_of_what_transcli_wrote_is_never_an_output(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue: `-o $XDG_STATE_HOME/transcli/outputs.json`, before that record existed,
    wrote the output there and then the record over it: exit 0, the output gone."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    record = tmp_path / "state" / "transcli" / "outputs.json"
    record.parent.mkdir(parents=True)
    (tmp_path / "link").symlink_to(record)
    for name in (record, tmp_path / "link"):
        with pytest.raises(UserError, match="is transcli's record of the files it wrote"):
            write_output(name, "my translations\n")
    assert not record.exists()
    write_output(tmp_path / "out.txt", "first\n")
    write_output(tmp_path / "out.txt", "second\n")  # the record vouches for its output
    assert (tmp_path / "out.txt").read_text() == "second\n"
