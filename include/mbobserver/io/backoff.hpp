// Reconnection delays: initial, then doubled after each failure up to a ceiling; reset once a
// connection works. Deterministic (no jitter): one observer per bus, nobody to desynchronise.
#pragma once

#include <algorithm>

namespace mbo::io {

class Backoff {
 public:
  Backoff(double initial_s, double max_s) : initial_(initial_s), max_(std::max(max_s, initial_s)) {}
  double next() {
    const double d = current_ > 0 ? current_ : initial_;
    current_ = std::min(d * 2, max_);
    return d;
  }
  void reset() { current_ = 0; }

 private:
  double initial_, max_;
  double current_ = 0;
};

}  // namespace mbo::io
