"""Frozen inputs and their rules (tier 1, above errors/units/textfile): what a run is, before any
cost is asked.

* `model` - `ModelSpec`, the transformer (sizes, attention, MLP, norm, vocabulary);
* `parallel` - `ParallelSpec`, the parallel sizes, recompute and the schedule a run names;
* `layout` - where each named group of GPUs sits (NVLink or InfiniBand), Megatron-Core's order;
* `schedules` - the pipeline schedules a run may name: placement, chunks, rules;
* `precision` - BF16 or FP8 numerics (`Numerics`);
* `hardware` - `HardwareSpec`, one machine's GPU, links and calibration files;
* `workload` - `TrainingSpec` and `Workload`, one run's model, batch and parallel plan;
* `rules` - every cross-field rule of a workload, each naming its key and value;
* `fields` - building a spec from a YAML mapping, field by field;
* `knobs` - every setting a user can turn, one definition each (flags, grid keys, columns).
"""
