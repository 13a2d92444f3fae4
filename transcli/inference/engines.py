"""What runs the search under `Translator`: transcli's own model, or CTranslate2.

An engine takes one batch of encoded sources (ids + EOS), each sentence's maximum
target length (EOS included) and index in the input, and the search settings, and returns
each sentence's hypotheses, best first; it holds no settings of its own. Everything
else -- encoding,
token-budget batches, input order, empty lines, n-best output -- is `Translator`'s, the
same for every engine.

- `TorchEngine`: the strategy `decode.strategy` names (`search.SEARCHES`) on the
  torch model (with int8 weights for `decode.quantize: int8`, `quantize.quantize_int8`).
- `Ct2Engine`: `ctranslate2.Translator.translate_batch` on the sentencepiece pieces
  of a CTranslate2 export (`export.ct2`), made on first use and cached in the run dir
  (`cached_ct2_export`). Greedy search gives transcli's output; beam search and
  sampling are CTranslate2's own (see `ct2_options`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional, Protocol, Sequence

import torch
from torch import Tensor

from transcli.config.schema import DecodeConfig
from transcli.data.tokenizer import Tokenizer
from transcli.inference.alignment import cross_attention, eval_mode
from transcli.inference.constrained import Terms, constrained_beam_search
from transcli.inference.search import Hypothesis, hypothesis_score, search
from transcli.model.transformer import Transformer
from transcli.model.vocab import EOS_ID, PAD_ID
from transcli.system.errors import UserError, first_line


class Engine(Protocol):
    max_positions: int  # longest source (EOS included) and target the model takes

    def search(self, sources: list[list[int]], max_len: list[int], indices: Sequence[int],
               decode: DecodeConfig,
               constraints: Optional[list[Terms]] = None) -> list[list[Hypothesis]]:
        """`constraints`, when given: each sentence's glossary terms, which its
        hypotheses must hold (`constrained`; the torch engine's only)."""

    def attention(self, sources: list[list[int]], targets: list[list[int]]) -> list[Tensor]:
        """Per (source ids + EOS, target ids) pair: the encoder-decoder attention of the
        target forced through the decoder, [len(target) (+1), len(source)], a row per
        target piece (`alignment.Alignment.of` reads it)."""


class TorchEngine:
    """The torch model and the registered search strategies."""

    def __init__(self, model: Transformer, device: str | torch.device | None = None,
                 head: Optional[tuple[int, int]] = None):
        """`head`: the (decoder layer, head) trained to align (`config.schema.guided_head`),
        whose weights alone are the attention; without one, every head's averaged."""
        self.model = model
        self.device = torch.device(device) if device else next(model.parameters()).device
        self.max_positions = model.cfg.max_positions
        self.head = head

    @torch.inference_mode()
    def search(self, sources: list[list[int]], max_len: list[int], indices: Sequence[int],
               decode: DecodeConfig,
               constraints: Optional[list[Terms]] = None) -> list[list[Hypothesis]]:
        """`decode.strategy`'s search; with `constraints`, constrained beam search of
        `decode.beam_size` beams whatever the strategy (one path cannot choose where a
        term goes)."""
        src = torch.full((len(sources), max(map(len, sources))), PAD_ID, dtype=torch.long)
        for row, ids in enumerate(sources):
            src[row, :len(ids)] = torch.tensor(ids)
        src = src.to(self.device)
        with eval_mode(self.model):
            if constraints is not None:
                return constrained_beam_search(
                    self.model, src, constraints, decode.beam_size, decode.length_penalty,
                    max_len, decode.n_best, decode.word_reward, decode.word_reward_bound,
                    decode.no_repeat_ngram)
            return search(self.model, src, max_len, decode, indices)

    def attention(self, sources: list[list[int]], targets: list[list[int]]) -> list[Tensor]:
        """The aligning head's weights (`head`), else every layer's and head's averaged
        (as `explain` draws them)."""
        weights = (cross_attention(self.model, source, target + [EOS_ID])
                   for source, target in zip(sources, targets))
        return [found[self.head] if self.head else found.mean(dim=(0, 1)) for found in weights]


class Ct2Engine:
    """A CTranslate2 model directory, fed sentencepiece pieces."""

    def __init__(self, model_dir: Path, tokenizer: Tokenizer, max_positions: int,
                 device: str | torch.device = "cpu", compute_type: str = "default"):
        """`compute_type`: CTranslate2's arithmetic (`device_defaults.ct2_compute_type`)."""
        from transcli.system.extras import require

        ctranslate2 = require("ctranslate2", "ct2")
        self.ctranslate2 = ctranslate2
        self.max_positions = max_positions
        self.sp = tokenizer.sp
        try:
            self.translator = ctranslate2.Translator(
                str(model_dir), device=torch.device(device).type, compute_type=compute_type,
                intra_threads=torch.get_num_threads())
        except (RuntimeError, ValueError) as exc:  # e.g. a CTranslate2 build without CUDA
            raise UserError(f"{model_dir}: CTranslate2 cannot load the model "
                            f"({first_line(exc)})") from None

    def search(self, sources: list[list[int]], max_len: list[int], indices: Sequence[int],
               decode: DecodeConfig,
               constraints: Optional[list[Terms]] = None) -> list[list[Hypothesis]]:
        if constraints is not None:  # `DecodeConfig.validate` refuses glossary_method constrain
            raise ValueError("CTranslate2 has no constrained search")
        # CTranslate2 appends </s> itself (the export sets add_source_eos).
        pieces = [[self.sp.IdToPiece(i) for i in ids[:-1]] for ids in sources]
        results = self._translate(pieces, max(max_len), decode)
        # One length limit per call: sentences whose output ran past their own limit
        # are translated again with it (rare: the limit is a * length + b).
        over = [i for i, (result, limit) in enumerate(zip(results, max_len))
                if any(len(h) > limit for h in result.hypotheses)]
        for limit in sorted({max_len[i] for i in over}):
            group = [i for i in over if max_len[i] == limit]
            for i, result in zip(group, self._translate([pieces[i] for i in group], limit,
                                                        decode)):
                results[i] = result
        return [self._hypotheses(result, decode.length_penalty) for result in results]

    def attention(self, sources: list[list[int]], targets: list[list[int]]) -> list[Tensor]:
        """CTranslate2's own alignment weights (those of the heads its export names), the
        target given as a prefix to decode from."""
        prefixes = [[self.sp.IdToPiece(i) for i in ids] for ids in targets]
        results = self.translator.translate_batch(
            [[self.sp.IdToPiece(i) for i in ids[:-1]] for ids in sources],
            target_prefix=prefixes, return_attention=True, beam_size=1,
            max_decoding_length=max(map(len, targets)) + 1, max_input_length=0)
        return [torch.tensor(result.attention[0]) for result in results]

    def _translate(self, pieces: list[list[str]], max_len: int, decode: DecodeConfig
                   ) -> list[Any]:
        if decode.strategy == "sample":
            self.ctranslate2.set_random_seed(decode.seed)
        return self.translator.translate_batch(pieces, **ct2_options(decode, max_len))

    def _hypotheses(self, result: Any, alpha: float) -> list[Hypothesis]:
        """transcli's hypotheses, scored as transcli scores them (length penalty `alpha`),
        best first."""
        found = []
        for pieces, ct2_score in zip(result.hypotheses, result.scores):
            ids = [self.sp.PieceToId(piece) for piece in pieces]
            eos = bool(ids) and ids[-1] == EOS_ID
            # CTranslate2 divides by length ** alpha (EOS counted): undo it, then GNMT.
            logprob = ct2_score * len(ids) ** alpha
            found.append(Hypothesis(ids[:-1] if eos else ids, logprob,
                                    hypothesis_score(logprob, len(ids), alpha), eos))
        return sorted(found, key=lambda h: (h.eos, h.score), reverse=True)


def ct2_options(decode: DecodeConfig, max_len: int) -> dict[str, Any]:
    """`translate_batch` options for transcli's decode settings, as close as CTranslate2
    allows. Where it differs:

    - length penalty: CTranslate2 ranks finished beams by log-prob / length ** alpha,
      transcli by GNMT's log-prob / ((5 + length) / 6) ** alpha; the same alpha is
      passed (both grow with alpha; alpha = 0 is the same raw log-prob) and the
      returned hypotheses are re-scored the GNMT way;
    - beam stopping: CTranslate2 stops a sentence once `beam_size` hypotheses have
      finished (`patience` 1), transcli once no live beam can beat the finished ones,
      so beam results may differ (the tests report the agreement rate);
    - length limit: one per call (`Ct2Engine.search` re-runs the few sentences that
      ran past their own);
    - sampling: CTranslate2's own generator, seeded once per process (its worker
      thread's stream, which `set_random_seed` seeds on first use), so a line's sample
      depends on every line searched before it in that process (transcli's torch
      sampler seeds each line).
    """
    options: dict[str, Any] = dict(
        max_decoding_length=max_len, min_decoding_length=0, max_input_length=0,
        return_scores=True, return_end_token=True, num_hypotheses=decode.n_best,
        length_penalty=decode.length_penalty, beam_size=1,
        no_repeat_ngram_size=decode.no_repeat_ngram)
    if decode.strategy == "beam":
        options["beam_size"] = decode.beam_size
    elif decode.strategy == "sample":
        options.update(sampling_topk=decode.top_k, sampling_topp=decode.top_p,
                       sampling_temperature=decode.temperature)
    return options
