"""What enters from outside, each fault made for real: folders holding a user's files,
lines and files too big to hold, bytes and strings that are not UTF-8, locales, configs
nested beyond reason, corrupt compressed files, damaged or unwritable caches, a deleted
current directory. Never a traceback, never a user's file replaced, memory bounded."""

from __future__ import annotations

import gzip
import json
import os
import shutil
import subprocess
import sys
import tracemalloc
from pathlib import Path

import pytest
from helpers import PAIRS, ROOT, TINY_CONFIG
from helpers.cli import one_error_line, run_cli

from transcli.config.schema import DataConfig, SourceConfig
from transcli.data.sources import TmxSource, _UnitBound
from transcli.system.errors import UserError

ENGLISH = [en for en, _ in PAIRS]
SPANISH = [es for _, es in PAIRS]


# Runs a command as its only child and prints the child's peak RSS (KiB) on stderr last.
MEASURE = ("import resource, subprocess, sys\n"
           "status = subprocess.run(sys.argv[1:]).returncode\n"
           "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, file=sys.stderr)\n"
           "sys.exit(status)\n")


def peak_rss_mib(args: list[str]) -> tuple[subprocess.CompletedProcess, float]:
    """Run `python -m transcli ARGS`; its result and its own peak resident memory."""
    proc = subprocess.run([sys.executable, "-c", MEASURE, sys.executable, "-m", "transcli",
                           *args], capture_output=True, cwd=ROOT, timeout=300,
                          env={**os.environ, "OMP_NUM_THREADS": "1"})
    err, _, peak = proc.stderr.rstrip().rpartition(b"\n")
    return subprocess.CompletedProcess(args, proc.returncode, proc.stdout, err), int(peak) / 1024


# ----------------------------------------------------------------------------- folders


@pytest.mark.slow
def test_an_attention_folder_never_loses_a_users_file(run_dir: Path, tmp_path: Path) -> None:
    folder = tmp_path / "pictures"
    folder.mkdir()
    (folder / "notes.txt").write_text("mine")
    args = ["translate", "-m", run_dir, "--checkpoint", "last", "--attention", folder]
    assert "not empty; pass --force" in one_error_line(run_cli(*args, stdin=ENGLISH[0]))
    first = run_cli(*args, "--force", stdin="\n".join(ENGLISH[:2]) + "\n")
    assert first.returncode == 0, first.stderr
    assert (folder / "line-00002.png").is_file() and (folder / "notes.txt").read_text() == "mine"
    again = run_cli(*args, "--force", stdin=ENGLISH[0] + "\n")  # one line: line 2's go
    assert again.returncode == 0, again.stderr
    assert not (folder / "line-00002.png").exists() and (folder / "line-00001.png").is_file()
    assert (folder / "notes.txt").read_text() == "mine"
    (folder / "line-00001.txt").unlink()
    (folder / "line-00001.txt").write_text("mine too")  # a user's file by a name we use
    refused = one_error_line(run_cli(*args, "--force", stdin=ENGLISH[0] + "\n"))
    assert "line-00001.txt: exists and was not written by transcli" in refused
    assert (folder / "line-00001.txt").read_text() == "mine too"


@pytest.mark.slow
def test_explain_into_its_default_folder_twice(run_dir: Path, tmp_path: Path) -> None:
    args = ["explain", "-m", run_dir, "--checkpoint", "last", ENGLISH[0]]
    assert run_cli(*args, cwd=tmp_path).returncode == 0
    assert "attention: not empty" in one_error_line(run_cli(*args, cwd=tmp_path))
    assert run_cli(*args, "--force", cwd=tmp_path).returncode == 0


def test_a_file_in_the_way_of_an_output_is_named(run_dir: Path, tmp_path: Path) -> None:
    blocker = tmp_path / "afile"
    blocker.write_text("mine")
    for args in (["export", "-m", run_dir, "--checkpoint", "last", "--format", "ct2",
                  "--out", blocker / "sub"],
                 ["train", "-c", TINY_CONFIG, "--data", tmp_path, "--out", blocker / "run"]):
        line = one_error_line(run_cli(*args))
        assert f"{blocker}: is a file, so {blocker}/" in line
    assert blocker.read_text() == "mine"


# ----------------------------------------------------------------------------- sizes


