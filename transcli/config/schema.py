"""Typed configuration: one dataclass per YAML section, each with its bounds.

A config has up to four sections (`model`, `data`, `train`, `decode`); each field's
comment is its meaning in `transcli config --list` (`keys.py`). `Config.validate`
checks every value; upper bounds catch values that can only be typos and would
otherwise exhaust the machine (`accum_steps: 1000000000`). Reading YAML and applying
overrides is `loading.py`'s.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import re
from dataclasses import dataclass, field
from typing import Any, Optional

from transcli.config.formats import SourceKeyError, source_format
from transcli.system.devices import DEVICES
from transcli.system.errors import UserError

# Far beyond any sensible setting, far below what would hang or exhaust the machine.
MAX_LAYERS = 1000
MAX_WIDTH = 1 << 16  # d_model, heads
MAX_D_FF = 1 << 20
MAX_POSITIONS = 1 << 16
MAX_BATCH_TOKENS = 10_000_000
MAX_ACCUM_STEPS = 10_000
MAX_BEAM = 1000
MAX_VOCAB = 1_000_000
MAX_SENTENCE = 1_000_000  # data.max_chars, data.max_tokens
MAX_THREADS = 1024
MAX_PAD_MULTIPLE = 128
MAX_BATCH_SHAPES = 256
MAX_LENGTH_PENALTY = 10.0  # GNMT's alpha; the literature uses 0-2
MAX_LENGTH_RATIO = 100.0  # decode.max_len_a: target tokens per source token
MAX_NO_REPEAT = 100  # decode.no_repeat_ngram: n-gram sizes beyond are no constraint
MIN_TEMPERATURE = 1e-3  # below it, exp(log p / T) underflows to nothing
MAX_SAMPLE_ALPHA = 100.0  # sentencepiece's smoothing; it refuses non-finite values
MAX_WEIGHT = 100.0  # a source's or long pairs' weight: copies of a pair per epoch
SEED_LIMIT = 1 << 63  # seeds are in [0, 2^63): numpy and torch both take them

# train.schedule's names, each the function of that name in transcli.training.objective.
SCHEDULES = {
    "noam": "the paper's: after warm-up, decay with the inverse square root of the step",
    "linear": "after warm-up, straight down to final_lr_scale x the peak at the end",
    "cosine": "after warm-up, down to final_lr_scale x the peak along half a cosine",
}


@dataclass
class ModelConfig:
    """The Transformer's shape (Vaswani et al. 2017, table 3)."""

    enc_layers: int = 6  # encoder layers (N in the paper)
    dec_layers: int = 6  # decoder layers
    d_model: int = 512  # width of embeddings and of every layer's input and output
    d_ff: int = 2048  # inner width of the feed-forward networks
    heads: int = 8  # attention heads per layer (d_model must divide by it)
    dropout: float = 0.1  # on embeddings+positions and on every sub-layer output
    attn_dropout: float = 0.0  # on attention weights (the paper uses none)
    act_dropout: float = 0.0  # on the feed-forward network's ReLU output (the paper uses none)
    pre_norm: bool = False  # False = the paper's post-norm: LayerNorm(x + Sublayer(x))
    share_embeddings: bool = True  # one table for source and target (joint vocabulary)
    tie_output: bool = True  # output projection = target embedding matrix
    max_positions: int = 1024  # longest sequence the positional table covers

    def validate(self) -> None:
        for key, limit in (("enc_layers", MAX_LAYERS), ("dec_layers", MAX_LAYERS),
                           ("d_model", MAX_WIDTH), ("d_ff", MAX_D_FF), ("heads", MAX_WIDTH),
                           ("max_positions", MAX_POSITIONS)):
            _within(self, key, 1, limit)
        _require(self.d_model % self.heads == 0, "d_model",
                 f"{self.d_model} is not divisible by heads={self.heads}")
        for key in ("dropout", "attn_dropout", "act_dropout"):
            _require(0.0 <= getattr(self, key) < 1.0, key, "must be in [0, 1)")


