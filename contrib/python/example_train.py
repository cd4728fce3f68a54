"""A training loop with step markers, runnable without a GPU (it only sleeps):

    gpudoctor run --source sim:data_starvation -- python3 contrib/python/example_train.py

With PyTorch and a GPU, replace the sleeps with the real loader and model (see the docstring of
gpudoctor_markers.py).
"""

import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gpudoctor_markers import Markers  # noqa: E402


def main():
    steps = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    markers = Markers()
    for batch in markers.iterate(slow_loader(steps)):
        time.sleep(0.04)  # forward, backward, optimizer step
        markers.step_end(samples=len(batch))
    markers.close()


def slow_loader(steps):
    """Stands for a DataLoader with too few workers: 60 ms to make each batch of 32."""
    for _ in range(steps):
        time.sleep(0.06)
        yield [0] * 32


if __name__ == "__main__":
    main()
