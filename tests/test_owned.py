"""Outputs and what transcli may replace (system/outputs.py, system/replacing.py).

A file is replaced or removed only while it is still as transcli wrote it, checked at the
moment of replacing: a file a user writes at an output while a command runs is kept, byte
for byte, and the command's output is kept beside it under a name the one-line refusal
gives. Temp files a killed writer left are removed by the next write of that output; an
empty option value and an output name ending in '/' are refused in one line.

The concurrent writer is real: this test process writes the user's file while a real
`transcli` subprocess (the tiny memorised run) is in the middle of its work, fed through a
pipe or a FIFO that is held open until the user's file is written.
"""

from __future__ import annotations

import fcntl
import json
import os
import signal
import stat
import subprocess
import sys
from pathlib import Path
from typing import IO, Optional

import pytest
from helpers import PAIRS, ROOT, TINY_CONFIG, write_output
from helpers.cli import one_error_line, run_cli
from helpers.waiting import running, wait_until

from transcli.export import exported
from transcli.system.errors import UserError
from transcli.system.outputs import (
    OutputFolder,
    file_digest,
    output_file,
    output_folder,
    record_of,
)

ENGLISH = [en for en, _ in PAIRS]
SPANISH = [es for _, es in PAIRS]
MINE = b"the user's own file, written while transcli worked\n"

pytestmark = pytest.mark.usefixtures("one_thread_per_module")


# ----------------------------------------------------------------------------- helpers


def start(*args: str | Path) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "transcli", *map(str, args)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, cwd=ROOT,
                            env={**os.environ, "OMP_NUM_THREADS": "1"})


def wait_for_temp(output: Path, proc: subprocess.Popen) -> Path:
    """The temp file `output` is being written into: once it exists, the command is past
    every check it makes when it starts."""
    def found() -> list[Path]:
        temps = list(output.parent.glob(f".{output.name}.transcli-*.tmp"))
        return temps or (running(proc, lambda: proc.communicate()[1].decode()) and [])

    return wait_until(found, f"a temp file of {output}",
                      seen=lambda: sorted(p.name for p in output.parent.iterdir()))[0]


def the_error(proc: subprocess.Popen, timeout: float = 300) -> str:
    """The one error line of the command once its stdin is closed (exit 1; progress bars
    aside)."""
    _, err = proc.communicate(timeout=timeout)
    text = err.decode().replace("\r", "\n")
    assert proc.returncode == 1 and "Traceback" not in text, text
    errors = [line for line in text.splitlines() if line.startswith("transcli: error: ")]
    assert len(errors) == 1, text
    return errors[0]


def lines(*texts: str) -> str:
    return "".join(text + "\n" for text in texts)


def hidden(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.startswith("."))


# ----------------------------------------------------------------------------- -o files


@pytest.mark.slow
@pytest.mark.parametrize("command, before", [("translate", None), ("translate", "transcli's"),
                                             ("score", None), ("evaluate", "transcli's")])
def test_a_file_written_at_the_output_during_the_run_is_kept(run_dir: Path, tmp_path: Path,
                                                             command: str,
                                                             before: Optional[str]) -> None:
    """The user writes the -o file (new, or over transcli's earlier output) while the
    command runs: it survives byte for byte, exit 1 with one line naming where the
    output went, and that file holds the whole output."""
    out = tmp_path / "out.txt"
    if before:
        write_output(out, "an earlier output of transcli\n")  # one it may replace
    src, tgt = tmp_path / "src.en", tmp_path / "tgt.es"
    run = ["-m", run_dir, "--checkpoint", "last"]
    if command == "translate":
        proc = start("translate", *run, "--greedy", "-o", out)
        feeds: list[IO[str]] = [open(proc.stdin.fileno(), "w", closefd=False)]
    else:
        os.mkfifo(src)
        if command == "score":
            os.mkfifo(tgt)
            proc = start("score", *run, "--src", src, "--tgt", tgt, "-o", out)
        else:
            tgt.write_text(lines(*SPANISH[:2]), encoding="utf-8")
            proc = start("evaluate", *run, "--greedy", "--src", src, "--ref", tgt,
                         "--hyp-out", out)
        feeds = [open(src, "w", encoding="utf-8")]  # waits for the command to open it
    feeds[0].write(lines(ENGLISH[0]))
    feeds[0].flush()
    if command == "score":
        feeds.append(open(tgt, "w", encoding="utf-8"))
        feeds[1].write(lines(SPANISH[0]))
        feeds[1].flush()
    wait_for_temp(out, proc)
    out.write_bytes(MINE)  # the user's write, while the command runs
    feeds[0].write(lines(ENGLISH[1]))
    if command == "score":
        feeds[1].write(lines(SPANISH[1]))
    for feed in feeds:
        feed.close()
    kept = out.with_name("out.txt.new")
    what = {"translate": "translations", "score": "scores", "evaluate": "hypotheses"}[command]
    assert the_error(proc) == (
        f"transcli: error: {out}: written or changed by someone else while transcli wrote "
        f"the {what}; it is kept as it is, and the {what} went to {kept}")
    assert out.read_bytes() == MINE
    output = kept.read_text(encoding="utf-8").splitlines()
    if command == "score":
        assert [line.split("\t")[0] for line in output] == ["0", "1"]
    else:
        assert output == SPANISH[:2]
    assert hidden(tmp_path) == []  # no temp file, nothing set aside


