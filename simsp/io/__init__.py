"""Reading inputs (tier 6): workload and hardware YAML (`config`, the only module that reads YAML),
`--set` on hardware keys (`hardware_set`), and Hugging Face config.json files (`hf_config`, with
the per-family table `hf_families`)."""
