"""The DRLA command line: ``python -m drla --help``.

One BLAS thread per process unless you say otherwise: DRLA's networks are small (a few 64-wide layers), and
OpenBLAS's threads cost more than they give on them, up to 4x slower updates on a busy 2-core machine
(measured: a DQN update 516 us with one thread, 2.1 ms with two). Workers are processes of their own, so a
many-core machine is used by running more of them. Set ``OPENBLAS_NUM_THREADS`` yourself to choose.
"""

import os

for _name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_name, "1")  # before numpy is imported (bpy imports it too)
