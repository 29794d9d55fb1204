"""Migrate `roofline profile gemm` documents written before speed came from ncu's kernel time.

Their time_ms, tflops, pct_of_roof, pct_of_peak and pct_of_reference came from the CUDA-event
time of the launch ncu profiled, which covers ncu's replays of it (naive_xcol: 1,342 ms against
ncu's 25.3 ms). rooflinecli.gpu.profile.migrate_times recomputes them from the ncu_time_ms each
record already holds, moves the event time to time_ms_under_ncu, keeps everything else and
notes the change under the document's `migrations`. Re-runnable: a migrated document is left
as it is.

    python benchmarks/migrate_profile_times.py [FILE.json ...]   # default: every profile-*.json
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from rooflinecli import files, paths, results  # noqa: E402
from rooflinecli.gpu.profile import migrate_times  # noqa: E402


def main(argv: list[str]) -> int:
    targets = [Path(a) for a in argv] or sorted((ROOT / "benchmarks" / "results").glob("profile-*"))
    for path in targets:
        doc = paths.read_json(path, "results file")
        results.validate(doc, str(path))
        if migrate_times(doc, by="benchmarks/migrate_profile_times.py"):
            files.write_atomic(path, results.dumps(doc))
            print(f"migrated {path}")
        else:
            print(f"unchanged {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
