"""A broker's membership of its cluster: registration, controller election, and (while
elected) running the controller, over whichever coordination store the cluster runs on
(ZooKeeper, the local store of a standalone broker, EmbeddedCluster's in-memory one).

Registration is the ephemeral ``/brokers/ids/<id>``: a second broker with the same id
fails to start with :class:`BrokerIdInUseError`. Election creates the ephemeral
``/controller`` and bumps ``/controller_epoch`` in one conditional batch; losers watch
``/controller`` and run again when it goes. The role changes follow the table in
:mod:`controller_state`; this module only carries out its actions. A clean stop first asks
the controller (ControlledShutdown) to move this broker's leaderships away.

Every step that touches the store (the role machine's actions, the controller's work,
watch events) runs on the broker's coordination worker
(:class:`~kafkalite_server.cluster.store_worker.StoreWorker`), never on the event loop:
the loop awaits a step's result or hands it over and goes on serving.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import threading
import time
from collections.abc import Callable

from kafkalite.errors import KafkaError
from kafkalite.protocol import ApiKey
from kafkalite.protocol.errors import NotControllerError
from kafkalite_server.cluster import metadata_layout as layout
from kafkalite_server.cluster.active_controller import Controller, FencedError
from kafkalite_server.cluster.broker_channel import NetworkChannel, call
from kafkalite_server.cluster.broker_endpoint import BrokerEndpoint
from kafkalite_server.cluster.controller_state import Action, ControllerRole, Event, Role
from kafkalite_server.cluster.coordination import (
    BadVersionError,
    ConnectionLossError,
    Coordination,
    CoordinationError,
    Create,
    NodeExistsError,
    NoNodeError,
    SessionExpiredError,
    SetData,
)
from kafkalite_server.cluster.inbox import ControllerInbox, InboxChannel
from kafkalite_server.cluster.messages import NO_BROKER_EPOCH, BrokerChannel, all_delivered
from kafkalite_server.cluster.meta_properties import new_cluster_id
from kafkalite_server.cluster.store_worker import StoreWorker
from kafkalite_server.config import BrokerConfig
from kafkalite_server.log.log import wall_clock_ms
from kafkalite_server.security.inter_broker import peer_security

log = logging.getLogger(__name__)

CONTROLLED_SHUTDOWN_VERSION = 2
"""The version that carries the stopping broker's epoch (KIP-380)."""
EPOCH_READ_RETRY_S = 0.2


class BrokerIdInUseError(KafkaError):
    """Another live broker is registered with this broker.id."""


