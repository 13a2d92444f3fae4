"""Two directions of word alignment made one (Koehn, Och and Marcu 2003; Moses' `symal`).

- `intersection`: the links both directions agree on. Precise, and a word the two
  directions link differently is left unlinked.
- `grow-diag`: the intersection, grown into neighbouring links (diagonal neighbours
  included) that either direction has and that link a word not yet linked.
- `grow-diag-final-and`: then also any link of either direction between two words both
  still unlinked: what the Firefox Translations pipeline applies to eflomal's directions.

`data.alignments` takes the intersection: with transcli's aligner it is the most accurate
of the three on a hand-aligned EN-ES sample (docs/DATA.md, "Word alignments"), and guided
alignment trains a head toward every link it is given, while a word left unlinked costs
nothing.
"""

from __future__ import annotations

from typing import Sequence

NEIGHBOURS = ((-1, 0), (0, -1), (1, 0), (0, 1), (-1, -1), (-1, 1), (1, -1), (1, 1))
METHODS = ("intersection", "grow-diag", "grow-diag-final-and")

Link = tuple[int, int]  # (source word, target word), positions in the pair


def symmetrise(forward: Sequence[int], reverse: Sequence[int], method: str) -> list[Link]:
    """The links of one pair by `method` (one of METHODS), sorted: `forward[j]` is target
    word j's source word, `reverse[i]` source word i's target word (-1: none)."""
    if method == "intersection":
        return [(i, j) for i, j in enumerate(reverse) if j >= 0 and forward[j] == i]
    return grow_diag(forward, reverse, final_and=method == "grow-diag-final-and")


def grow_diag(forward: Sequence[int], reverse: Sequence[int], final_and: bool) -> list[Link]:
    """grow-diag (and with `final_and`, its final-and step), as Koehn's pseudocode: the
    points visited in source-then-target order, as the links stand."""
    target_to_source = {(i, j) for j, i in enumerate(forward) if i >= 0}
    source_to_target = {(i, j) for i, j in enumerate(reverse) if j >= 0}
    union = target_to_source | source_to_target
    points = target_to_source & source_to_target
    if len(points) == len(union):
        return sorted(points)
    linked_src = {i for i, _ in points}
    linked_tgt = {j for _, j in points}

    def add(point: Link) -> None:
        points.add(point)
        linked_src.add(point[0])
        linked_tgt.add(point[1])

    candidates = sorted(union)
    grown = True
    while grown:
        grown = False
        for i, j in candidates:
            if (i, j) not in points:
                continue
            for di, dj in NEIGHBOURS:
                new = (i + di, j + dj)
                if new in union and new not in points and (
                        new[0] not in linked_src or new[1] not in linked_tgt):
                    add(new)
                    grown = True
    for direction in (source_to_target, target_to_source) if final_and else ():
        for i, j in sorted(direction):
            if i not in linked_src and j not in linked_tgt:
                add((i, j))
    return sorted(points)
