"""specterm: does speculative decoding pay on your workload, and with which draft length?"""

import os

# numpy marks each array of 4 MiB or more for transparent huge pages (madvise). Under the kernel's
# usual defrag=madvise, a first touch of such a page may compact memory synchronously: a report
# touches hundreds of MB of fresh arrays (the bootstrap weights, B x N), and on these VMs that cost
# 0.5-1 s of system time per report (10M positions: 7.24 -> 6.64 CPU-s without; 20,000 x 200: system
# time 1.45 -> 0.5 s; benchmarks/RESULTS.md). Read by numpy when it is imported, so it holds for every
# process that imports specterm before numpy (the CLI, the TUI, their children); set to 1 to keep
# numpy's default.
os.environ.setdefault("NUMPY_MADVISE_HUGEPAGE", "0")

# numpy's OpenBLAS starts a thread per core when numpy is imported, and those threads spin for a
# while before they sleep, even when no matrix product has run: 0.09 CPU-s of each process's
# 0.41 (`import specterm.core.report.analysis`, medians of 20, AMD EPYC; benchmarks/RESULTS.md).
# specterm runs its products on one BLAS thread anyway
# (core/report/parallel.py: its own threads run them), so it asks for one unless the variable is set;
# read when numpy is imported, like the line above. torch (MKL, OpenMP) does not read it.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

__version__ = "0.1.0"