@dataclass
class SourceConfig:
    """One parallel corpus. Which keys it may hold, and which format they make it,
    is decided by `transcli.config.formats.FORMATS`, the one table of input formats."""

    src_file: Optional[str] = None  # English side of two line-aligned files (.gz/.bz2/.xz too)
    tgt_file: Optional[str] = None  # Spanish side, line-aligned with src_file
    tsv: Optional[str] = None  # a TSV file: English<TAB>Spanish[<TAB>more columns]
    dataset: Optional[str] = None  # hub name, local data file, or save_to_disk directory
    subset: Optional[str] = None  # hub config name, e.g. "en-es"
    split: str = "train"  # the dataset's split to read
    src_column: Optional[str] = None  # two text columns instead of a `translation` column
    tgt_column: Optional[str] = None  # the Spanish column, with src_column
    file: Optional[str] = None  # one file of a format named by `format` or its suffix (.tmx)
    format: Optional[str] = None  # files, tsv, dataset or tmx; inferred from the keys if omitted
    # Train sources: how often each of its pairs is seen per epoch, relative to the others
    # (2: twice; 0.5: half of them, drawn anew each epoch). Prepare records it: prepare
    # again to change it. Duplicates are removed before, so weighting keeps them out.
    weight: float = 1.0

    def given(self) -> dict[str, Any]:
        """The keys that name where and how to read the source (its format's keys) set
        to something other than their default."""
        defaults = SourceConfig()
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)
                if f.name != "weight" and getattr(self, f.name) != getattr(defaults, f.name)}

    def validate(self) -> None:
        try:
            source_format(self.given())
        except SourceKeyError as exc:
            raise _Invalid(exc.key, str(exc)) from None
        _require(0.0 < self.weight <= MAX_WEIGHT, "weight", f"must be in (0, {MAX_WEIGHT:g}]")


@dataclass
class DataConfig:
    """What `prepare` reads, how it cleans and splits it, and the tokenizer it trains."""

    src_lang: str = "en"  # source language code (names valid.en, test.en)
    tgt_lang: str = "es"  # target language code
    train: list[SourceConfig] = field(default_factory=list)  # corpora to train on (sources)
    valid: Optional[SourceConfig] = None  # validation pairs (None: carve valid_size off train)
    test: Optional[SourceConfig] = None  # test pairs (None: carve test_size off train)
    valid_size: int = 1000  # pairs carved off train for validation when valid is None
    test_size: int = 1000  # pairs carved off train for testing when test is None
    max_tokens: int = 200  # whitespace-separated words per side
    max_chars: int = 1000  # characters per side
    max_ratio: float = 3.0  # longer side / shorter side, in words
    vocab_size: int = 32000  # sentencepiece pieces, shared by both languages
    tokenizer: str = "unigram"  # sentencepiece model type: unigram or bpe
    # An existing sentencepiece model (a file, or a run or prepared dir holding spm.model)
    # to encode with instead of training one: data for fine-tuning a run with
    # `train --init-from` must share that run's vocabulary.
    tokenizer_model: Optional[str] = None
    character_coverage: float = 1.0  # 1.0 keeps ¿ ¡ ñ and accents
    # Characters without a piece of their own are spelt as their UTF-8 bytes (256 of the
    # vocab_size pieces), so that none becomes <unk>: Greek, Chinese, emoji come back.
    byte_fallback: bool = True
    # Sentences sampled to train sentencepiece: its trainer's memory grows with the
    # sentences it holds, so this bounds prepare's peak memory whatever the corpus size.
    input_sentence_size: int = 1_000_000
    skip_invalid: bool = False  # skip (and count) malformed lines instead of failing
    seed: int = 1  # seeds the split, shuffling and sentencepiece's sample
    # Also align the train split's words (IBM Model 2, both directions, symmetrised) and
    # store the links, mapped to pieces, beside it: what train.guided_alignment needs.
    alignments: bool = False
    out: str = "prepared"  # directory prepare writes

    def validate(self) -> None:
        for key in ("valid_size", "test_size"):
            _require(getattr(self, key) >= 0, key, "must be >= 0")
        _within(self, "max_tokens", 1, MAX_SENTENCE)
        _within(self, "max_chars", 1, MAX_SENTENCE)
        _require(self.input_sentence_size >= 1, "input_sentence_size", "must be at least 1")
        _require(self.max_ratio >= 1.0, "max_ratio", "must be >= 1")
        _within(self, "vocab_size", 8, MAX_VOCAB)
        _seed(self, "seed")
        _require(self.tokenizer in ("unigram", "bpe"), "tokenizer", "must be unigram or bpe")
        _require(0.0 < self.character_coverage <= 1.0, "character_coverage", "must be in (0, 1]")
        for key in ("src_lang", "tgt_lang"):  # they name files: valid.en, valid.es
            _require(bool(re.fullmatch(r"[A-Za-z0-9_-]+", getattr(self, key))), key,
                     "must be a language code (letters, digits, _ or -)")
        _require(self.src_lang != self.tgt_lang, "tgt_lang", "must differ from src_lang")
        for key in ("valid", "test"):  # every pair is scored once: a weight would be ignored
            source = getattr(self, key)
            _require(source is None or source.weight == 1.0, f"{key}.weight",
                     "is for data.train's sources only (how often a pair is trained on)")


