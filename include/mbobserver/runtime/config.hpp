// The "publish" and "runtime" sections of the daemon's configuration file
// (docs/configuration.md). Each reader takes a JsonReader of its section, applies the
// documented defaults for absent keys, and throws ConfigError (exit code 2) naming the file and
// the JSON pointer for a wrong type, a value out of range or an unknown key.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "mbobserver/core/json_reader.hpp"

namespace mbo::runtime {

inline constexpr std::uint16_t kDefaultPort = 47800;

struct MulticastOptions {
  int ttl = 1;  // IP_MULTICAST_TTL / IPV6_MULTICAST_HOPS: 1 stays on the local link
  std::string interface;  // outgoing interface: name ("eth0") or IPv4 address; "" = routing table
  bool loopback = true;  // IP_MULTICAST_LOOP: deliver to listeners on this host too
};

struct PublishConfig {
  bool enabled = true;
  std::string address = "127.0.0.1";  // IPv4 or IPv6 literal, unicast or multicast
  std::uint16_t port = kDefaultPort;
  double rate_hz = 100;  // at most this many estimate datagrams per second
  double status_period_s = 1.0;  // one status datagram per period
  MulticastOptions multicast;  // used only when `address` is a multicast group
};

struct RuntimeConfig {
  double step_s = 0.002;  // estimator fixed step
  int realtime_priority = 0;  // 0: normal scheduling; 1..99: SCHED_FIFO
  bool lock_memory = false;  // mlockall(MCL_CURRENT | MCL_FUTURE)
  std::size_t queue_capacity = 8192;  // measurements, I/O -> estimator
  std::size_t estimate_queue_capacity = 256;  // estimate records, estimator -> I/O
  bool watchdog = true;  // feed systemd's watchdog when WatchdogSec= is set
  // Replay (LogTimeline): a forward jump of the log's time beyond this is a new time base, s
  double max_time_gap_s = 3.0;
  // Replay: frames out of order by up to this are taken as they come; beyond it a lone frame
  // ahead is dropped and a log going back is shifted forward, s
  double max_time_disorder_s = 0.1;
};

PublishConfig read_publish_config(const JsonReader& section);
RuntimeConfig read_runtime_config(const JsonReader& section);

}  // namespace mbo::runtime
