"""The worker's signal handler takes no lock (skiplock._worker.lifecycle): a SIGTERM that
arrives while the main thread holds the lock of the very Event the stop sets must not hang
the process. A `skiplock worker` hung so in a CI run; tests/conformance/test_worker_process
checks SIGTERM and a second signal end to end."""

from __future__ import annotations

import os
import signal
import threading
import time

from skiplock._worker.lifecycle import SignalRelay


def test_a_signal_while_the_main_thread_holds_the_stop_events_lock_does_not_hang() -> None:
    stop = threading.Event()
    seen: list[int] = []

    def on_signal(signum: int) -> None:
        seen.append(signum)
        stop.set()  # needs the lock the main thread holds below, until it lets go

    before = signal.getsignal(signal.SIGTERM)
    relay = SignalRelay((signal.SIGTERM,), on_signal)
    try:
        with stop._cond:  # type: ignore[attr-defined]  # where Event.clear() or wait() is
            os.kill(os.getpid(), signal.SIGTERM)
            for _ in range(1000):  # bytecodes: the handler runs here, lock held
                time.sleep(0)
            held_through = not stop.is_set()
        assert held_through  # the handler returned without setting it (it would hang)
        assert stop.wait(5) and seen == [signal.SIGTERM]
    finally:
        relay.close()
    assert signal.getsignal(signal.SIGTERM) is before  # the previous handler is back