@dataclass
class TrainConfig:
    """The training recipe: batches, objective, optimiser, schedule, bookkeeping."""

    batch_tokens: int = 25000  # per batch and per side, padding included
    accum_steps: int = 1  # batches summed into one update
    max_steps: int = 100_000  # stop after this many updates
    max_minutes: float = 0.0  # also stop (and save) after this much wall time; 0: no limit
    label_smoothing: float = 0.1  # epsilon of label smoothing (paper: 0.1)
    lr_factor: float = 1.0  # Noam: factor * d_model^-0.5 * min(step^-0.5, step * warmup^-1.5)
    warmup_steps: int = 4000  # updates of linear learning-rate warm-up
    # After warm-up: noam (step^-0.5), or linear / cosine decay to final_lr_scale x the
    # peak at max_steps (a run that knows its length can end on a low learning rate).
    schedule: str = "noam"
    final_lr_scale: float = 0.0  # linear/cosine: the last learning rate, x the peak
    # linear/cosine: the decay also ends, and the run stops, after this many minutes of
    # training (wall time, over all sessions of the run), if that comes before max_steps: the
    # schedule fits whatever speed the machine has. 0: max_steps alone (exact resumes).
    decay_minutes: float = 0.0
    adam_beta1: float = 0.9  # Adam's first-moment decay
    adam_beta2: float = 0.98  # Adam's second-moment decay (paper: 0.98)
    adam_eps: float = 1e-9  # Adam's epsilon (paper: 1e-9)
    clip_grad_norm: float = 0.0  # clip the gradients' global norm to this (0: no clipping)
    # Decoupled weight decay (AdamW, Loshchilov & Hutter 2019): each update also shrinks
    # every weight by lr x this; 0 is the paper's plain Adam.
    weight_decay: float = 0.0
    seed: int = 1  # seeds initialisation, batch order and dropout
    device: str = "auto"  # auto, cpu or cuda
    precision: str = "bf16"  # on CUDA: bf16, fp16 (with GradScaler) or fp32
    cpu_precision: str = "fp32"  # on CPU: fp32, or bf16 autocast (fp32 without bf16 kernels)
    # torch.compile the model, for any batch shape: a run compiles a few graphs, and stops
    # compiling (runs eagerly) past 16 (docs/GPU.md, "Speed options").
    compile: bool = False
    # With compile, on CUDA: replay each batch shape's CUDA graph (one launch for the
    # model's hundreds of kernels); needs batch_shapes.
    cuda_graphs: bool = False
    # 0: batches of any shape; N: every batch takes one of at most N shapes (rows, source
    # and target length), at the cost of more padding (`bench.padding` at 7e5bbcb).
    batch_shapes: int = 0
    threads: int = 0  # CPU threads for torch (0: one per available core)
    pad_multiple: int = 0  # pad batch lengths to a multiple of this (0: 1, no rounding)
    # Exponential moving average of the weights (0: off), e.g. 0.999: used for
    # validation, `best` and `avg` checkpoints.
    ema_decay: float = 0.0
    # Subword regularisation (Kudo 2018): each epoch, training pairs are segmented anew
    # by sentencepiece sampling with this smoothing alpha (0: off) among the nbest best
    # segmentations (-1: all). Valid/test keep the deterministic segmentation.
    sample_alpha: float = 0.0
    sample_nbest: int = 64  # segmentations sampled among (-1: all); see sample_alpha
    # Pairs whose source side has more than long_tokens tokens are seen long_weight times
    # per epoch (a fraction: a chance), the others once: on a pool of short conversational
    # and long news/parliament pairs, more of the long text without another file.
    long_weight: float = 1.0  # 1: every pair as often; times a source's data.train weight
    # A long pair's source has more than this many pieces (no EOS); 20 of an 8K vocabulary
    # is about 15 words.
    long_tokens: int = 20
    # The share of training pairs shown in another case each epoch, on both sides: half
    # of them ALL CAPS, half Title Case (every word capitalised), so that such input is
    # translated, not taken for noise. 0: off. A pair's case is drawn per epoch.
    case_augment: float = 0.0
    # Term annotation (Dinu et al. 2019): the share of the training pairs with a term (a
    # source word whose Spanish, by a word dictionary of the corpus, is in the target)
    # shown each epoch with 1 or 2 of their terms replaced by their Spanish words in the
    # source ("the [ coche ] is red"), so that the model learns to copy a glossary's
    # terms given that way. 0: off. The pairs and terms are drawn per epoch.
    term_annotation: float = 0.0
    # Guided alignment (Garg et al. 2019; Marian's --guided-alignment, which Bergamot's
    # models are trained with): this weight x a cost that trains one cross-attention head
    # toward the prepared dir's word alignments (prepare with data.alignments: true), so
    # that the head says where each word went. 0: off; Marian's default is 0.1.
    guided_alignment: float = 0.0
    guided_alignment_layer: int = 0  # that head's decoder layer (1 = the first; 0: the last)
    guided_alignment_head: int = 1  # that head, in its layer (1 = the first)
    # ce: cross-entropy of the head's attention against the alignment (Marian's current
    # cost); mse: half the squared error (Marian's first one)
    guided_alignment_cost: str = "ce"
    log_every: int = 100  # updates per line of metrics.jsonl
    valid_every: int = 1000  # updates between validations
    save_every: int = 1000  # updates between checkpoints
    # Step weights kept (for `avg` and for translating with a step), besides best and avg;
    # only the newest step keeps its training state, all --resume reads.
    keep_last: int = 5
    average_last: int = 5  # checkpoints averaged into `avg`
    valid_bleu_lines: int = 500  # valid pairs decoded greedily for BLEU (0: none)
    early_stop_metric: str = "bleu"  # what `best` and patience follow: bleu or loss
    patience: int = 0  # validations without improvement before stopping (0: never)
    # Start from another run's weights (fine-tuning): RUN (its best checkpoint) or
    # RUN/CHECKPOINT (best, last, avg, a step) or a weights file; same vocabulary and
    # model shape. A new optimizer and schedule; a resumed run ignores it.
    init_from: Optional[str] = None
    tensorboard: bool = False  # also log to RUN/tensorboard/ (needs `pip install tensorboard`)

    def validate(self) -> None:
        for key in ("max_steps", "warmup_steps", "log_every", "valid_every", "save_every",
                    "keep_last", "average_last"):
            _require(getattr(self, key) >= 1, key, "must be at least 1")
        _within(self, "batch_tokens", 1, MAX_BATCH_TOKENS)
        _within(self, "accum_steps", 1, MAX_ACCUM_STEPS)
        _seed(self, "seed")
        _require(self.max_minutes >= 0, "max_minutes", "must be >= 0")
        _require(0.0 <= self.label_smoothing < 1.0, "label_smoothing", "must be in [0, 1)")
        _require(self.lr_factor > 0, "lr_factor", "must be > 0")
        _require(self.schedule in SCHEDULES, "schedule", f"must be one of {', '.join(SCHEDULES)}")
        _require(0.0 <= self.final_lr_scale <= 1.0, "final_lr_scale", "must be in [0, 1]")
        _require(self.decay_minutes >= 0, "decay_minutes", "must be >= 0")
        _require(not self.decay_minutes or self.schedule != "noam", "decay_minutes",
                 "needs schedule linear or cosine (noam has no end to reach)")
        _require(0.0 <= self.ema_decay < 1.0, "ema_decay", "must be in [0, 1)")
        _require(0 <= self.sample_alpha <= MAX_SAMPLE_ALPHA, "sample_alpha",
                 f"must be in [0, {MAX_SAMPLE_ALPHA:g}]")
        _require(self.sample_nbest == -1 or self.sample_nbest >= 1, "sample_nbest",
                 "must be -1 (all segmentations) or at least 1")
        _require(0.0 < self.long_weight <= MAX_WEIGHT, "long_weight",
                 f"must be in (0, {MAX_WEIGHT:g}]")
        _require(self.long_tokens >= 0, "long_tokens", "must be >= 0")
        _require(0.0 <= self.case_augment <= 1.0, "case_augment", "must be in [0, 1]")
        _require(not self.batch_shapes or not self.case_augment, "batch_shapes",
                 "needs train.case_augment: 0 (cased pairs change length each epoch)")
        _require(not self.case_augment or not self.sample_alpha, "case_augment",
                 "needs train.sample_alpha: 0 (subword sampling re-encodes pairs as written)")
        _require(0.0 <= self.term_annotation <= 1.0, "term_annotation", "must be in [0, 1]")
        _require(not self.batch_shapes or not self.term_annotation, "batch_shapes",
                 "needs train.term_annotation: 0 (annotated pairs change length each epoch)")
        _require(not self.term_annotation or not self.sample_alpha, "term_annotation",
                 "needs train.sample_alpha: 0 (subword sampling re-encodes pairs as written)")
        _require(not self.term_annotation or not self.case_augment, "term_annotation",
                 "needs train.case_augment: 0 (a pair is shown cased or annotated, not both)")
        self._validate_guided_alignment()
        _within(self, "threads", 0, MAX_THREADS)
        _within(self, "pad_multiple", 0, MAX_PAD_MULTIPLE)
        _within(self, "batch_shapes", 0, MAX_BATCH_SHAPES)
        _require(not self.cuda_graphs or self.compile, "cuda_graphs", "needs train.compile: true")
        _require(not self.cuda_graphs or self.batch_shapes, "cuda_graphs",
                 "needs train.batch_shapes (e.g. 16): each batch shape records a graph")
        _require(not self.batch_shapes or not self.sample_alpha, "batch_shapes",
                 "needs train.sample_alpha: 0 (re-segmented pairs change length each epoch)")
        _require(0.0 <= self.adam_beta1 < 1.0, "adam_beta1", "must be in [0, 1)")
        _require(0.0 <= self.adam_beta2 < 1.0, "adam_beta2", "must be in [0, 1)")
        _require(self.adam_eps > 0, "adam_eps", "must be > 0")
        _require(self.clip_grad_norm >= 0, "clip_grad_norm", "must be >= 0")
        _require(0.0 <= self.weight_decay < 1.0, "weight_decay", "must be in [0, 1)")
        _require(self.device in DEVICES, "device", f"must be one of {', '.join(DEVICES)}")
        _require(self.precision in ("bf16", "fp16", "fp32"), "precision",
                 "must be bf16, fp16 or fp32")
        _require(self.cpu_precision in ("bf16", "fp32"), "cpu_precision", "must be bf16 or fp32")
        _require(self.valid_bleu_lines >= 0, "valid_bleu_lines", "must be >= 0")
        _require(self.early_stop_metric in ("bleu", "loss"), "early_stop_metric",
                 "must be bleu or loss")
        _require(self.patience >= 0, "patience", "must be >= 0")

    def _validate_guided_alignment(self) -> None:
        _require(0.0 <= self.guided_alignment <= MAX_WEIGHT, "guided_alignment",
                 f"must be in [0, {MAX_WEIGHT:g}]")
        _within(self, "guided_alignment_layer", 0, MAX_LAYERS)
        _within(self, "guided_alignment_head", 1, MAX_WIDTH)
        _require(self.guided_alignment_cost in ALIGNMENT_COSTS, "guided_alignment_cost",
                 f"must be one of {', '.join(ALIGNMENT_COSTS)}")
        _require(not self.guided_alignment or not self.sample_alpha, "guided_alignment",
                 "needs train.sample_alpha: 0 (re-segmented pairs lose their alignment)")


