#include "mbobserver/estimation/aiding/aiding.hpp"

#include <algorithm>

namespace mbo::est::aiding {

void SourceHealth::account(const UpdateResult& u) {
  if (u.accepted)
    ++published_.fused;
  else
    ++published_.rejected;
  step_largest_ratio_ = std::max(step_largest_ratio_, u.test_ratio);
}

void SourceHealth::update(double t) {
  published_.age_ms = last_sample_t_ < 0 ? -1 : (t - last_sample_t_) * 1000;
  published_.timed_out = last_sample_t_ < 0 || t - last_sample_t_ > timeout_s_;
  published_.test_ratio = kRatioKept * published_.test_ratio + kRatioNew * step_largest_ratio_;
  step_largest_ratio_ = 0;
}

}  // namespace mbo::est::aiding
