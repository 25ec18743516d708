#include "mbobserver/estimation/aiding/aiding.hpp"

#include <algorithm>
#include <cmath>

namespace mbo::est::aiding {

EstimateConfig read_estimate_config(const JsonReader& section, std::string_view key, const EstimateConfig& d,
                                    double unit) {
  EstimateConfig c = d;
  auto r = section.find(key);
  if (!r) return c;
  c.on = r->boolean("enabled", true);
  c.initial_std = r->positive("initial_std", d.initial_std / unit) * unit;
  c.rate_noise = r->non_negative("plant_noise", d.rate_noise / (unit * unit)) * unit * unit;
  c.min = r->number("min", d.min / unit) * unit;
  c.max = r->number("max", d.max / unit) * unit;
  if (!(c.min < c.max)) r->fail("\"min\" must be below \"max\"");
  r->finish();
  return c;
}

void RowMonitor::update(const UpdateResult& u, double t, const MonitorConfig& c) {
  const double nis = u.variance > 0 ? std::min(u.innovation * u.innovation / u.variance, c.nis_cap) : c.nis_cap;
  // first-order low-pass in time: rows come at their sensor's rate, whatever it is
  const double a = last_t_ < 0 ? 1.0 : 1.0 - std::exp(-std::max(0.0, t - last_t_) / c.nis_time_constant_s);
  nis_ += a * (nis - nis_);
  last_t_ = t;
  sampled_ = true;
  if (u.accepted) {
    const double d =
        last_accepted_t_ < 0 ? 0.0 : std::exp(-std::max(0.0, t - last_accepted_t_) / c.bias_time_constant_s);
    last_accepted_t_ = t;
    w_ = d * w_ + 1;
    w2_ = d * d * w2_ + 1;
    w_nu_ = d * w_nu_ + u.innovation;
    w_s_ = d * w_s_ + u.variance;
    rejected_ = 0;
    rejected_since_ = -1;
    ++accepted_;
  } else {
    accepted_ = 0;
    if (rejected_++ == 0) rejected_since_ = t;
  }
}

double RowMonitor::bias(const MonitorConfig& c) const {
  if (w_ <= 1) return 0;
  // the weighted mean of n samples of variance S has variance S sum(w^2) / sum(w)^2
  const double mean = w_nu_ / w_, se = std::sqrt(w_s_ / w_ * w2_) / w_;
  return std::abs(mean) > c.bias_sigma * se ? std::abs(mean) : 0.0;
}

void SourceHealth::account(int row, const UpdateResult& u, double t) {
  if (u.accepted)
    ++published_.fused;
  else
    ++published_.rejected;
  step_largest_ratio_ = std::max(step_largest_ratio_, u.test_ratio);
  if (row >= 0 && row < kMaxRows) rows_[row].update(u, t, monitor_);
}

void SourceHealth::restart_monitor() {
  for (auto& r : rows_) r.restart(false);
}

void SourceHealth::update(double t) {
  published_.age_ms = last_sample_t_ < 0 ? -1 : (t - last_sample_t_) * 1000;
  published_.timed_out = last_sample_t_ < 0 || t - last_sample_t_ > timeout_s_;
  published_.test_ratio = kRatioKept * published_.test_ratio + kRatioNew * step_largest_ratio_;
  step_largest_ratio_ = 0;
  published_.nis = 0;
  published_.consistent = true;
  for (const auto& r : rows_) {
    published_.nis = std::max(published_.nis, r.nis());
    published_.consistent = published_.consistent && r.consistent(monitor_);
  }
}

}  // namespace mbo::est::aiding