def test_a_file_changed_after_the_check_is_kept_and_so_is_the_output(tmp_path: Path) -> None:
    """The same in one process: transcli's file checked when the output opens, edited
    before it is replaced; and a new name taken meanwhile; then one not taken."""
    out = tmp_path / "out.txt"
    write_output(out, "transcli's\n")
    with pytest.raises(UserError, match=r"written or changed by someone else .* went to "
                                        r".*out\.txt\.new$"):
        with output_file(out, what="output") as handle:
            handle.write(b"new output\n")
            with open(out, "a") as edit:
                edit.write("the user's line\n")
    assert out.read_text() == "transcli's\nthe user's line\n"
    assert (tmp_path / "out.txt.new").read_text() == "new output\n"

    fresh = tmp_path / "fresh.txt"
    with pytest.raises(UserError, match="went to .*fresh.txt.new-2$"):
        (tmp_path / "fresh.txt.new").write_text("taken too")
        with output_file(fresh) as handle:
            handle.write(b"ours\n")
            fresh.write_bytes(MINE)
    assert fresh.read_bytes() == MINE and (tmp_path / "fresh.txt.new-2").read_text() == "ours\n"

    folder = tmp_path / "folder.txt"  # a folder appears at the name: the kept output
    with pytest.raises(UserError, match="went to .*folder.txt.new$"):  # has a file's mode
        with output_file(folder) as handle:
            handle.write(b"ours\n")
            folder.mkdir(mode=0o755)
    umask = os.umask(0)
    os.umask(umask)
    assert stat.S_IMODE((tmp_path / "folder.txt.new").stat().st_mode) == 0o666 & ~umask

    write_output(out.with_name("mine.txt"), "first\n")
    write_output(out.with_name("mine.txt"), "second\n")  # still transcli's: replaced
    assert out.with_name("mine.txt").read_text() == "second\n" and hidden(tmp_path) == []


# ----------------------------------------------------------------------------- folders


def staged(folder: Path, files: dict[str, str], record: str) -> list[str]:
    """Write `files` into `folder` with a record of them (the record last): what a run
    of prepare or export leaves in its stage."""
    folder.mkdir()
    for name, text in files.items():
        (folder / name).write_text(text)
    (folder / record).write_text(json.dumps({"format": "test", **record_of(folder, [*files])}))
    return [*files, record]


@pytest.mark.parametrize("change", ["edited", "created"])
def test_a_folder_is_replaced_all_or_nothing_at_the_moment_of_replacing(tmp_path: Path,
                                                                       change: str) -> None:
    """--force over an earlier output of ours: a file of it edited, or a new name of the
    set created, after the command checked the folder: nothing in the folder changes,
    the new set is kept beside it, and the refusal names both."""
    out = tmp_path / "out"
    folder = OutputFolder(out, "record.json", "export")
    names = staged(tmp_path / "one", {"a.bin": "old a", "b.bin": "old b"}, "record.json")
    folder.install(tmp_path / "one", names, folder.contents("--out"), "export", True)
    (out / "notes.txt").write_text("mine")
    before = {p.name: p.read_bytes() for p in out.iterdir()}

    names = staged(tmp_path / "two", {"a.bin": "new a", "b.bin": "new b", "c.bin": "new c"},
                   "record.json")
    contents = folder.contents("--out")  # when the command started
    assert set(contents.written) == {"a.bin", "b.bin", "record.json"}
    victim = out / ("b.bin" if change == "edited" else "c.bin")
    victim.write_bytes(MINE)
    with pytest.raises(UserError) as refusal:
        folder.install(tmp_path / "two", names, contents, "export", True)
    kept = tmp_path / "out.new"
    assert str(refusal.value) == (
        f"{victim}: written or changed by someone else while transcli wrote the export; "
        f"nothing in {out} was replaced, and the export went to {kept}")
    assert {p.name: p.read_bytes() for p in out.iterdir()} == {**before, victim.name: MINE}
    assert (kept / "c.bin").read_text() == "new c" and (kept / "record.json").is_file()
    assert hidden(out) == []

    victim.unlink()  # the user's file gone: the next --force replaces ours, keeps notes
    names = staged(tmp_path / "three", {"a.bin": "third a"}, "record.json")
    folder.install(tmp_path / "three", names, folder.contents("--out"), "export", True)
    assert sorted(p.name for p in out.iterdir()) == ["a.bin", "notes.txt", "record.json"]
    assert (out / "a.bin").read_text() == "third a"


