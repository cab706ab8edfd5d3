"""gunicorn's thread worker, taking a new connection only while it has a
thread free for it.

The stock ``gthread`` worker accepts every connection it is woken for and
queues it behind its threads. With several worker processes on one port, the
first to wake takes a whole burst of new connections (a browser's, a load
balancer's pool, a benchmark's) and, as a kept-alive connection stays with the
worker that accepted it, one process then serves every request while the
other idles: 8 connections came out 8 + 0 in bench/scale_bench.py. Taking
connections one free thread at a time leaves the rest of a burst in the
listening socket for a worker that has one, so they spread over the
processes (4 + 4). A busy worker still takes one waiting connection every
HOLD seconds, so when every worker is busy (or there is only one) no
connection waits long for its first answer.
"""

import time

from gunicorn.workers.gthread import ThreadWorker

# Seconds a busy worker leaves a waiting connection to the other workers: an
# idle one wakes within a millisecond on a quiet machine, but was seen to take
# over 0.1 s on a loaded one (a burst came out 6 + 2); a busy worker's
# requests wait that long in its queue anyway.
HOLD = 0.25


class FreeThreadWorker(ThreadWorker):
    """``--worker-class mnote.stack.gunicorn_worker.FreeThreadWorker``."""

    hold = HOLD

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.in_flight = 0  # connections handed to the thread pool, not yet finished
        self.full_since = float("-inf")

    def enqueue_req(self, conn):
        self.in_flight += 1
        super().enqueue_req(conn)

    def finish_request(self, conn, fs):
        self.in_flight -= 1
        super().finish_request(conn, fs)

    def accept(self, listener):
        super().accept(listener)
        if self.in_flight >= self.cfg.threads:
            # Stop listening: the run loop sees accepting off and asks
            # set_accept_enabled(True) again before each wait for events.
            self.full_since = time.monotonic()
            super().set_accept_enabled(False)

    def set_accept_enabled(self, enabled):
        free = self.in_flight < self.cfg.threads or time.monotonic() - self.full_since >= self.hold
        super().set_accept_enabled(enabled and free)
