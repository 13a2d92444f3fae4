"""`transcli evaluate`: score translations, or translate and score, with sacreBLEU.

With `--model` it first translates `--src` through the same function as
`transcli translate`; every check on the inputs runs before that (slow) step.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Optional

import typer

from transcli.cli.options import CheckpointOpt, Device, SetOpt, device_option, with_decoding
from transcli.config.loading import Override
from transcli.inference.bleu import check_line_counts, format_text, read_scored_lines, score
from transcli.system.errors import UserError
from transcli.system.files import check_output, write_text_output
from transcli.system.text import read_text_file


@with_decoding
def evaluate(
    *,
    ref: list[Path] = typer.Option(..., "--ref", "-r", help="Reference file (repeatable)."),
    hyp: Optional[Path] = typer.Option(None, help="Hypotheses to score (instead of --model)."),
    model: Optional[Path] = typer.Option(None, "--model", "-m", help="Run dir to translate with."),
    src: Optional[Path] = typer.Option(None, help="Source file to translate (with --model)."),
    checkpoint: str = CheckpointOpt,
    hyp_out: Optional[Path] = typer.Option(None, help="Write the scored hypotheses here."),
    json_out: bool = typer.Option(False, "--json", help="Print one JSON object."),
    decoding: list[tuple[str, Any]],
    device: Device = device_option(),
    sets: Optional[list[str]] = SetOpt,
) -> None:
    """Score translations with sacreBLEU (BLEU, chrF and TER, with their signatures),
    translating --src first with --model.

    With --model: a progress bar on stderr, and translate's decoding options.

    Examples:

    \b
      transcli evaluate --hyp news.es --ref news.ref.es
      transcli evaluate -m run --src test.en --ref test.es --hyp-out test.hyp.es --json
    """
    evaluate_cli(ref=ref, hyp=hyp, model=model, src=src, checkpoint=checkpoint,
                 hyp_out=hyp_out, as_json=json_out, device=device or "auto",
                 overrides=[*decoding, *(sets or [])])


def evaluate_cli(ref: list[Path], hyp: Optional[Path], model: Optional[Path],
                 src: Optional[Path], checkpoint: str, hyp_out: Optional[Path], as_json: bool,
                 device: str, overrides: Optional[list[Override]] = None) -> None:
    """Score `hyp`, or the translation of `src` by `model` (with `decode.*` `overrides`,
    as `translate` takes them), against every `ref`; print the scores as text or JSON.
    Every check on the inputs runs before the (slow) translation starts."""
    overrides = list(overrides or [])
    _check_options(hyp, model, src, overrides, hyp_out)
    references = [read_scored_lines(path) for path in ref]
    if model is None:
        assert hyp is not None
        hypotheses = read_scored_lines(hyp)
        check_line_counts(hyp, len(hypotheses), ref, references)
        inputs: dict[str, Any] = {"hyp": str(hyp)}
    else:
        assert src is not None
        from transcli.rundir.layout import run_inputs

        sources = read_text_file(src)
        check_line_counts(src, len(sources), ref, references)
        outputs_inputs = [*ref, src, *run_inputs(model, checkpoint)]
        if hyp_out is not None:
            check_output(hyp_out, outputs_inputs, "hypotheses")
        translations = _translate(model, checkpoint, sources, device, overrides)
        if hyp_out is not None:
            write_text_output(hyp_out, "".join(line + "\n" for line in translations),
                              outputs_inputs, "hypotheses")
        hypotheses = [line.rstrip() for line in translations]  # as sacrebleu reads --hyp-out
        inputs = {"model": str(model), "checkpoint": checkpoint, "src": str(src),
                  "hyp": None if hyp_out is None else str(hyp_out)}
    scores = score(hypotheses, references)
    if as_json:
        print(json.dumps({**scores.to_dict(), **inputs, "refs": [str(p) for p in ref]},
                         ensure_ascii=False, indent=1))
    else:
        print(format_text(scores))


def _check_options(hyp: Optional[Path], model: Optional[Path], src: Optional[Path],
                   overrides: list[Override], hyp_out: Optional[Path]) -> None:
    """Exactly one way of getting hypotheses, and no option that would be ignored."""
    if hyp is not None and model is not None:
        raise UserError("give either --hyp FILE or --model RUN_DIR, not both")
    if hyp is None and model is None:
        raise UserError("give --hyp FILE to score, or --model RUN_DIR --src FILE "
                        "to translate and score")
    if model is not None and src is None:
        raise UserError("--model needs --src FILE, the English text to translate")
    if model is None:
        for option, value in (("--src", src), ("--hyp-out", hyp_out)):
            if value is not None:
                raise UserError(f"{option} only applies with --model RUN_DIR")
        if overrides:
            raise UserError(f"{_option_name(overrides[0])} only applies with --model RUN_DIR")


def _option_name(override: Override) -> str:
    """The flag that gives an override: ("decode.beam_size", 5) or "decode.beam_size=5"
    -> --beam-size."""
    key, value = (override.partition("=")[::2] if isinstance(override, str)
                  else (override[0], str(override[1])))
    if key == "decode.quantize" and value == "int8":
        return "--int8"
    if not key.startswith("decode."):
        return f"--set {key}={value}"
    return "--" + key.removeprefix("decode.").replace("_", "-")


def _translate(model: Path, checkpoint: str, sources: list[str], device: str,
               overrides: list[Override]) -> list[str]:
    """Translate with the code `transcli translate` uses; only the 1-best is scored."""
    from transcli.inference.translator import translate_lines

    return translate_lines(model, checkpoint, sources, [("decode.n_best", 1), *overrides],
                           device, progress=True)