ALIGNMENT_COSTS = ("ce", "mse")  # train.guided_alignment_cost's names (training/objective.py)


def guided_head(train: TrainConfig, model: ModelConfig) -> Optional[tuple[int, int]]:
    """The cross-attention head `train.guided_alignment` trains, as (decoder layer, head),
    0-based, or None when it is off: where a run trained with it keeps its alignment."""
    if not train.guided_alignment:
        return None
    return (train.guided_alignment_layer or model.dec_layers) - 1, train.guided_alignment_head - 1


# decode.strategy's names, each the function of that name in transcli.inference.search.
STRATEGIES = {
    "beam": "beam search: decode.beam_size hypotheses kept per step, n_best returned",
    "greedy": "the most likely token at each step (beam 1 without a word reward)",
    "sample": "tokens drawn from the model's distribution (temperature, top_k, top_p, seed)",
}
ENGINES = ("torch", "ct2")  # what runs the search: transcli's model, or a CTranslate2 export
# The torch engine's float32 CPU products (transcli.inference.cpu_matmul).
CPU_GEMMS = ("auto", "blas", "onednn")
# The torch engine's arithmetic (and CTranslate2's compute type): auto is bf16 on CUDA
# devices that have it, else fp16 there, and fp32 on the CPU (transcli.inference.device_defaults).
PRECISIONS = ("auto", "fp32", "bf16", "fp16")
# How glossary terms get into translations (transcli.inference.glossary.method).
GLOSSARY_METHODS = ("auto", "constrain", "placeholder", "annotate")
QUANTIZE = ("none", "int8")  # int8 weights: dynamically quantized (torch), or CTranslate2's


