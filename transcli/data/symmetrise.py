"""Two directions of word alignment made one: grow-diag-final-and (Koehn, Och and Marcu
2003; Moses' `symal`, the heuristic the Firefox Translations pipeline applies to
eflomal's two directions before Marian's guided alignment).

It starts from the links both directions agree on (precise, but few: a word the two
directions link differently is left out), grows them into neighbouring links (diagonal
neighbours included) that either direction has and that link a word not yet linked,
then adds any link of either direction between two words both still unlinked. Each
word the directions linked somewhere keeps a link, mostly (recall), while a link only
one direction has and that crosses the grown ones stays out (precision): what the
guided head is trained toward, where a word both directions leave unlinked ("to" in
"want to be" -> "quiero ser") stays unlinked.
"""

from __future__ import annotations

from typing import Sequence

NEIGHBOURS = ((-1, 0), (0, -1), (1, 0), (0, 1), (-1, -1), (-1, 1), (1, -1), (1, 1))

Link = tuple[int, int]  # (source word, target word), positions in the pair


def grow_diag_final_and(forward: Sequence[int], reverse: Sequence[int]) -> list[Link]:
    """The symmetrised links of one pair, sorted: `forward[j]` is target word j's source
    word, `reverse[i]` source word i's target word (-1: none)."""
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
    while grown:  # grow-diag: in source-then-target order, as the links stand
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
    for direction in (source_to_target, target_to_source):  # final-and
        for i, j in sorted(direction):
            if i not in linked_src and j not in linked_tgt:
                add((i, j))
    return sorted(points)
