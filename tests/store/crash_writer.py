"""Child process for the crash test: appends 3-event transactions in a loop and prints each
committed result as ``<stream> <last_version> <last_position>`` once ``append`` returned."""

from __future__ import annotations

import sys

from events import new_event
from store.event_log import ANY, open_event_log
from tests.events.sample import Noted


def main(url: str, writer: str) -> None:
    log = open_event_log(url)
    i = 0
    while True:
        stream = f"{writer}-{i % 7}"
        res = log.append(stream, [new_event(Noted(i, "x" * 200)) for _ in range(3)], ANY)
        sys.stdout.write(f"{stream} {res.last_version} {res.last_position}\n")
        sys.stdout.flush()
        i += 1


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
