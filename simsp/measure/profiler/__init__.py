"""Optional profiler: measure the GEMMs and collectives the cost model needs, and write them as
calibration files the hardware YAML can point at.

* `shapes` - the GEMM shapes and layouts a workload makes the cost model look up (pure, no torch);
* `gemm` - time those shapes (and optionally a grid) with torch -> a GemmTable CSV;
* `collectives` - all_reduce, all_gather, reduce_scatter and send/recv over N local processes
  -> one nccl-tests-format log per collective;
* `calibrate` - a new hardware YAML whose `calibration` section points at such files, with
  `measured_files` (where they are copied) and `yaml_lines` (the base file's text edited, its
  comments kept);
* `prediction_change` - how the new file moves a workload's prediction;
* the `simsp profile ...` and `simsp calibrate` command lines (`register`) and what they run
  are in the command line's tier: `simsp.cli.profile_parsers` and `simsp.cli.profile`.

torch is an optional extra (`pip install -e '.[profile]'`): it is imported lazily, inside the
functions that measure, so every module here imports without it (the import rule of
docs/architecture.md).
"""
