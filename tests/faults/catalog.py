"""Every fault scenario by name: what CI runs once and ``benchmarks.faults`` randomizes."""

from __future__ import annotations

from groups import coordinator_failover, group_churn
from scenarios import (
    Scenario,
    clean_stop_during_announcement,
    controller_kill,
    follower_partition,
    jepsen_2013,
    leader_cut_from_zookeeper,
    leader_kill,
    leader_pause,
    preferred_leader_returns,
    reassignment_under_load,
    retention_under_load,
    torn_tail,
    unclean_control,
    whole_cluster_crash,
    zookeeper_blip,
)

SCENARIOS: dict[str, Scenario] = {s.name: s for s in [
    Scenario("F1", "repeated leader SIGKILL and restart", leader_kill),
    Scenario("F2", "controller SIGKILL", controller_kill),
    Scenario("F3", "Jepsen-2013: isolate the followers, then kill the leader", jepsen_2013),
    Scenario("F3-unclean", "negative control: F3 with unclean election, min.insync=1",
             unclean_control, {"unclean.leader.election.enable": "true",
                               "min.insync.replicas": "1"}, expect_loss=True),
    Scenario("F4", "SIGSTOP the leader past the session timeout", leader_pause),
    Scenario("F5", "partitioned or slow follower: ISR shrinks, then expands",
             follower_partition),
    Scenario("F6", "torn segment tail after SIGKILL", torn_tail),
    Scenario("F8", "whole-cluster SIGKILL, random restart order, fsync per message",
             whole_cluster_crash, {"log.flush.interval.messages": "1"}),
    Scenario("F9", "leader cut from ZooKeeper, not from clients", leader_cut_from_zookeeper),
    Scenario("F11", "consumer group churn with a zombie's commit", group_churn),
    Scenario("F12", "group coordinator SIGKILL: committed offsets survive",
             coordinator_failover),
    Scenario("F13", "preferred leader returns", preferred_leader_returns,
             {"auto.leader.rebalance.enable": "true",
              "leader.imbalance.check.interval.seconds": "1",
              "leader.imbalance.per.broker.percentage": "0"}),
    Scenario("F14", "retention under load never deletes above the high watermark",
             retention_under_load, {"log.retention.check.interval.ms": "300"},
             {"segment.bytes": "10000", "retention.bytes": "10000"}),
    Scenario("F15", "clean stop and quick restart during the controller's announcement",
             clean_stop_during_announcement),
    Scenario("F16", "ZooKeeper restarted for 3 s, then a new topic, leader and controller "
             "SIGKILL", zookeeper_blip, {"zookeeper.session.timeout.ms": "10000"}),
    Scenario("F17", "reassignment under load, with a leader SIGKILL in the middle",
             reassignment_under_load),
]}
