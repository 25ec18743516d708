// The GNSS latency, learned from the lag between the receiver's velocity and the model's (issue
// 18). A receiver's fix and velocity describe the car some 50-200 ms before they reach the bus;
// at 30 m/s a latency known to 10 ms is a fix 0.3 m along the track.
//
// Why not a random-walk state of the error state (as this was first built): at constant
// velocity a delay is exactly an offset along the path (r(t - tau) = r - tau v), so the filter's
// latency and along-track position walk together with whatever else is wrong, and the filter
// stays sure of both (the mixed drive's highway: tau 0.096 -> 0.077 s, position 0.6 m off with
// a sigma of 0.01 m). Here the latency is found where it shows, in when the velocity changes:
// for each candidate lag tau_j on a grid, the cost
//   J_j = sum_i w_i (v_gnss(t_i) x m_ij)^2 / sigma_v^2 + (tau_j - tau_0)^2 / sigma_0^2,
//   m_ij = v_model(t_i - tau_j) / |v_model(t_i - tau_j)|,
// over the receiver's velocity samples (w_i fading over `memory_s`, the prior never fading) is
// the least-squares misfit across the path of that lag, and exp(-J/2) the posterior over the
// grid: its mean and spread are the estimate and its sigma while it is broader than two lags
// (a few samples give a cost with several dips), and once it is sharper the minimum refined by
// a parabola and its curvature (J = (tau - tau_hat)^2 / sigma^2 + const). The
// model's velocity is the observer's own, kept over the last two seconds in a ring buffer; its
// direction is the gyro's heading. At constant velocity, or straight ahead, every lag fits
// alike: the estimate stays where it was and its sigma grows as the evidence fades. The filter
// fuses each fix and velocity at its own time (the rows' lag: sample age + latency, to second
// order in the position) and *considers* the latency as a sensor parameter with this estimate
// and sigma (ErrorEkf::set_learning): never moved by the rows, but its uncertainty correlated
// over the fixes, as a latency error is.
#pragma once

#include <vector>

namespace mbo::est::aiding {

struct LatencyEstimatorConfig {
  double initial = 0;  // s: the configured latency, the prior's centre
  // s: the prior's 1-sigma, the largest the estimate's may be (receivers' latencies span
  // 0-0.3 s: 0.1 about latency_s 0 covers most)
  double initial_std = 0.1;
  double min = 0, max = 0.5;  // s: the lags searched
  double resolution = 0.002;  // s between candidate lags
  double memory_s = 600;  // the evidence fades over this (e-folding), so a new latency is followed
  double min_speed = 1;  // m/s: slower samples say nothing of a lag (both velocities near 0)
  double velocity_std = 0.1;  // m/s: the receiver's velocity noise, per component
  // s: how long the misfits are taken to last until their batch means can tell (0: independent)
  double early_correlation_s = 1.0;
};

// The model's antenna velocity (east, north) at each step of the last `capacity` steps.
class VelocityHistory {
 public:
  explicit VelocityHistory(int capacity = 0);
  void clear() { n_ = 0; }
  void push(double t, double ve, double vn);
  // Linear interpolation at t; false when t is outside what is kept.
  bool at(double t, double& ve, double& vn) const;
  bool empty() const { return n_ == 0; }
  double newest_t() const;

 private:
  struct Entry {
    double t, ve, vn;
  };
  const Entry& nth(int i) const;  // 0: the oldest kept
  std::vector<Entry> ring_;
  int head_ = 0, n_ = 0;  // next slot to write, entries kept
};

class LatencyEstimator {
 public:
  explicit LatencyEstimator(const LatencyEstimatorConfig& c = {});
  // A velocity sample of the receiver stamped ts (east, north), against the model's history.
  void observe(double ts, double ve, double vn, const VelocityHistory& model);
  double value() const { return value_; }
  double std() const { return std_; }
  // A calibration restored: the prior is centred on `value` with 1-sigma `std` (never above
  // initial_std); the evidence so far is dropped.
  void restore(double value, double std);
  // The samples' weight so far (each counts 1, fading over memory_s).
  double evidence() const { return weight_; }

 private:
  void estimate();
  LatencyEstimatorConfig c_;
  // per lag: sum of w r^2 / sigma_v^2 and of w r |g| / sigma_v^2 (r the misfit across the
  // path); and sum of w |g|^2 / sigma_v^2 (a heading error's share, the same at every lag)
  std::vector<double> data_, rv_;
  double vv_ = 0;
  std::vector<double> prior_;  // (tau_j - tau_0)^2 / sigma_0^2
  double value_ = 0, std_ = 0, last_t_ = -1, weight_ = 0;
  // the misfits' batch means: faded sums over closed blocks of (sum r)^2 and sum r^2, and the
  // open block's sums (r in units of the receiver's velocity noise)
  double between_ = 0, within_ = 0, block_sum_ = 0, block_sq_ = 0, block_start_ = -1;
  int block_n_ = 0, blocks_ = 0;
  double closed_samples_ = 0;  // samples in the closed blocks (their mean size)
};

}  // namespace mbo::est::aiding
