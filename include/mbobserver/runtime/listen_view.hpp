// mbobserver-listen --watch: the screen's text, from the newest estimate and status datagram
// (docs/interfaces.md "mbobserver-listen"). A pure function, so that a test can look at the
// view without a terminal; the program only positions the cursor and clips to the window.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace mbo::runtime {

struct WatchInput {
  unsigned port = 0;
  const nlohmann::ordered_json* estimate = nullptr;  // the newest estimate datagram, or none yet
  const nlohmann::ordered_json* status = nullptr;  // the newest status datagram, or none yet
  double estimate_age_s = 0, status_age_s = 0;  // since each arrived (steady clock)
  std::uint64_t estimates = 0, statuses = 0, invalid = 0;  // datagrams received so far
  double stale_after_s = 1.0;  // no datagram for this long: the view says STALE
};

// ASCII lines, at most 104 columns wide. Angles in degrees (the datagram's radians
// converted), other quantities in the datagram's units. A value is followed by "+-" and its
// 1-sigma when the estimate has one; a '!' after a value marks an output group that
// health.validity says is not valid; "--" is a null (non-finite) value.
std::vector<std::string> render_watch(const WatchInput& in);

}  // namespace mbo::runtime
