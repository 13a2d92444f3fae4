"""The server's models: one `Batcher` (a worker thread and its queue) per run, each
translating its run's direction (`data.src_lang` to `data.tgt_lang`), and which of them a
request's languages go to. `serve -m en-es -m es-en` serves both directions of a pair."""

from __future__ import annotations

import time
from dataclasses import dataclass

from transcli.inference.checks import Tally
from transcli.serve.batcher import Batcher
from transcli.serve.limits import Limits
from transcli.serve.protocol import Pairs


@dataclass(frozen=True)
class Models:
    """Each (source, target) pair's batcher, the first pair the page's default."""

    batchers: dict[tuple[str, str], Batcher]

    @property
    def pairs(self) -> Pairs:
        return Pairs(tuple(self.batchers))

    @property
    def all(self) -> list[Batcher]:
        return list(self.batchers.values())

    @property
    def limits(self) -> Limits:
        return self.all[0].limits  # (the same for each)

    def calibrated(self, used: list[Batcher]) -> bool:
        """Whether the models `used` for an answer (all of them, when it used none) have
        a confidence calibration: then the answer gives one."""
        return all(batcher.translator is not None and batcher.translator.calibration
                   is not None for batcher in used or self.all)

    def batcher(self, source: str, target: str) -> Batcher:
        """The batcher of the pair; LibreTranslate's 400 when no model translates it."""
        if (source, target) not in self.batchers:  # (a text in its target language
            self.pairs.check_pair(source, target)  # is answered as it is, never asked here)
        return self.batchers[(source, target)]

    def start(self) -> None:
        """Load each model in turn (a loading error is raised by the one that failed)."""
        for batcher in self.all:
            batcher.start()

    def stop(self, wait: float) -> bool:
        """Stop every worker; whether all ended within `wait` seconds."""
        end = time.monotonic() + wait
        for batcher in self.all:  # all finish their queues at once, then each is waited for
            batcher.finish()
        return all([batcher.stop(wait=max(0.0, end - time.monotonic()))
                    for batcher in self.all])

    @property
    def alive(self) -> bool:
        return all(batcher.alive for batcher in self.all)

    @property
    def waiting(self) -> int:
        return sum(batcher.waiting for batcher in self.all)

    @property
    def answered(self) -> int:
        return sum(batcher.answered for batcher in self.all)

    @property
    def model_calls(self) -> int:
        return sum(batcher.model_calls for batcher in self.all)

    @property
    def merging(self) -> bool:
        return all(batcher.merging for batcher in self.all)

    @property
    def checks_failed(self) -> int:
        return sum((batcher.translator.tally if batcher.translator else Tally()).failed
                   for batcher in self.all)
