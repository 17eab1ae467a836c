"""The engine's trace stored as columns: one typed array (array.array) per field, one row per
span or memory sample, each stage's rows apart and in the order the stage ran them.

A row costs a few bytes (a span 23: code, start, duration, microbatch, chunk; a memory sample
16) where a `Span` object with its name costs ~500, so a 10^7-span trace fits in a few hundred
MB. `Span` and `MemorySample` records (sim/trace.py) are built only when read: iterating a
table, indexing or slicing it yields them, names formatted then ("F mb3 c0"). Readers that sum
over a stage (result.breakdown, the HBM lines) read its columns directly.
"""

from array import array
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cached_property
from itertools import accumulate, islice

from simsp.sim.trace import MemorySample, Span


@dataclass(frozen=True)
class SpanLabel:
    """What a span code stands for: its stream and kind (trace.STREAMS, trace.KINDS) and its
    name."""

    stream: str
    kind: str
    name: str
    numbered: bool = False
    """The name is completed with the span's microbatch and chunk: "F" reads "F mb3 c0"."""
    layered: bool = False
    """The span covers its chunk's transformer layers (SpanTable.layers); else none."""

    def title(self, microbatch: int, chunk: int) -> str:
        """The span's name, as a Span carries it."""
        return f"{self.name} mb{microbatch} c{chunk}" if self.numbered else self.name


@dataclass(frozen=True)
class StageSpans:
    """One stage's spans, in the order it ran them, as columns (one entry a span in each)."""

    stage: int
    code: array
    """'B': index into SpanTable.labels."""
    start_s: array
    """'d'."""
    dur_s: array
    """'d'."""
    microbatch: array
    """'i': -1 where not tied to a microbatch."""
    chunk: array
    """'h': the model chunk on the stage, -1 for none."""

    def __len__(self) -> int:
        return len(self.code)


def stage_spans(stage: int) -> StageSpans:
    """An empty StageSpans for the engine to append to."""
    return StageSpans(stage, array("B"), array("d"), array("d"), array("i"), array("h"))


@dataclass(frozen=True)
class SpanTable:
    """Every stage's spans as columns; reads as a sequence of `Span` (stage by stage, each in
    its order), built as they are read."""

    labels: tuple[SpanLabel, ...]
    stages: tuple[StageSpans, ...]
    """Stage 0's spans, stage 1's, ..."""
    layers: tuple[tuple[tuple[int, int], ...], ...]
    """Per stage, per model chunk on it: (global index of its first transformer layer, how
    many), what a layered span covers."""

    @cached_property
    def _ends(self) -> tuple[int, ...]:
        """Row count up to and including each stage."""
        return tuple(accumulate(len(b) for b in self.stages))

    def __len__(self) -> int:
        return self._ends[-1] if self.stages else 0

    def __iter__(self) -> Iterator[Span]:
        for block in self.stages:
            yield from self._read(block)

    def __getitem__(self, index):
        if isinstance(index, slice):
            start, stop, step = index.indices(len(self))
            return tuple(islice(self, start, stop, step)) if step > 0 else tuple(self)[index]
        n = len(self)
        if index < 0:
            index += n
        if not 0 <= index < n:
            raise IndexError("span index out of range")
        for block, end in zip(self.stages, self._ends, strict=True):
            if index < end:
                return next(islice(self._read(block), index - (end - len(block)), None))
        raise AssertionError("unreachable")

    def _read(self, block: StageSpans) -> Iterator[Span]:
        """One stage's rows as Span records."""
        labels, ranges, stage = self.labels, self.layers[block.stage], block.stage
        rows = zip(
            block.code, block.start_s, block.dur_s, block.microbatch, block.chunk, strict=True
        )
        for code, start, dur, mb, chunk in rows:
            label = labels[code]
            first, n = ranges[chunk] if label.layered else (-1, 0)
            name = label.title(mb, chunk)
            yield Span(stage, label.stream, label.kind, name, start, dur, mb, chunk, first, n)

    def of_stage(self, stage: int) -> Iterator[Span]:
        """One stage's spans as Span records, in the order it ran them."""
        return self._read(self.stages[stage])


@dataclass(frozen=True)
class StageMemory:
    """One stage's HBM samples, in the order it took them, as columns: from time_s[i] on it
    held bytes[i]."""

    stage: int
    time_s: array
    """'d'."""
    bytes: array
    """'d'."""

    def __len__(self) -> int:
        return len(self.time_s)


def stage_memory(stage: int) -> StageMemory:
    """An empty StageMemory for the engine to append to."""
    return StageMemory(stage, array("d"), array("d"))


@dataclass(frozen=True)
class MemoryTable:
    """Every stage's HBM samples as columns; reads as a sequence of `MemorySample` (stage by
    stage)."""

    stages: tuple[StageMemory, ...]
    """Stage 0's samples, stage 1's, ..."""

    def __len__(self) -> int:
        return sum(len(b) for b in self.stages)

    def __iter__(self) -> Iterator[MemorySample]:
        for block in self.stages:
            for t, held in zip(block.time_s, block.bytes, strict=True):
                yield MemorySample(block.stage, t, held)
