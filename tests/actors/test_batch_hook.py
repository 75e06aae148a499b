"""``EventSourcedActor``'s group-commit hook (``batchable`` / ``receive_batch``) without an actor
system: runs of consecutive batchable stashed messages go to ``receive_batch`` in arrival order, a
non-batchable message ends the run, and a ``receive_batch`` that hands everything back cannot make
the replay loop forever (the first message is then replayed alone)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from actors.base import EventSourcedActor


@dataclass(frozen=True)
class Cmd:
    n: int
    batchable: bool = True


class Toy(EventSourcedActor):
    def __init__(self, give_back: bool = False) -> None:
        super().__init__()
        self.log: list[Any] = []
        self.give_back = give_back

    def batchable(self, msg: Any) -> bool:
        return isinstance(msg, Cmd) and msg.batchable

    def receive_batch(self, batch: list[tuple[Any, Any]]) -> list[tuple[Any, Any]]:
        if self.give_back:
            return list(batch)
        self.log.append(("batch", tuple(m.n for m, _ in batch)))
        return []

    def receiveMsg_Cmd(self, msg: Cmd, sender: Any) -> None:
        self.log.append(("alone", msg.n))


def _replay(actor: Toy, msgs: list[Cmd]) -> list[Any]:
    actor._await(lambda *_: None)  # an append "in flight": messages are stashed
    actor._pending.clear()
    actor._stash.extend((m, None) for m in msgs)
    actor._replay_stash()
    return actor.log


def test_runs_of_batchable_messages_are_handed_over_in_order():
    got = _replay(Toy(), [Cmd(1), Cmd(2), Cmd(3, batchable=False), Cmd(4), Cmd(5, batchable=False), Cmd(6), Cmd(7)])
    assert got == [("batch", (1, 2)), ("alone", 3), ("alone", 4), ("alone", 5), ("batch", (6, 7))]


def test_a_batch_handed_back_whole_is_replayed_one_by_one():
    assert _replay(Toy(give_back=True), [Cmd(1), Cmd(2), Cmd(3)]) == [("alone", 1), ("alone", 2), ("alone", 3)]
