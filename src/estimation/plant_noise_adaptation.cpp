#include "mbobserver/estimation/plant_noise_adaptation.hpp"

#include <algorithm>
#include <cmath>

namespace mbo::est {

void PlantNoiseAdaptation::restart() {
  scale_ = 1;
  mean_ = 1;
  last_row_t_ = -1;
  rows_ = 0;
  bias_.fill(0);
  row_n_.fill(0);
  failing_ = false;
  failing_s_ = 0;  // the floor stays: a reset does not make the model its car
}

void PlantNoiseAdaptation::observe(int row, double innovation, double variance, double t) {
  if (!(variance > 0) || row < 0 || row >= kRows) return;
  double nis = innovation * innovation / variance;
  if (!std::isfinite(nis)) nis = c_.nis_cap;
  nis = std::min(nis, c_.nis_cap);
  // Exponential means over about window_samples rows; until they have that many, the plain
  // means of those they have (a start holds no memory of a consistent past).
  if (row < kGnssRows) {
    // counts stop at the window: beyond it they change nothing (and a daemon's months of rows
    // would overflow them)
    rows_ = std::min(rows_ + 1, kGnssRows * c_.window_samples);
    mean_ += (nis - mean_) / rows_;
  }
  const int per_row = window(row);
  row_n_[row] = std::min(row_n_[row] + 1, per_row);
  bias_[row] += (std::copysign(std::sqrt(nis), innovation) - bias_[row]) / row_n_[row];
  last_row_t_ = t;
}

double PlantNoiseAdaptation::bias_test() const {
  // The standard error of an exponential mean of weight a over unit white samples is
  // sqrt(a / (2 - a)); of a plain mean of n, 1 / sqrt(n).
  double worst = 0;
  for (int r = 0; r < kRows; ++r) {
    if (row_n_[r] == 0) continue;
    const int per_row = window(r);
    const double se = row_n_[r] < per_row ? 1 / std::sqrt(row_n_[r]) : std::sqrt(1.0 / (2 * per_row - 1));
    worst = std::max(worst, std::abs(bias_[r]) / se);
  }
  return worst;
}

void PlantNoiseAdaptation::advance(double t, double dt, bool unchecked) {
  if (!c_.on) return;
  if (floor_ < c_.min_scale) floor_ = c_.min_scale;
  const bool evidence = last_row_t_ >= 0 && t - last_row_t_ <= c_.evidence_s && rows_ >= kGnssRows * c_.window_samples;
  const bool consistent = evidence && mean_ <= c_.nis_limit && bias_test() <= c_.bias_sigma;
  // the floor: raised where the model was last seen to drift, forgotten slowly
  // (a failure at the configured noise says nothing of a smaller one: a start's transient)
  if (evidence && !consistent && !failing_ && scale_ < 0.5)
    floor_ = std::max(floor_, std::min(1.0, c_.floor_gain * scale_));
  failing_ = evidence && !consistent;
  // Inconsistent for sustained_s on end, at any lambda: the model is not this car (a start's
  // transient is shorter); the configured noise is the floor until that is forgotten.
  failing_s_ = failing_ ? failing_s_ + dt : 0;
  if (failing_s_ >= c_.sustained_s) floor_ = 1;
  floor_ = std::max(c_.min_scale, floor_ * std::exp(-dt / c_.floor_memory_s));
  double log_scale = std::log(scale_);
  if (consistent)
    log_scale -= dt / c_.fall_s;
  else
    log_scale += dt / c_.rise_s;
  scale_ = unchecked ? 1.0 : std::clamp(std::exp(log_scale), std::min(floor_, 1.0), 1.0);
}

}  // namespace mbo::est
