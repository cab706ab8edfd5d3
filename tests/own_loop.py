"""An async client run to its end on an event loop of its own, in a thread
of its own: Playwright's sync API may keep a loop running in the test thread,
and a loop cannot be started inside a running one."""

import threading

import anyio


def run_on_own_loop(async_fn, *args, timeout: float):
    """``async_fn(*args)`` run by anyio in a new thread; its result, or its
    exception re-raised here. ``timeout``: seconds to wait for the thread."""
    outcome = {}

    def run():
        try:
            outcome["result"] = anyio.run(async_fn, *args)
        except BaseException as e:  # re-raised in the test thread
            outcome["error"] = e

    thread = threading.Thread(target=run)
    thread.start()
    thread.join(timeout)
    if "error" in outcome:
        raise outcome["error"]
    return outcome["result"]
