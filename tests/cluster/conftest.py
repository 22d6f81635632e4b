"""The cluster test runs under `timeout` (scripts/ci.d/86-cluster.sh):
SIGTERM becomes KeyboardInterrupt, so pytest still runs the fixture's
finally block and stops the nodes, nginx and Garage instead of leaving
them running."""

import signal


def _interrupt(signum, frame):
    raise KeyboardInterrupt(f"signal {signum}")


signal.signal(signal.SIGTERM, _interrupt)
