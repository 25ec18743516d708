#include "mbobserver/runtime/config.hpp"

#include <algorithm>
#include <cctype>

#include "mbobserver/runtime/asio.hpp"

namespace mbo::runtime {

namespace {

bool looks_like_interface_name(const std::string& s) {
  // IFNAMSIZ - 1 characters, none of them '/', ':' or whitespace (dev_valid_name() in
  // net/core/dev.c).
  return !s.empty() && s.size() < 16 && s != "." && s != ".." && std::none_of(s.begin(), s.end(), [](unsigned char c) {
    return c == '/' || c == ':' || std::isspace(c) || !std::isprint(c);
  });
}

}  // namespace

PublishConfig read_publish_config(const JsonReader& section) {
  PublishConfig c;
  c.enabled = section.boolean("enabled", c.enabled);
  c.address = section.string("address", c.address);
  boost::system::error_code ec;
  const auto address = boost::asio::ip::make_address(c.address, ec);
  if (ec) section.at("address").fail("expected an IPv4 or IPv6 address (no host names), got \"" + c.address + "\"");
  c.port = static_cast<std::uint16_t>(section.integer("port", 1, 65535, c.port));
  c.rate_hz = section.number_in("rate_hz", 0.1, 10000, c.rate_hz);
  c.status_period_s = section.number_in("status_period_s", 0.05, 3600, c.status_period_s);
  if (auto m = section.find("multicast")) {
    c.multicast.ttl = static_cast<int>(m->integer("ttl", 0, 255, c.multicast.ttl));
    c.multicast.interface = m->string("interface", "");
    c.multicast.loopback = m->boolean("loopback", c.multicast.loopback);
    if (!c.multicast.interface.empty()) {
      const auto ifaddr = boost::asio::ip::make_address(c.multicast.interface, ec);
      if (ec ? !looks_like_interface_name(c.multicast.interface) : !ifaddr.is_v4())
        m->at("interface").fail("expected an interface name or an IPv4 address, got \"" + c.multicast.interface + "\"");
      if (!ec && address.is_v6()) m->at("interface").fail("an IPv6 group needs an interface name, not an address");
    }
    m->finish();
  }
  section.finish();
  return c;
}

RuntimeConfig read_runtime_config(const JsonReader& section) {
  RuntimeConfig c;
  c.step_s = section.number_in("step_s", 1e-4, 1.0, c.step_s);
  // sched_get_priority_max(SCHED_FIFO) is 99 on Linux (sched(7)).
  c.realtime_priority = static_cast<int>(section.integer("realtime_priority", 0, 99, c.realtime_priority));
  c.lock_memory = section.boolean("lock_memory", c.lock_memory);
  c.queue_capacity = static_cast<std::size_t>(
      section.integer("queue_capacity", 16, 1 << 20, static_cast<long long>(c.queue_capacity)));
  c.estimate_queue_capacity = static_cast<std::size_t>(
      section.integer("estimate_queue_capacity", 2, 1 << 16, static_cast<long long>(c.estimate_queue_capacity)));
  c.watchdog = section.boolean("watchdog", c.watchdog);
  // A gap of a day is a new drive, not a gap; the disorder is below the gap, or a jump would
  // be taken for disorder.
  c.max_time_gap_s = section.number_in("max_time_gap_s", 0.01, 86400, c.max_time_gap_s);
  c.max_time_disorder_s = section.number_in("max_time_disorder_s", 0, 10, c.max_time_disorder_s);
  if (!(c.max_time_disorder_s < c.max_time_gap_s))
    section.at("max_time_disorder_s").fail("must be below max_time_gap_s (" + std::to_string(c.max_time_gap_s) + ")");
  section.finish();
  return c;
}

}  // namespace mbo::runtime
