"""Step markers for `gpudoctor run` (protocol: docs/run.md). No dependencies.

With them gpudoctor's report gives throughput and splits each step into waiting for data and
computing. Outside `gpudoctor run` (GPUDOCTOR_MARKERS unset) every call does nothing.

    from gpudoctor_markers import Markers

    markers = Markers()
    for batch in markers.iterate(loader):     # step_start, wait for the batch, data_ready
        loss = model(batch.cuda(non_blocking=True)).sum()
        loss.backward()
        optimizer.step()
        markers.step_end(samples=len(batch))  # the step is done
"""

import contextlib
import os
import time


class Markers:
    """Appends `<unix time> <event> [samples=N]` lines to the file GPUDOCTOR_MARKERS names."""

    def __init__(self, path=None):
        self.path = path if path is not None else os.environ.get("GPUDOCTOR_MARKERS")
        self._file = open(self.path, "a", buffering=1) if self.path else None
        self._last_end = None

    def _write(self, event, samples=None):
        if self._file is None:
            return
        line = "%.6f %s" % (time.time(), event)
        if samples is not None:
            line += " samples=%d" % int(samples)
        self._file.write(line + "\n")

    def step_start(self):
        self._write("step_start")

    def data_ready(self):
        self._write("data_ready")

    def step_end(self, samples=None):
        self._write("step_end", samples)

    def iterate(self, iterable):
        """Yields the batches of a loader, marking step_start before asking for each one and
        data_ready when it arrives: the time in between is the step's wait for data. Call
        step_end(samples) when the step's work is done."""
        it = iter(iterable)
        while True:
            self.step_start()
            try:
                batch = next(it)
            except StopIteration:
                return
            self.data_ready()
            yield batch

    @contextlib.contextmanager
    def step(self, samples=None):
        """Marks one step around a block (no wait/compute split: call data_ready() inside the
        block, once the batch is on the GPU, to get one)."""
        self.step_start()
        try:
            yield self
        finally:
            self.step_end(samples)

    def close(self):
        if self._file is not None:
            self._file.close()
            self._file = None
