"""Write nvlink5-alltoall/all_to_all_{4,8,64}.log: nccl-tests alltoall_perf measured inside a
GB300 NVL72 rack, as logs simsp reads.

Source: sources/moe-derived/alltoall_gb300.csv (transcribed by derive_moe_tables.py from Oracle's
oci-gpu-quickstarts nvidia/GB300/README-GB300.md @96ac1ec463: nccl-tests alltoall_perf on OCI
BM.GPU.GB300.4 hosts, NCCL 2.28.7, float, MNNVL on; 4 GPUs of one host, 8 GPUs of two hosts and
64 GPUs of 16 hosts, all in one NVLink domain, 512 KiB to 16 GiB a rank). Each log keeps the
out-of-place times as measured; nothing is scaled or fitted. These are the only published
all-to-all sweeps over NVLink5 found; the other Blackwell files borrow them (their YAML says so):
the HGX B300 node's own 8-GPU alltoall at 8 GiB, 675.6 GB/s busbw (alltoall_b300.csv), is within
0.6% of the 8-GPU log's 679.7 at that size.

    python hardware/calibration/derive_alltoall.py   # rewrites the three logs
"""

import csv
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))
from simsp.tables import CollectiveTable, write_nccl_log  # noqa: E402

CAL = REPO / "hardware" / "calibration"
SOURCE = CAL / "sources" / "moe-derived" / "alltoall_gb300.csv"
OUT = CAL / "nvlink5-alltoall"
RANKS = (4, 8, 64)


def measured(path: Path = SOURCE) -> dict[int, CollectiveTable]:
    """{ranks: the out-of-place alltoall sweep inside the rack}."""
    rows = [
        r
        for r in csv.DictReader(line for line in path.open() if not line.startswith("#"))
        if r["source"].endswith(":out-of-place") and int(r["ranks"]) in RANKS
    ]
    tables = {}
    for n in RANKS:
        points = sorted(
            (int(r["bytes_per_rank"]), float(r["time_us"]) * 1e-6)
            for r in rows
            if int(r["ranks"]) == n
        )
        sizes, times = zip(*points, strict=True)
        tables[n] = CollectiveTable("all_to_all", n, sizes, times)
    return tables


def main(out: Path = OUT) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    for n, table in measured().items():
        path = out / f"all_to_all_{n}.log"
        write_nccl_log(
            table,
            path,
            device="NVIDIA GB300",
            header_extra={
                "version": "2.17.x",
                "hostname": "derived",
                "simsp": "TRANSCRIBED by hardware/calibration/derive_alltoall.py, not a raw log",
                "source": (
                    "oracle-quickstart/oci-gpu-quickstarts@96ac1ec463 nvidia/GB300/"
                    "README-GB300.md (UPL-1.0), via sources/moe-derived/alltoall_gb300.csv: "
                    f"OCI BM.GPU.GB300.4, NCCL 2.28.7, float, {n} GPUs in one NVL72 rack"
                ),
                "method": "out-of-place times as published; the in-place column repeats them",
            },
        )
        paths.append(path)
    return paths


if __name__ == "__main__":
    for p in main():
        print(p.relative_to(REPO))
