"""Options several commands share, each defined once.

An option whose default is a config key (`setting`) sets that key when given and
leaves the config's value otherwise. The decoding options of `translate`,
`evaluate`, `explain` and `serve` are one group (`with_decoding`): a command names a
`decoding` parameter and receives the `decode.*` overrides of the flags given.
"""

from __future__ import annotations

import functools
import inspect
from typing import Any, Callable, Literal, Optional

import typer

from transcli.system.devices import DEVICES

Device = Optional[Literal[DEVICES]]  # type: ignore[valid-type]


def setting(key: str, help: str, *names: str) -> Any:
    """An option that sets config key `key`; --help shows that key as its default."""
    return typer.Option(None, *names, help=help, show_default=key)


def device_option(default: str = "auto") -> Any:
    """--device, alike on every command (train's default is its config key)."""
    return typer.Option(None, "--device", show_default=default,
                        help="Where to run: auto (CUDA when present), cpu or cuda.")


def given(flags: dict[str, Any]) -> list[tuple[str, Any]]:
    """Typed (key, value) overrides for the flags that were given."""
    return [(key, value) for key, value in flags.items() if value is not None]


ConfigOpt = typer.Option(None, "--config", "-c", help="YAML config file (defaults when omitted).")
SetOpt = typer.Option(None, "--set", metavar="<section.key=value>",
                      help="Override any setting (repeatable).")


def _decode_keys(sets: Optional[list[str]]) -> Optional[list[str]]:
    """Commands that translate with a trained run read only its decode settings: a
    train.* or data.* key given to them would change nothing, so it is refused."""
    for item in sets or []:
        if not item.strip().startswith("decode."):
            raise typer.BadParameter(f"'{item}': only decode.KEY=VALUE settings apply when "
                                     f"translating with a trained run")
    return sets


DecodeSetOpt = typer.Option(None, "--set", metavar="<decode.key=value>",
                            callback=_decode_keys,
                            help="Override a decode setting (repeatable).")
ModelOpt = typer.Option(..., "--model", "-m", help="Run directory written by `train`.")
CheckpointOpt = typer.Option(
    "best", help="best, last, avg, a step number, or a checkpoint path (without best: the "
    "newest there is, and a line says so).")
ConfidenceOpt = typer.Option(
    False, "--confidence", help="Write each line's confidence (0-1, how far to trust it) "
    "after a tab: translation<TAB>confidence.")
MinConfidenceOpt = typer.Option(
    None, "--min-confidence", min=0.0, max=1.0, help="A line (or a document's unit) whose "
    "confidence is below this is written as its source, or marked (--below).")
BelowOpt = typer.Option(
    "source", "--below", help="What --min-confidence does to a line below it: source "
    "(written untranslated) or mark (its translation after [?] ).")
ForceOpt = typer.Option(
    False, "--force", help="Write into a non-empty output directory: replaces the files this "
    "command wrote there, never others.")

# ----------------------------------------------------------------------------- decoding


MAX_LEN = "Max target tokens = a * source tokens + b (capped by the model)."


