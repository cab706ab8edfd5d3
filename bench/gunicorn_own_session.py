"""gunicorn settings for bench/scale_bench.py: each web worker in a session
of its own.

Linux groups runnable processes by session (sched_autogroup, on here) and
shares a busy CPU equally between groups, not processes: two web workers
forked into their master's session get, under contention, what one would
get, while every other session (a neighbour's test run) gets as much as both.
A deployment gives each web process its cores (its own machine, unit or
cgroup); a worker in its own session is scheduled like one, on both set-ups
alike (the single SQLite process too).
"""

import os


def post_fork(server, worker):
    os.setsid()
