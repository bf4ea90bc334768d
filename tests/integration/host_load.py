"""Real CPU contention on the lab host: one spinning process per core, so
the host's measured CPU time and pressure are what the kernel says of a
busy machine."""

import multiprocessing
import os


def spin():
    while True:
        pass


class Contention(object):
    def __init__(self):
        self.processes = []

    def start(self):
        self.processes = [multiprocessing.Process(target=spin, daemon=True) for core in range(os.cpu_count() or 2)]
        for process in self.processes:
            process.start()

    def stop(self):
        for process in self.processes:
            process.terminate()
            process.join()
        self.processes = []