def _decoding_parameters() -> list[inspect.Parameter]:
    """The shared decoding options, as the parameters Typer reads."""
    def option(name: str, annotation: Any, default: Any) -> inspect.Parameter:
        return inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=default,
                                 annotation=annotation)

    return [
        option("greedy", bool, typer.Option(
            False, "--greedy",
            help="Greedy search (same output as --beam-size 1 without --word-reward).")),
        option("strategy", Optional[str], setting(
            "decode.strategy", "beam, greedy or sample (decode.temperature, top_k, top_p, seed).")),
        option("beam_size", Optional[int], setting(
            "decode.beam_size", "Beam width (implies --strategy beam).")),
        option("length_penalty", Optional[float], setting(
            "decode.length_penalty",
            "GNMT length penalty alpha: score = log-prob / ((5 + len) / 6) ** alpha.")),
        option("word_reward", Optional[float], setting(
            "decode.word_reward",
            "Added to a hypothesis' score per target token: > 0 counters beam search's short "
            "translations (torch engine).")),
        option("word_reward_bound", Optional[float], setting(
            "decode.word_reward_bound",
            "The word reward counts at most this x source tokens (+ EOS) target tokens; "
            "0: no bound.")),
        option("max_len_a", Optional[float], setting("decode.max_len_a", MAX_LEN)),
        option("max_len_b", Optional[int], setting("decode.max_len_b", MAX_LEN)),
        option("batch_tokens", Optional[int], setting(
            "decode.batch_tokens", "Source tokens per batch, padding included, before beams.")),
        option("split_sentences", bool, typer.Option(
            False, "--split-sentences",
            help="The same as --split (decode.split_sentences).")),
        option("split", Optional[bool], typer.Option(
            None, "--split/--no-split", show_default="decode.split",
            help="Translate a line of several sentences one sentence at a time.")),
        option("protect", Optional[bool], typer.Option(
            None, "--protect/--no-protect", show_default="decode.protect",
            help="Copy URLs, e-mails, numbers, code, placeholders, emoji, other scripts and "
            "characters the vocabulary lacks unchanged instead of translating them.")),
        option("truecase", Optional[bool], typer.Option(
            None, "--truecase/--no-truecase", show_default="decode.truecase",
            help="Translate ALL-CAPS and Title Case lines in the case the model knows and "
            "give them back in theirs.")),
        option("no_repeat_ngram", Optional[int], setting(
            "decode.no_repeat_ngram", "Never repeat an n-gram of this many tokens (0: off).")),
        option("retry_repeats", Optional[bool], typer.Option(
            None, "--retry-repeats/--no-retry-repeats", show_default="decode.retry_repeats",
            help="Search a translation that loops again, blocking repeated n-grams.")),
        option("glossary", Optional[str], typer.Option(
            None, "--glossary", metavar="<path>", show_default="decode.glossary",
            help="TSV of english<TAB>spanish terms to use in the translation "
            "(docs/INFERENCE.md, Glossaries).")),
        option("engine", Optional[str], typer.Option(
            None, help="torch, or ct2: CTranslate2 (exported into the run dir on first use).",
            show_default="decode.engine")),
        option("int8", bool, typer.Option(
            False, "--int8", help="int8 weights (decode.quantize=int8).")),
    ]


DECODING = _decoding_parameters()


def decode_overrides(greedy: bool = False, strategy: Optional[str] = None,
                     beam_size: Optional[int] = None, split_sentences: bool = False,
                     int8: bool = False, **keys: Any) -> list[tuple[str, Any]]:
    """Typed `decode.*` overrides for the decoding flags given; `keys` are flags named
    after their decode key (None: not given)."""
    if greedy or strategy is None and beam_size is not None:
        strategy = "greedy" if greedy else "beam"
    return given({"decode.strategy": strategy, "decode.beam_size": beam_size,
                  "decode.split_sentences": split_sentences or None,
                  "decode.quantize": "int8" if int8 else None,
                  **{f"decode.{key}": value for key, value in keys.items()}})


def with_decoding(command: Callable[..., Any]) -> Callable[..., Any]:
    """The command with the decoding options in place of its `decoding` parameter, which
    receives their overrides (a list of (decode key, value))."""
    signature = inspect.signature(command, eval_str=True)
    names = [p.name for p in DECODING]
    parameters: list[inspect.Parameter] = []
    for parameter in signature.parameters.values():
        if parameter.name == "decoding":
            parameters += DECODING
        else:
            parameters.append(parameter.replace(kind=inspect.Parameter.KEYWORD_ONLY))

    @functools.wraps(command)
    def wrapper(**options: Any) -> Any:
        flags = {name: options.pop(name) for name in names}
        return command(**options, decoding=decode_overrides(**flags))

    wrapper.__signature__ = signature.replace(parameters=parameters)  # type: ignore[attr-defined]
    wrapper.__annotations__ = {p.name: p.annotation for p in parameters}
    return wrapper