def test_an_attention_file_taken_after_its_name_was_checked_is_kept(tmp_path: Path) -> None:
    folder = OutputFolder(tmp_path / "pictures", "record.json")
    folder.clear(folder.contents("--attention"))
    path = folder.folder / "line-00001.png"
    with pytest.raises(UserError, match="went to .*line-00001.png.new$"):
        with output_file(path, "picture", record=folder.record) as out:
            out.write(b"our picture")
            path.write_bytes(MINE)  # the user's file, after the name was checked
    assert path.read_bytes() == MINE
    assert (tmp_path / "pictures" / "line-00001.png.new").read_bytes() == b"our picture"


@pytest.mark.slow
def test_an_attention_file_created_during_translate_is_kept(run_dir: Path,
                                                           tmp_path: Path) -> None:
    folder = tmp_path / "pictures"
    proc = start("translate", "-m", run_dir, "--checkpoint", "last", "--greedy",
                 "--attention", folder)
    proc.stdin.write(lines(ENGLISH[0]).encode())
    proc.stdin.flush()
    wait_for_temp(folder / "alignments.txt", proc)
    (folder / "line-00001.txt").write_bytes(MINE)
    assert "line-00001.txt: exists and was not written by transcli" in the_error(proc)
    assert (folder / "line-00001.txt").read_bytes() == MINE


@pytest.mark.slow
def test_an_export_file_created_during_the_export_is_kept(run_dir: Path,
                                                          tmp_path: Path) -> None:
    """A real CTranslate2 export with --force into a folder holding a user's notes; a
    file of the export's names appears while the model is being written."""
    pytest.importorskip("ctranslate2")
    from transcli.export import ct2 as ct2_format
    from transcli.rundir.run import open_run_dir

    out = tmp_path / "out"
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    run = open_run_dir(run_dir)
    model = run.model(run.checkpoint("last"))

    def fill(tmp: Path) -> None:
        ct2_format.write(model, run.tokenizer, run.config, tmp, None)
        (out / "config.json").write_bytes(MINE)  # while the export is written

    with pytest.raises(UserError, match="config.json: exists and was not written by "
                                        "transcli export"):
        with output_folder(exported(out), "export", force=True) as stage:
            fill(stage.path)
            stage.record.update(format="ct2")
    assert sorted(p.name for p in out.iterdir()) == ["config.json", "notes.txt"]
    assert (out / "config.json").read_bytes() == MINE
    assert hidden(tmp_path) == [] and exported(out).record.read() == {}


@pytest.mark.slow
def test_a_prepared_file_edited_during_prepare_is_kept(tmp_path: Path) -> None:
    """prepare --force over its own earlier output, reading a TSV from a FIFO; the user
    edits a prepared file while it runs: kept, and the run refused in one line."""
    sample = ROOT / "data" / "sample"
    pairs = list(zip(*(sample.joinpath(f"train.{lang}").read_text(encoding="utf-8")
                       .splitlines()[:300] for lang in ("en", "es"))))
    tsv = tmp_path / "pairs.tsv"
    tsv.write_text(lines(*(f"{en}\t{es}" for en, es in pairs)), encoding="utf-8")
    out = tmp_path / "prep"
    args = ["prepare", "-c", TINY_CONFIG, "--out", out]
    assert run_cli(*args, "--tsv", tsv).returncode == 0
    fifo = tmp_path / "pairs.fifo"
    os.mkfifo(fifo)
    proc = start(*args, "--tsv", fifo, "--force", "--set", "data.seed=5")
    with open(fifo, "w", encoding="utf-8") as feed:  # waits for prepare to open it
        feed.write(lines(*(f"{en}\t{es}" for en, es in pairs[:100])))
        feed.flush()
        (out / "test.en").write_bytes(MINE)
        feed.write(lines(*(f"{en}\t{es}" for en, es in pairs[100:])))
    assert "test.en: exists and was not written by transcli prepare" in the_error(proc)
    assert (out / "test.en").read_bytes() == MINE


# ----------------------------------------------------------------------------- temp files


