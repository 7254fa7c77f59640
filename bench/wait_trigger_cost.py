"""What migration 0012's end-of-job trigger (PostgreSQL, for q.wait) costs a completion
when nobody waits: ``complete_many`` of 1,000 claimed jobs, with the trigger and without,
alternating, 12 rounds each.

    cd bench && python wait_trigger_cost.py [URL]
"""

import statistics
import sys
import time

import skiplock

URL = sys.argv[1] if len(sys.argv) > 1 else "postgresql://postgres@127.0.0.1:5432/test"
TRIGGER = (
    'CREATE TRIGGER "t_snooze_trig_finished" AFTER UPDATE OF status ON "t_snooze_trig" '
    "FOR EACH ROW WHEN (NEW.waited AND NEW.status IN ('done', 'failed', 'cancelled')) "
    'EXECUTE PROCEDURE "t_snooze_trig_finished"()'
)


def main() -> None:
    q = skiplock.connect(URL, table="t_snooze_trig")
    q.uninstall()
    q.install()

    def trigger(on: bool) -> None:
        with q.transaction() as tx:
            tx.execute('DROP TRIGGER IF EXISTS "t_snooze_trig_finished" ON "t_snooze_trig"')
            if on:
                tx.execute(TRIGGER)

    res: dict[bool, list[float]] = {True: [], False: []}
    for r in range(12):
        for on in (True, False) if r % 2 else (False, True):
            trigger(on)
            q.enqueue_many([{"n": i} for i in range(1000)])
            jobs = q.claim(limit=1000)
            t = time.perf_counter()
            q.complete_many(jobs)
            res[on].append((time.perf_counter() - t) * 1000)
    for on in (True, False):
        print(
            "with trigger" if on else "without     ",
            f"complete_many(1000): median {statistics.median(res[on]):.1f} ms,",
            f"min {min(res[on]):.1f} ms",
        )
    q.uninstall()
    q.close()


if __name__ == "__main__":
    main()