@pytest.mark.slow
def test_one_huge_line_is_cut_before_sentencepiece(run_dir: Path, tmp_path: Path) -> None:
    """A 32 MB line of words before a real one: translated within a memory bound that
    does not grow with the line (sentencepiece took ~50x the line). It has no sentence end,
    so it stays one sentence, too long to translate in pieces: written as its source, and
    said."""
    source = tmp_path / "huge.en"
    with open(source, "wb") as handle:
        handle.write(b"the dog " * (4 << 20))
        handle.write(f"\n{ENGLISH[0]}\n".encode())
    result, peak = peak_rss_mib(["translate", "-m", str(run_dir), "--checkpoint", "last",
                                 "-i", str(source), "--greedy"])
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.decode().split("\n")[1] == SPANISH[0]
    # as read: a line is cut at MAX_LINE_BYTES, its rest read past (system.text)
    assert result.stdout.decode().split("\n")[0] == ("the dog " * (4 << 20))[:4 << 20].rstrip()
    assert b"huge.en: line 1 is longer than 4 MiB: only its first 4 MiB were read" \
        in result.stderr
    assert b"1 cut by the length limit" in result.stderr
    assert b"0 translated again another way" in result.stderr
    assert b"1 written as their source" in result.stderr
    assert peak < 1024, f"peak RSS {peak:.0f} MiB"