class ClusterMembership:
    def __init__(self, config: BrokerConfig, connect: Callable[[], Coordination], *,
                 release: Callable[[], None] = lambda: None,
                 now_ms: Callable[[], int] = wall_clock_ms) -> None:
        """``connect()`` opens a session; ``release()`` closes the store behind it once
        the broker has left (the local store's files; nothing for ZooKeeper, whose
        sessions are their own clients)."""
        self.config = config
        self.broker_id = config.broker_id
        self._connect = connect
        self._release = release
        self._now_ms = now_ms
        self._peer_security = peer_security(config)
        self.store: Coordination | None = None
        self.role = ControllerRole()
        self.active_controller: Controller | None = None
        self.controller_epoch = -1
        self._epoch_version = -1
        self.broker_epoch = NO_BROKER_EPOCH
        """The czxid of this broker's registration: controller messages stamped with an
        older one were meant for an earlier incarnation (KIP-380)."""
        self._newest_controller_epoch = 0
        """The highest ``/controller_epoch`` read from the store."""
        self.worker = StoreWorker(f"coordination-{self.broker_id}")
        self._endpoint: BrokerEndpoint | None = None
        self._inbox: ControllerInbox | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._rebalance: asyncio.Task[None] | None = None

    # ------------------------------------------------------------------ start and stop

    def open(self) -> str:
        """Connects, creates the top-level nodes, and returns the cluster id (created on
        the first start of the cluster)."""
        store = self._open_session()
        try:
            data, _stat = store.get(layout.CLUSTER_ID)
        except NoNodeError:
            with contextlib.suppress(NodeExistsError):
                store.create(layout.CLUSTER_ID, layout.encode_cluster_id(new_cluster_id()))
            data, _stat = store.get(layout.CLUSTER_ID)
        return layout.decode_cluster_id(data)

    def _open_session(self) -> Coordination:
        store = self._connect()
        for path in layout.PERSISTENT_PATHS:
            store.ensure_path(path)
        store.on_session_lost(lambda: self._later(lambda: self._on(Event.SESSION_LOST)))
        self.store = store
        return store

    def bind(self, loop: asyncio.AbstractEventLoop) -> None:
        """Where store calls go from now on: off ``loop`` (its own thread) unless the store
        never blocks."""
        assert self.store is not None
        self._loop = loop
        self.worker.bind(loop, threaded=self.store.calls_block)

    async def join(self, endpoint: BrokerEndpoint, inbox: ControllerInbox) -> None:
        self._endpoint = endpoint
        self._inbox = inbox
        if self.store is None:
            self.open()
        self.bind(asyncio.get_running_loop())
        await self.worker.call(self._join)
        assert self._loop is not None
        if self.config.auto_leader_rebalance_enable:
            self._rebalance = self._loop.create_task(self._rebalance_periodically())

    def _join(self) -> None:
        self._register()
        self._on(Event.REGISTERED)

    def _register(self) -> None:
        """Creates the registration. One still held by another session (this broker's
        previous incarnation, restarted before ZooKeeper expired its session) is waited
        for, up to twice ``zookeeper.session.timeout.ms``: ZooKeeper expires a session on
        the first tick after its timeout, and a busy server later still, so waiting only
        the timeout itself refused a restart whose old session was about to go. Only a
        registration that outlives that means another live broker has this id."""
        assert self.store is not None and self._endpoint is not None
        path = layout.broker_path(self.broker_id)
        deadline = time.monotonic() + 2 * self.config.zookeeper_session_timeout_ms / 1000
        while True:
            try:
                self.store.create(path, layout.encode_broker(self._endpoint, self._now_ms()),
                                  ephemeral=True)
                break
            except NodeExistsError:
                pass
            gone = threading.Event()
            stat = self.store.exists(path, watch=functools.partial(_set_on_event, gone))
            if stat is not None and stat.ephemeral_owner == self.store.session_id:
                break  # ours: the create applied, and was retried across a blip
            if stat is None:
                continue
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise self._id_in_use()
            log.warning("broker %d: %s is still held by session %#x (an earlier incarnation "
                        "whose session has not expired yet?); waiting up to %.1f s for it "
                        "to go", self.broker_id, path, stat.ephemeral_owner, remaining)
            gone.wait(remaining)
        stat = self.store.exists(path)
        if stat is not None:
            self.broker_epoch = stat.creation_id
            log.info("broker %d registered with broker epoch %d", self.broker_id,
                     self.broker_epoch)

    def _id_in_use(self) -> BrokerIdInUseError:
        return BrokerIdInUseError(
            f"broker.id {self.broker_id} is already registered at "
            f"{layout.broker_path(self.broker_id)} by another live broker; give each broker "
            "its own broker.id")

    # ------------------------------------------------------------------ epochs

    async def controller_epoch_exists(self, epoch: int) -> bool:
        """Whether ``epoch`` is at most the store's ``/controller_epoch``: re-read (off
        the loop) only for an epoch above the newest read so far, which a new controller
        sends once and anyone sending an absurd epoch every time."""
        if epoch <= max(self._newest_controller_epoch, self.controller_epoch):
            return True
        while True:
            try:
                current = await self.worker.call(self._read_controller_epoch)
                break
            except ConnectionLossError:  # the request waits until it can be checked
                await asyncio.sleep(EPOCH_READ_RETRY_S)
            except CoordinationError as exc:
                log.warning("broker %d: cannot check controller epoch %d: %s",
                            self.broker_id, epoch, exc)
                return False
        self._newest_controller_epoch = max(self._newest_controller_epoch, current)
        return epoch <= current

    def _read_controller_epoch(self) -> int:
        try:
            return layout.decode_epoch(self.require_store().get(layout.CONTROLLER_EPOCH)[0])
        except NoNodeError:
            return 0

    async def controlled_shutdown(self, broker_id: int,
                                  broker_epoch: int) -> list[tuple[str, int]]:
        controller = self.active_controller
        if controller is None:
            raise NotControllerError(f"broker {self.broker_id} is not the controller")
        return await self.worker.call(controller.controlled_shutdown, broker_id, broker_epoch)

    async def hand_over(self, node_id: int) -> None:
        """A clean stop's first step: leadership moves away (controlled.shutdown.enable)."""
        if self.role.role in (Role.STOPPED, Role.STARTING):
            return
        if self.config.controlled_shutdown_enable:
            await self._controlled_shutdown()

    async def leave(self, node_id: int) -> None:
        """The registration (and a controller's role) ends, once the broker has stopped
        serving and fetching. Bounded by the session timeout: if the worker is still
        waiting on an unreachable ZooKeeper then, the session is closed from here, which
        ends that wait (ZooKeeper drops the session's nodes on its own)."""
        if self._rebalance is not None:
            self._rebalance.cancel()
        if self.role.role is not Role.STOPPED:
            try:
                async with asyncio.timeout(self.config.zookeeper_session_timeout_ms / 1000):
                    await self.worker.call(self._shut_down)
            except (TimeoutError, CoordinationError) as exc:
                log.warning("broker %d: leaving without ZooKeeper (%s); closing the session",
                            self.broker_id, exc or "no answer within the session timeout")
                await asyncio.to_thread(self._close_store)
        self.worker.close()

    def abandon(self) -> None:
        """Leaves at once, as a crash would: the session ends, nothing is handed over."""
        if self._rebalance is not None:
            self._rebalance.cancel()
        if self.worker.threaded:
            self.worker.submit(self._shut_down)
        else:
            self._shut_down()
        self.worker.close(drop_queued=False)

    def _shut_down(self) -> None:
        self._on(Event.SHUTDOWN)
        self._close_store()

    def _close_store(self) -> None:
        if self.store is not None:
            self.store.close()
        self._release()

    # ------------------------------------------------------------------ role machine

    def _later(self, action: Callable[[], object]) -> None:
        """Runs ``action`` as a step of its own on the coordination worker, after the
        steps before it (watch callbacks come from the store's thread; an action never
        runs inside the step that asked for it)."""
        self.worker.submit(lambda: self._guarded(action))

    def _guarded(self, action: Callable[[], object]) -> None:
        try:
            action()
        except FencedError as exc:
            log.warning("broker %d: %s; stepping down as controller", self.broker_id, exc)
            self._on(Event.FENCED)
        except SessionExpiredError:
            log.warning("broker %d: ZooKeeper session expired", self.broker_id)
        except Exception:
            log.exception("broker %d: cluster event failed", self.broker_id)

    def _on(self, event: Event) -> None:
        for action in self.role.on(event):
            self._do(action)

    def _do(self, action: Action) -> None:
        if action is Action.RUN_FOR_CONTROLLER:
            self._later(self._run_for_controller)
        elif action is Action.WATCH_CONTROLLER:
            self._watch_controller()
        elif action is Action.START_CONTROLLING:
            self._start_controlling()
        elif action is Action.STOP_CONTROLLING:
            if self.active_controller is not None:
                self.active_controller.stop()
                self.active_controller = None
        elif action is Action.RESIGN:
            self._resign()
        elif action is Action.RECONNECT:
            self._later(self._reconnect)

    def _run_for_controller(self) -> None:
        if self.role.role is not Role.CANDIDATE:
            return
        store = self.require_store()
        try:
            data, stat = store.get(layout.CONTROLLER_EPOCH)
        except NoNodeError:
            with contextlib.suppress(NodeExistsError):
                store.create(layout.CONTROLLER_EPOCH, layout.encode_epoch(0))
            data, stat = store.get(layout.CONTROLLER_EPOCH)
        epoch = layout.decode_epoch(data) + 1
        try:
            store.commit([Create(layout.CONTROLLER, layout.encode_controller(self.broker_id,
                                                                     self._now_ms()),
                                 ephemeral=True),
                          SetData(layout.CONTROLLER_EPOCH, layout.encode_epoch(epoch), stat.version)])
        except (NodeExistsError, BadVersionError):
            self._on(Event.ELECTION_LOST)
            return
        self.controller_epoch = epoch
        self._epoch_version = stat.version + 1
        log.info("broker %d is the controller (epoch %d)", self.broker_id, epoch)
        self._on(Event.ELECTION_WON)

    def _watch_controller(self) -> None:
        store = self.require_store()
        if store.exists(layout.CONTROLLER, watch=self._controller_watch) is None:
            self._later(lambda: self._on(Event.CONTROLLER_GONE))

    def _controller_watch(self, event: object) -> None:
        self._later(self._controller_node_event)

    def _controller_node_event(self) -> None:
        store = self.store
        if store is None or self.role.role in (Role.STOPPED, Role.STARTING):
            return
        try:
            stat = store.exists(layout.CONTROLLER, watch=self._controller_watch)
        except CoordinationError:
            return
        if stat is None:
            self._on(Event.CONTROLLER_GONE)

    def _start_controlling(self) -> None:
        store = self.require_store()
        controller = Controller(
            store, self.broker_id, self.controller_epoch, self._epoch_version,
            unclean_election=self.config.unclean_leader_election_enable,
            imbalance_percentage=self.config.leader_imbalance_per_broker_percentage,
            open_channel=self._channel_to, on_change=self._later)
        self.active_controller = controller
        store.exists(layout.CONTROLLER, watch=self._controller_watch)
        self._guarded(controller.start)

    def _channel_to(self, endpoint: BrokerEndpoint) -> BrokerChannel:
        assert self._loop is not None
        if endpoint.node_id == self.broker_id and self._inbox is not None:
            return InboxChannel(self._inbox, self._loop)
        return NetworkChannel(endpoint, self.broker_id, self._peer_security, loop=self._loop,
                              timeout_s=self.config.controller_socket_timeout_ms / 1000)

    def _resign(self) -> None:
        """Deletes ``/controller`` if it is still ours; without a connection there is no
        point waiting: the session's end deletes it all the same."""
        store = self.store
        if store is None or not store.connected:
            return
        try:
            stat = store.exists(layout.CONTROLLER)
            if stat is not None and stat.ephemeral_owner == store.session_id:
                store.delete(layout.CONTROLLER, stat.version)
        except CoordinationError as exc:
            log.info("broker %d: could not resign as controller: %s", self.broker_id, exc)

    def _reconnect(self) -> None:
        if self.role.role is not Role.STARTING:
            return
        log.warning("broker %d: ZooKeeper session lost; registering again", self.broker_id)
        old = self.store
        if old is not None:
            with contextlib.suppress(CoordinationError):
                old.close()
        self._open_session()
        self._register()
        self._on(Event.REGISTERED)

    def require_store(self) -> Coordination:
        if self.store is None:
            raise CoordinationError("not connected to the coordination service")
        return self.store

    # ------------------------------------------------------------------ controlled shutdown

    async def _controlled_shutdown(self) -> None:
        """Asks the controller to move leadership away; retried per Kafka's settings.
        Each attempt is bounded by ``controller.socket.timeout.ms`` and fails at once
        while ZooKeeper is unreachable (no controller can act then), so the whole step
        ends within (retries + 1) x (that timeout + ``controlled.shutdown.retry.
        backoff.ms``), with or without ZooKeeper."""
        attempts = self.config.controlled_shutdown_max_retries + 1
        for attempt in range(attempts):
            try:
                async with asyncio.timeout(self.config.controller_socket_timeout_ms / 1000):
                    remaining = await self._ask_controller_to_release()
            except (OSError, TimeoutError, CoordinationError, KafkaError) as exc:
                log.info("broker %d: controlled shutdown attempt %d failed: %s",
                         self.broker_id, attempt + 1, exc)
                remaining = None
            if remaining == []:
                return
            if attempt + 1 < attempts:
                await asyncio.sleep(self.config.controlled_shutdown_retry_backoff_ms / 1000)
        log.warning("broker %d: stopping without a complete controlled shutdown",
                    self.broker_id)

    async def _ask_controller_to_release(self) -> list[tuple[str, int]] | None:
        if not self.require_store().connected:
            raise ConnectionLossError("ZooKeeper cannot be reached: no controller can move "
                                      "this broker's leaderships now")
        controller = self.active_controller
        if controller is not None:
            # The controller stopping itself: its elections must reach the brokers
            # before its session ends, or the leaderships wait for the next controller.
            remaining = await self.worker.call(controller.controlled_shutdown, self.broker_id,
                                               self.broker_epoch)
            channels = await self.worker.call(lambda: list(controller.channels.values()))
            if not await all_delivered(channels,
                                       self.config.controller_socket_timeout_ms / 1000):
                log.info("broker %d: a broker did not answer the controller's last "
                         "requests before it stopped", self.broker_id)
            return remaining
        endpoint = await self.worker.call(self._controller_endpoint)
        if endpoint is None:
            return None
        response = await call(endpoint, ApiKey.CONTROLLED_SHUTDOWN, CONTROLLED_SHUTDOWN_VERSION,
                              {"broker_id": self.broker_id, "broker_epoch": self.broker_epoch},
                              client_id=f"broker-{self.broker_id}",
                              timeout_s=self.config.controller_socket_timeout_ms / 1000,
                              security=self._peer_security)
        if response["error_code"]:
            return None
        return [(p["topic_name"], p["partition_index"]) for p in response["remaining_partitions"]]

    def _controller_endpoint(self) -> BrokerEndpoint | None:
        store = self.require_store()
        try:
            controller_id = layout.decode_controller(store.get(layout.CONTROLLER)[0])
            return layout.decode_broker(controller_id, store.get(layout.broker_path(controller_id))[0])
        except NoNodeError:
            return None

    # ------------------------------------------------------------------ leader balance

    async def _rebalance_periodically(self) -> None:
        interval = self.config.leader_imbalance_check_interval_seconds
        while True:
            await asyncio.sleep(interval)
            controller = self.active_controller
            if controller is not None:
                self._later(controller.rebalance_leaders)


def _set_on_event(flag: threading.Event, _event: object) -> None:
    flag.set()
