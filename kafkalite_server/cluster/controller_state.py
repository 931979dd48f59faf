"""Which role a broker plays toward the controller, as a sans-IO state machine.

Every broker runs one. All transitions are in :data:`TRANSITIONS`; the driver
(:mod:`controller`) feeds events and carries out the returned actions (ZooKeeper calls,
starting or stopping the controller's work). Unknown (state, event) pairs raise, so a
forgotten case fails loudly in tests instead of drifting.
"""

from __future__ import annotations

import enum


class Role(enum.Enum):
    STARTING = "starting"      # not registered yet
    CANDIDATE = "candidate"    # registered, running for /controller
    FOLLOWER = "follower"      # another broker is the controller; watching /controller
    ACTIVE = "active"          # this broker is the controller
    STOPPED = "stopped"        # shut down: nothing more happens


class Event(enum.Enum):
    REGISTERED = "registered"              # /brokers/ids/<id> created
    ELECTION_WON = "election won"          # /controller created, epoch incremented
    ELECTION_LOST = "election lost"        # another broker holds /controller
    CONTROLLER_GONE = "controller gone"    # watch: /controller deleted
    FENCED = "fenced"                      # a controller write hit a newer epoch
    SESSION_LOST = "session lost"          # ZooKeeper session expired
    SHUTDOWN = "shutdown"


class Action(enum.Enum):
    RUN_FOR_CONTROLLER = "run for controller"
    WATCH_CONTROLLER = "watch controller"
    START_CONTROLLING = "start controlling"
    STOP_CONTROLLING = "stop controlling"
    RESIGN = "resign"                      # delete /controller if still ours
    RECONNECT = "reconnect"                # new session, register again


R, E, A = Role, Event, Action

TRANSITIONS: dict[tuple[Role, Event], tuple[Role, tuple[Action, ...]]] = {
    (R.STARTING, E.REGISTERED): (R.CANDIDATE, (A.RUN_FOR_CONTROLLER,)),
    (R.STARTING, E.SESSION_LOST): (R.STARTING, (A.RECONNECT,)),
    (R.STARTING, E.SHUTDOWN): (R.STOPPED, ()),
    (R.STARTING, E.CONTROLLER_GONE): (R.STARTING, ()),
    (R.CANDIDATE, E.ELECTION_WON): (R.ACTIVE, (A.START_CONTROLLING,)),
    (R.CANDIDATE, E.ELECTION_LOST): (R.FOLLOWER, (A.WATCH_CONTROLLER,)),
    (R.CANDIDATE, E.CONTROLLER_GONE): (R.CANDIDATE, (A.RUN_FOR_CONTROLLER,)),
    (R.CANDIDATE, E.SESSION_LOST): (R.STARTING, (A.RECONNECT,)),
    (R.CANDIDATE, E.SHUTDOWN): (R.STOPPED, ()),
    (R.FOLLOWER, E.CONTROLLER_GONE): (R.CANDIDATE, (A.RUN_FOR_CONTROLLER,)),
    (R.FOLLOWER, E.SESSION_LOST): (R.STARTING, (A.RECONNECT,)),
    (R.FOLLOWER, E.SHUTDOWN): (R.STOPPED, ()),
    (R.ACTIVE, E.CONTROLLER_GONE): (R.CANDIDATE, (A.STOP_CONTROLLING, A.RUN_FOR_CONTROLLER)),
    (R.ACTIVE, E.FENCED): (R.CANDIDATE, (A.STOP_CONTROLLING, A.RUN_FOR_CONTROLLER)),
    (R.ACTIVE, E.SESSION_LOST): (R.STARTING, (A.STOP_CONTROLLING, A.RECONNECT)),
    (R.ACTIVE, E.SHUTDOWN): (R.STOPPED, (A.STOP_CONTROLLING, A.RESIGN)),
    (R.STOPPED, E.SESSION_LOST): (R.STOPPED, ()),
    (R.STOPPED, E.SHUTDOWN): (R.STOPPED, ()),
    (R.STOPPED, E.CONTROLLER_GONE): (R.STOPPED, ()),
}
"""(role, event) -> (next role, actions in order)."""

IGNORED = frozenset({
    (R.FOLLOWER, E.ELECTION_LOST), (R.FOLLOWER, E.FENCED), (R.CANDIDATE, E.FENCED),
    (R.STOPPED, E.ELECTION_WON), (R.STOPPED, E.ELECTION_LOST), (R.STOPPED, E.FENCED),
    (R.STARTING, E.ELECTION_WON), (R.STARTING, E.ELECTION_LOST), (R.STARTING, E.FENCED),
    (R.STOPPED, E.REGISTERED),
    (R.ACTIVE, E.ELECTION_LOST), (R.FOLLOWER, E.ELECTION_WON),
})
"""Late answers of a superseded step (e.g. an election result after a shutdown): no-ops."""

IMPOSSIBLE = frozenset({
    (R.CANDIDATE, E.REGISTERED), (R.FOLLOWER, E.REGISTERED), (R.ACTIVE, E.REGISTERED),
    (R.ACTIVE, E.ELECTION_WON),
})
"""Pairs that mean a bug in the driver (registering twice, winning twice): they raise."""


class ControllerRole:
    def __init__(self) -> None:
        self.role = Role.STARTING

    def on(self, event: Event) -> tuple[Action, ...]:
        key = (self.role, event)
        if key in IGNORED:
            return ()
        if key not in TRANSITIONS:
            raise ValueError(f"no transition for {event.value!r} in role {self.role.value!r}")
        self.role, actions = TRANSITIONS[key]
        return actions