@dataclass
class DecodeConfig:
    """Search settings for `translate` and `evaluate` (paper: beam 4, alpha 0.6, len + 50)."""

    strategy: str = "beam"  # beam, greedy (= beam 1 when word_reward is 0) or sample
    beam_size: int = 4  # hypotheses kept per step by beam search
    length_penalty: float = 0.6  # GNMT alpha: score / ((5 + len) / 6) ** alpha
    word_reward: float = 0.0  # added to the score per target token (Murray & Chiang 2018)
    word_reward_bound: float = 0.0  # reward only up to this x source tokens (+ EOS); 0: no bound
    max_len_a: float = 1.0  # max target length = a * source length + b
    max_len_b: int = 50  # max target length = a * source length + b
    batch_tokens: int = 0  # source tokens per batch, before beams; 0: chosen for the device
    n_best: int = 1  # hypotheses per line (beam: <= beam_size; sample: independent samples)
    temperature: float = 1.0  # sample: divide the log-probs by this before sampling
    top_k: int = 0  # sample: only from the k most likely tokens (0: no limit)
    top_p: float = 1.0  # sample: only from the smallest set of tokens with this much mass
    seed: int = 1  # sample: line i of the input draws from a generator seeded by (seed, i)
    engine: str = "torch"  # torch or ct2 (a CTranslate2 export cached in the run dir)
    quantize: str = "none"  # none or int8
    cpu_gemm: str = "auto"  # torch's float32 CPU products: blas, onednn, auto (use_onednn)
    precision: str = "auto"  # fp32, bf16 or fp16; auto: half on CUDA, fp32 on the CPU
    threads: int = 0  # CPU threads for torch (0: one per available core)
    split: bool = True  # translate a line of several sentences one sentence at a time
    split_sentences: bool = False  # the same, forced: its name before `split` was the default
    protect: bool = True  # URLs, numbers, code, emoji, other scripts...: copied, not translated
    truecase: bool = True  # ALL-CAPS / Title Case: translated in sentence case, returned in theirs
    no_repeat_ngram: int = 0  # > 0: no n-gram of this many tokens twice in a translation
    retry_repeats: bool = True  # a translation that loops is searched again, blocking repeats
    # A TSV of english<TAB>spanish terms the translation uses (docs/INFERENCE.md,
    # "Glossaries"); a path, read when a command loads the model; "": none.
    glossary: str = ""
    # constrain: constrained beam search (torch engine, greedy or beam); placeholder: the
    # term masked and its copy replaced; annotate: the Spanish form written into the source,
    # for runs trained with train.term_annotation; auto: annotate for such a run, else
    # constrain where it can, else placeholder.
    glossary_method: str = "auto"

    def validate(self) -> None:
        _require(self.strategy in STRATEGIES, "strategy", f"must be one of {', '.join(STRATEGIES)}")
        _within(self, "beam_size", 1, MAX_BEAM)
        _require(0 <= self.length_penalty <= MAX_LENGTH_PENALTY, "length_penalty",
                 f"must be in [0, {MAX_LENGTH_PENALTY:g}]")
        _require(self.word_reward_bound >= 0, "word_reward_bound", "must be >= 0 (0: no bound)")
        _require(0 <= self.max_len_a <= MAX_LENGTH_RATIO, "max_len_a",
                 f"must be in [0, {MAX_LENGTH_RATIO:g}]")
        _require(self.max_len_b >= 1, "max_len_b", "must be at least 1")
        _within(self, "batch_tokens", 0, MAX_BATCH_TOKENS)
        if self.strategy == "beam":
            _require(1 <= self.n_best <= self.beam_size, "n_best",
                     f"must be in [1, beam_size], got {self.n_best} with beam_size "
                     f"{self.beam_size} (raise --beam-size or lower --n-best)")
        elif self.strategy == "greedy":
            _require(self.n_best == 1, "n_best", "must be 1 with strategy greedy")
        else:
            _within(self, "n_best", 1, MAX_BEAM)
        _require(self.temperature >= MIN_TEMPERATURE, "temperature",
                 f"must be at least {MIN_TEMPERATURE:g} (lower samples nothing: use "
                 f"strategy greedy for the most likely tokens)")
        _require(self.top_k >= 0, "top_k", "must be >= 0 (0: no limit)")
        _require(0.0 < self.top_p <= 1.0, "top_p", "must be in (0, 1]")
        _seed(self, "seed")
        _require(self.engine in ENGINES, "engine", f"must be one of {', '.join(ENGINES)}")
        _require(self.word_reward == 0.0 or self.engine == "torch", "word_reward",
                 "is applied by the torch engine only: CTranslate2's search has none "
                 "(set decode.word_reward=0 to use --engine ct2)")
        _require(self.quantize in QUANTIZE, "quantize", f"must be one of {', '.join(QUANTIZE)}")
        _require(self.cpu_gemm in CPU_GEMMS, "cpu_gemm", f"must be one of {', '.join(CPU_GEMMS)}")
        _require(self.precision in PRECISIONS, "precision",
                 f"must be one of {', '.join(PRECISIONS)}")
        _within(self, "threads", 0, MAX_THREADS)
        _require(not self.split_sentences or self.n_best == 1, "split_sentences",
                 "gives the 1-best translation only: n_best must be 1")
        _within(self, "no_repeat_ngram", 0, MAX_NO_REPEAT)
        _require(self.glossary_method in GLOSSARY_METHODS, "glossary_method",
                 f"must be one of {', '.join(GLOSSARY_METHODS)}")
        _require(self.glossary_method != "constrain"
                 or (self.engine == "torch" and self.strategy != "sample"), "glossary_method",
                 "constrain needs the torch engine and greedy or beam search (CTranslate2 "
                 "has no constrained search: use --engine torch, or glossary_method "
                 "placeholder)")