@pytest.mark.slow
def test_a_temp_file_left_by_a_kill_is_removed_by_the_next_write(run_dir: Path,
                                                                 tmp_path: Path) -> None:
    """translate killed (SIGKILL) mid-run leaves its temp file; the next translate to
    the same output removes it, but not a temp file a live writer holds, nor a file of
    that shape that is not transcli's."""
    out = tmp_path / "out.es"
    args = ["translate", "-m", run_dir, "--checkpoint", "last", "--greedy", "-o", out]
    proc = start(*args)
    left = wait_for_temp(out, proc)
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=60)
    assert left.exists()
    live = out.with_name(f".{out.name}.transcli-livelive.tmp")
    live.write_text("being written")
    others = out.with_name(f".{out.name}.abcdefgh.tmp")  # another program's: no mark
    others.write_text("not ours")
    with open(live) as holder:
        fcntl.flock(holder, fcntl.LOCK_EX)  # as a live writer holds its own
        result = run_cli(*args, stdin=lines(ENGLISH[0]))
    assert result.returncode == 0, result.stderr
    assert out.read_text().splitlines() == SPANISH[:1]
    assert hidden(tmp_path) == sorted([live.name, others.name])


def test_an_output_name_near_the_systems_limit_is_written_and_its_temps_cleaned(
        tmp_path: Path) -> None:
    """A 240-character file name (under NAME_MAX, 255): its temp file's name still fits,
    and a leftover temp of it is found by the cleaner."""
    out = tmp_path / ("n" * 236 + ".txt")
    leftover = tmp_path / f".{out.name[:200]}.transcli-deadbeef.tmp"
    leftover.write_text("a killed writer's")
    write_output(out, "ours\n")
    assert out.read_text() == "ours\n" and hidden(tmp_path) == []
    euros = tmp_path / ("€" * 80)  # 240 bytes in 80 characters: the cut counts bytes
    write_output(euros, "ours\n")
    assert euros.read_text() == "ours\n" and hidden(tmp_path) == []


# ----------------------------------------------------------------------------- names


@pytest.mark.slow
def test_an_output_name_ending_in_a_slash_is_refused(run_dir: Path, tmp_path: Path) -> None:
    src = tmp_path / "src.en"
    src.write_text(lines(ENGLISH[0]), encoding="utf-8")
    target = f"{tmp_path / 'newdir'}/"
    run = ["-m", run_dir, "--checkpoint", "last"]
    for args, what in ((["translate", *run, "-i", src, "-o", target], "translations"),
                       (["score", *run, "--src", src, "--tgt", src, "-o", target], "scores"),
                       (["evaluate", *run, "--src", src, "--ref", src, "--hyp-out", target],
                        "hypotheses")):
        assert one_error_line(run_cli(*args)) == (
            f"transcli: error: {target}: ends with '/', so it names a folder, and there is "
            f"none; give a file name for the {what}")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["src.en"]


@pytest.mark.parametrize("args, option", [
    (["translate", "-m", "run", "-o", ""], "-o"),
    (["translate", "-m", "run", "-i", ""], "-i"),
    (["translate", "-m", "run", "--output="], "--output"),
    (["score", "-m", "run", "--src", "", "--tgt", "t"], "--src"),
    (["evaluate", "--hyp", "h", "--ref", "r", "--hyp-out", ""], "--hyp-out"),
    (["export", "-m", "run", "-f", "ct2", "--out", ""], "--out"),
    (["prepare", "--tsv", "t", "--out", ""], "--out"),
    (["train", "--data", "d", "-o", ""], "-o"),
    (["explain", "-m", "run", "-o", "", "Hi."], "-o"),
])
def test_an_empty_option_value_is_named(args: list[str], option: str, tmp_path: Path) -> None:
    """Typer reads an empty path as '.': refused before the command runs, so that
    `--out "" --force` can never write into the current directory."""
    assert one_error_line(run_cli(*args, cwd=ROOT)) == \
        f"transcli: error: {option} is empty: give a value"


def test_an_empty_sentence_after_a_flag_is_not_an_empty_option() -> None:
    line = one_error_line(run_cli("explain", "-m", "no-such-run", "--force", ""))
    assert "no-such-run" in line and "empty" not in line


def test_record_names_are_plain_and_digests_are_sha256(tmp_path: Path) -> None:
    (tmp_path / "a").write_bytes(b"abc")
    record = record_of(tmp_path, ["a", "missing"])
    assert record == {"files": ["a", "missing"], "sha256": {
        "a": "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"}}
    assert file_digest(tmp_path / "a") == record["sha256"]["a"]
    (tmp_path / "r.json").write_text(json.dumps({"files": ["../a", "/etc/passwd", "", "a"],
                                                 "sha256": record["sha256"]}))
    assert set(OutputFolder(tmp_path, "r.json").contents("--out").written) == {"a", "r.json"}