def test_prepare_drops_a_line_too_long_to_read_whole(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    from transcli.data.sources import FilePairSource
    from transcli.system import text

    monkeypatch.setattr(text, "MAX_LINE_BYTES", 64)
    src, tgt = tmp_path / "a.en", tmp_path / "a.es"
    src.write_text("short\n" + "x" * 500 + "\nalso short\n")
    tgt.write_text("corto\nlargo\ntambién corto\n")
    source = FilePairSource(SourceConfig(src_file=str(src), tgt_file=str(tgt)), DataConfig())
    assert list(source) == [("short", "corto"), ("also short", "también corto")]
    assert source.skipped == {"too_long_chars": 1}


def tmx(units: int, body: bool) -> bytes:
    unit = ('<tu><tuv xml:lang="en"><seg>Line {i}.</seg></tuv>'
            '<tuv xml:lang="es"><seg>Línea {i}.</seg></tuv></tu>\n')
    inner = "".join(unit.format(i=i) for i in range(units))
    inner = f"<body>{inner}</body>" if body else inner
    return f'<?xml version="1.0"?>\n<tmx version="1.4"><header/>{inner}</tmx>\n'.encode()


@pytest.mark.parametrize("body", [True, False])
def test_tmx_memory_stays_one_unit_with_or_without_body(tmp_path: Path, body: bool) -> None:
    path = tmp_path / "memory.tmx"
    path.write_bytes(tmx(30_000, body))
    source = TmxSource(SourceConfig(file=str(path)), DataConfig())
    tracemalloc.start()
    try:
        count = sum(1 for _ in source)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert count == 30_000
    assert peak < 8 << 20, f"{peak / 2**20:.1f} MiB traced"  # ~60 MiB when units were kept


def test_a_tmx_unit_over_the_bound_is_one_line(tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_UnitBound, "MAX_UNIT_BYTES", 1 << 20)
    path = tmp_path / "memory.tmx"
    path.write_bytes(tmx(3, True).replace(b"Line 1.", b"Line " + b"y" * (2 << 20)))
    with pytest.raises(UserError, match="memory.tmx: a translation unit runs over 1 MiB"):
        list(TmxSource(SourceConfig(file=str(path)), DataConfig()))


# ----------------------------------------------------------------------------- encodings


def test_a_lone_surrogate_in_json_lines_is_invalid_text(tmp_path: Path) -> None:
    data = tmp_path / "pairs.jsonl"
    lines = [json.dumps({"translation": {"en": en, "es": es}}) for en, es in PAIRS * 3]
    lines.insert(2, '{"translation": {"en": "bad \\ud800 half", "es": "malo"}}')
    data.write_text("\n".join(lines) + "\n")
    base = ["prepare", "-c", TINY_CONFIG, "--dataset", data, "--set", "data.valid_size=2",
            "--set", "data.test_size=2"]
    assert "half of a UTF-16 pair" in one_error_line(run_cli(*base, "--out", tmp_path / "a"))
    kept = run_cli(*base, "--out", tmp_path / "b", "--skip-invalid")
    assert kept.returncode == 0, kept.stderr
    manifest = json.loads((tmp_path / "b" / "manifest.json").read_text())
    assert manifest["counts"]["train"]["dropped"]["invalid_utf8"] == 1


def test_arguments_that_are_not_utf8_are_refused_naming_them(run_dir: Path,
                                                             tmp_path: Path) -> None:
    python = os.fsencode(sys.executable)
    for args, position in (([b"explain", b"-m", os.fsencode(run_dir), b"caf\xe9"], 4),
                           ([b"info", b"/tmp/run-\xff"], 2)):
        proc = subprocess.run([python, b"-m", b"transcli", *args], capture_output=True,
                              cwd=tmp_path, env={**os.environ, "OMP_NUM_THREADS": "1"})
        line = one_error_line(subprocess.CompletedProcess(args, proc.returncode,
                                                          proc.stdout.decode(),
                                                          proc.stderr.decode()))
        assert f"argument {position} " in line and "is not valid UTF-8" in line


@pytest.mark.slow
def test_a_c_locale_without_utf8_mode_still_reads_and_writes_utf8(run_dir: Path,
                                                                 tmp_path: Path) -> None:
    env = {"LC_ALL": "C", "LANG": "C", "PYTHONUTF8": "0", "PYTHONIOENCODING": ""}
    result = run_cli("explain", "-m", run_dir, "--checkpoint", "last", ENGLISH[0] + " é",
                     "--out", tmp_path / "pictures", env=env, text=False)
    assert result.returncode == 0, result.stderr
    assert SPANISH[0].encode() in result.stdout and "é".encode() in result.stdout
    translated = run_cli("translate", "-m", run_dir, "--checkpoint", "last", env=env,
                         stdin=(ENGLISH[1] + "\n").encode(), text=False)
    assert translated.stdout.decode() == SPANISH[1] + "\n"


# ----------------------------------------------------------------------------- configs


def test_a_config_nested_thousands_deep_is_one_line(tmp_path: Path) -> None:
    deep = tmp_path / "deep.yaml"
    deep.write_text("model: " + "[" * 5000 + "]" * 5000 + "\n")
    for args in (["config", "-c", deep], ["train", "-c", deep, "--data", tmp_path,
                                          "--out", tmp_path / "run"]):
        assert "nested deeper than 32 levels" in one_error_line(run_cli(*args))
    assert "nested deeper" in one_error_line(run_cli("config", "--set",
                                                     "train.seed=" + "[" * 100))
    big = tmp_path / "big.yaml"
    with open(big, "wb") as handle:
        handle.truncate(64 << 20)
    assert "not a config file" in one_error_line(run_cli("config", "-c", big))


# ----------------------------------------------------------------------------- compressed


def test_every_command_reads_compressed_text_by_one_rule(run_dir: Path, tmp_path: Path) -> None:
    source, target = tmp_path / "in.en.gz", tmp_path / "in.es.gz"
    source.write_bytes(gzip.compress("\n".join(ENGLISH[:3]).encode() + b"\n"))
    target.write_bytes(gzip.compress("\n".join(SPANISH[:3]).encode() + b"\n"))
    translated = run_cli("translate", "-m", run_dir, "--checkpoint", "last", "-i", source)
    assert translated.stdout.splitlines() == SPANISH[:3], translated.stderr
    scored = run_cli("score", "-m", run_dir, "--checkpoint", "last", "--src", source,
                     "--tgt", target)
    assert [row.split("\t")[0] for row in scored.stdout.splitlines()] == ["0", "1", "2"]
    evaluated = run_cli("evaluate", "--hyp", target, "--ref", target, "--json")
    assert json.loads(evaluated.stdout)["bleu"] == pytest.approx(100.0)
    broken = tmp_path / "broken.es.gz"
    broken.write_bytes(target.read_bytes()[:20])
    for args in (["evaluate", "--hyp", broken, "--ref", target],
                 ["translate", "-m", run_dir, "--checkpoint", "last", "-i", broken],
                 ["score", "-m", run_dir, "--checkpoint", "last", "--src", broken,
                  "--tgt", target]):
        assert "broken.es.gz: cannot read" in one_error_line(run_cli(*args))


# ----------------------------------------------------------------------------- caches


def read_only_mount(folder: Path) -> list[str]:
    """A shell prefix that runs a command with `folder` mounted read-only (in a mount
    namespace of its own); skips the test where this machine does not allow it."""
    prefix = ["unshare", "-m", "sh", "-c",
              'mount --bind "$0" "$0" && mount -o remount,bind,ro "$0" && exec "$@"',
              str(folder)]
    probe = subprocess.run([*prefix, "sh", "-c", f'! touch "{folder}/probe" 2>/dev/null'],
                           capture_output=True)
    if shutil.which("unshare") is None or probe.returncode != 0:
        pytest.skip("read-only bind mounts are not allowed here")
    return prefix


@pytest.mark.slow
def test_ct2_on_a_read_only_run_dir_caches_in_the_user_cache(run_dir: Path,
                                                            tmp_path: Path) -> None:
    run = Path(shutil.copytree(run_dir, tmp_path / "run"))
    prefix = read_only_mount(run)
    cache = tmp_path / "cache"
    command = [*prefix, sys.executable, "-m", "transcli", "translate", "-m", str(run),
               "--checkpoint", "last", "--engine", "ct2", "--greedy"]
    env = {**os.environ, "XDG_CACHE_HOME": str(cache), "OMP_NUM_THREADS": "1"}
    for _ in range(2):  # made, then found again
        proc = subprocess.run(command, input=ENGLISH[0] + "\n", capture_output=True,
                              text=True, env=env, cwd=ROOT)
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout == SPANISH[0] + "\n"
    exports = list((cache / "transcli" / "ct2").iterdir())
    assert len(exports) == 1 and (exports[0] / "model.bin").is_file()
    assert not any(p.name.startswith("ct2-") for p in run.iterdir())
    env["XDG_CACHE_HOME"] = "/proc/no-cache-here"
    shutil.rmtree(cache)
    proc = subprocess.run(command, input=ENGLISH[0] + "\n", capture_output=True, text=True,
                          env=env, cwd=ROOT)
    line = one_error_line(subprocess.CompletedProcess(command, proc.returncode, proc.stdout,
                                                      proc.stderr))
    assert "is read-only" in line and "XDG_CACHE_HOME" in line


# ----------------------------------------------------------------------------- the process


def test_a_deleted_current_directory_is_one_line(run_dir: Path, tmp_path: Path) -> None:
    gone = tmp_path / "gone"
    gone.mkdir()
    proc = subprocess.Popen([sys.executable, "-m", "transcli", "info", str(run_dir)],
                            cwd=gone, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONPATH": str(ROOT)},
                            preexec_fn=lambda: os.rmdir(gone))
    out, err = proc.communicate(timeout=60)
    line = one_error_line(subprocess.CompletedProcess([], proc.returncode, out, err))
    assert "the current directory no longer exists" in line



# ----------------------------------------------------------------------------- red team


def test_a_bad_flag_or_value_is_one_line_with_exit_2(run_dir: Path) -> None:
    for args, said in ((["translate", "-m", run_dir, "--beam-size", "abc"], "--beam-size"),
                       (["translate", "--nope"], "No such option: --nope"),
                       (["nosuch"], "No such command 'nosuch'"),
                       (["train", "--data", "x"], "Missing option '--out'")):
        result = run_cli(*args)
        assert result.returncode == 2 and "Traceback" not in result.stderr
        line, = result.stderr.strip().splitlines()
        assert line.startswith("transcli: error: ") and said in line and "--help" in line


def test_odd_checkpoint_names_and_paths_are_one_line(run_dir: Path, tmp_path: Path) -> None:
    base = ["translate", "-m", run_dir, "--greedy"]
    for checkpoint, said in (("²", "²: checkpoint not found"), ("9" * 5000, "File name too long"),
                             ("", "--checkpoint is empty"), ("/dev/zero", "not a regular file")):
        assert said in one_error_line(run_cli(*base, "--checkpoint", checkpoint, stdin="Hi.\n"))
    long_name = "a" * 300
    for args in (["info", long_name], ["translate", "-m", run_dir, "--checkpoint", "last",
                                       "-o", tmp_path / long_name]):
        assert "File name too long" in one_error_line(run_cli(*args, stdin="Hi.\n"))


def test_a_fifo_named_like_a_checkpoint_is_passed_over(run_dir: Path, tmp_path: Path) -> None:
    run = Path(shutil.copytree(run_dir, tmp_path / "run"))
    os.mkfifo(run / "checkpoints" / "step-0000999.safetensors")
    result = run_cli("translate", "-m", run, "--checkpoint", "last", stdin=ENGLISH[0] + "\n",
                     timeout=60)
    assert result.returncode == 0 and result.stdout == SPANISH[0] + "\n"
    assert run_cli("info", run, timeout=60).returncode == 0


def test_resume_never_starts_over_weights_it_cannot_continue(prepared: Path,
                                                            tmp_path: Path) -> None:
    from helpers.training import train_cli

    run = tmp_path / "run"
    assert subprocess.run([sys.executable, "-m", "transcli", *train_cli(
        prepared, run, "train.max_steps=10")], capture_output=True, cwd=ROOT).returncode == 0
    for state in (run / "checkpoints").glob("*.state.pt"):
        state.unlink()
    weights = {p.name: p.read_bytes() for p in (run / "checkpoints").iterdir()}
    line = one_error_line(run_cli("train", "--data", prepared, "--out", run, "--resume"))
    assert "nothing to continue from" in line and "--force" in line
    assert {p.name: p.read_bytes() for p in (run / "checkpoints").iterdir()} == weights


def test_resume_without_a_run_or_a_config_starts_nothing(prepared: Path,
                                                         tmp_path: Path) -> None:
    """A mistyped --out with --resume alone would otherwise train the paper's base model."""
    for run in (tmp_path / "typo", tmp_path):  # missing, and a dir without a run
        line = one_error_line(run_cli("train", "--data", prepared, "--out", run, "--resume"))
        assert line == (f"transcli: error: {run}: --resume: no run to continue here (no "
                        f"config.yaml); check --out, or start a run with --config")
    assert not (tmp_path / "typo").exists() and not any(tmp_path.iterdir())


def test_a_lock_file_that_is_a_link_is_refused(prepared: Path, tmp_path: Path) -> None:
    precious = tmp_path / "precious.txt"
    for link in (os.symlink, os.link):
        precious.write_text("precious data")
        run = tmp_path / f"run-{link.__name__}"
        run.mkdir()
        link(precious, run / ".train.lock")
        line = one_error_line(run_cli("train", "-c", TINY_CONFIG, "--data", prepared,
                                      "--out", run, "--max-steps", "1"))
        assert ".train.lock" in line and precious.read_text() == "precious data"


@pytest.mark.parametrize("command, edited", [("prepare", "test.en"), ("export", "config.json")])
def test_force_keeps_a_file_edited_since(command: str, edited: str, run_dir: Path,
                                         tmp_path: Path) -> None:
    """A prepared dir's or an export's file edited after transcli wrote it is the user's:
    --force refuses to replace it, and replaces the files still as written."""
    out = tmp_path / "out"
    args = (["prepare", "-c", TINY_CONFIG, "--src-file", ROOT / "data/sample/train.en",
             "--tgt-file", ROOT / "data/sample/train.es", "--out", out] if command == "prepare"
            else ["export", "-m", run_dir, "--checkpoint", "last", "-f", "ct2", "-o", out])
    assert run_cli(*args).returncode == 0
    with open(out / edited, "a", encoding="utf-8") as handle:
        handle.write("my own line\n")
    mine = (out / edited).read_bytes()
    assert f"{edited}: exists and was not written by transcli {command}" in one_error_line(
        run_cli(*args, "--force"))
    assert (out / edited).read_bytes() == mine
    (out / edited).unlink()
    assert run_cli(*args, "--force").returncode == 0


def test_deeply_nested_markup_in_a_tmx_segment(tmp_path: Path) -> None:
    path = tmp_path / "deep.tmx"
    path.write_bytes(tmx(2, True).replace(b"<seg>Line 1.</seg>", b"<seg>" + b"<hi>" * 20000
                                          + b"Line 1." + b"</hi>" * 20000 + b"</seg>"))
    pairs = list(TmxSource(SourceConfig(file=str(path)), DataConfig()))
    assert pairs[1] == ("Line 1.", "Línea 1.")


def test_a_huge_metrics_log_is_read_line_by_line(run_dir: Path, tmp_path: Path) -> None:
    run = Path(shutil.copytree(run_dir, tmp_path / "run"))
    with open(run / "metrics.jsonl", "wb") as handle:  # 300 MB without a newline
        handle.truncate(300 << 20)
    result, peak = peak_rss_mib(["info", str(run)])
    assert result.returncode == 0, result.stderr
    assert peak < 500, f"peak RSS {peak:.0f} MiB"