@dataclass
class Config:
    model: ModelConfig = field(default_factory=ModelConfig)
    data: DataConfig = field(default_factory=DataConfig)
    train: TrainConfig = field(default_factory=TrainConfig)
    decode: DecodeConfig = field(default_factory=DecodeConfig)

    def validate(self, origin: str = "config", overridden: tuple[str, ...] = ()) -> None:
        """Check every section; errors name the dotted key and `origin`, plus the command
        line when an `overridden` key sits in the same section as the failing one."""
        try:
            _validate_tree(self, "")
            self._validate_guided_head()
        except _Invalid as exc:
            section = exc.key.rsplit(".", 1)[0]
            by_flags = any(key.rsplit(".", 1)[0] == section for key in overridden)
            where = f"{origin} + command-line overrides" if by_flags else origin
            raise UserError(f"{where}: '{exc.key}' {exc}") from None

    def _validate_guided_head(self) -> None:
        """train.guided_alignment's head must be one the model has."""
        tc, model = self.train, self.model
        _require(tc.guided_alignment_layer <= model.dec_layers, "train.guided_alignment_layer",
                 f"is {tc.guided_alignment_layer} but the model has {model.dec_layers} "
                 f"decoder layers (model.dec_layers)")
        _require(tc.guided_alignment_head <= model.heads, "train.guided_alignment_head",
                 f"is {tc.guided_alignment_head} but a layer has {model.heads} heads "
                 f"(model.heads)")

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def fingerprint(self, *sections: str) -> str:
        """A short hash of the given sections (all when none), for refusing mismatched runs."""
        data = self.to_dict()
        picked = {k: data[k] for k in (sections or data.keys())}
        blob = json.dumps(picked, sort_keys=True).encode()
        return hashlib.sha256(blob).hexdigest()[:16]


