"""The simulation (tier 5): a workload's costed actions replayed over its pipeline schedule.

* `schedule/` - the action lists of every schedule kind (spec.schedules names them);
* `plan` - per-stage actions with their durations and allocations, from the cost model;
* `engine` - the only simpy module: replays the plan on compute and communication streams;
* `closed_form` - the same plan folded into formulas, cross-checked against the engine;
* `memory` - HBM per stage from the ops' saved tensors and the schedule's in-flight counts;
* `budget` - the work a run would cost, counted before it starts;
* `trace` - the plain records the engine emits; `columns` - the engine's trace kept as typed
  columns, read as those records; `result` - one iteration's record.
"""