class _Invalid(Exception):
    """Raised by `validate()` methods; carries the key relative to its section."""

    def __init__(self, key: str, message: str):
        super().__init__(message)
        self.key = key


def _require(ok: bool, key: str, message: str) -> None:
    if not ok:
        raise _Invalid(key, message)


def _seed(section: Any, key: str) -> None:
    value = getattr(section, key)
    if not 0 <= value < SEED_LIMIT:
        raise _Invalid(key, f"must be in [0, 2^63), got {value:,}")


def _within(section: Any, key: str, low: int, high: int) -> None:
    value = getattr(section, key)
    if not low <= value <= high:
        raise _Invalid(key, f"must be in [{low:,}, {high:,}], got {value:,}")


def _validate_tree(obj: Any, prefix: str) -> None:
    """Run every nested `validate()`; the `_Invalid` raised carries the full dotted key."""
    try:
        if hasattr(obj, "validate") and not isinstance(obj, Config):
            obj.validate()
    except _Invalid as exc:
        raise _Invalid(prefix + exc.key, str(exc)) from None
    for f in dataclasses.fields(obj):
        value = getattr(obj, f.name)
        items = enumerate(value) if isinstance(value, list) else [(None, value)]
        for i, item in items:
            if dataclasses.is_dataclass(item):
                sub = f"{prefix}{f.name}" + (f"[{i}]" if i is not None else "")
                _validate_tree(item, sub + ".")
