// The plant noise that adapts to the car (covariance matching on the GNSS innovations). The
// configured `plant_noise` of the chassis must cover a car that differs from its vehicle file
// (a load, worn tyres): on a car that is its file it makes the filter pessimistic (the lane
// change's lateral velocity NEES 0.14, tyre Fy 0.06-0.13). A fixed smaller value would make the
// differing cars optimistic. So the noise of the chosen coordinates is scaled by lambda in
// [min_scale, 1]: it falls slowly while the GNSS innovations are consistent with the filter's
// own variance (their mean NIS at most `nis_limit`), and rises fast when they are not, as
// Mehra's covariance matching (Mehra 1972; Mohamed & Schwarz 1999) with a one-sided test.
// A model that is its car keeps the innovations white at any lambda, so lambda reaches its
// floor; a model that is not shows its drift in the position innovations as soon as lambda
// is too small for it, and lambda settles where the drift just hides in the noise. Without
// fixes there is no evidence: lambda returns to 1 (the configured noise) at the rise rate.
#pragma once

#include <array>
#include <vector>

namespace mbo::est {

struct PlantNoiseAdaptationConfig {
  bool on = false;
  std::vector<int> coordinates;  // observed indices whose acceleration noise is scaled
  double min_scale = 0.01;  // the smallest lambda
  double nis_limit = 1.5;  // mean NIS of the GNSS rows above which lambda rises
  int window_samples = 50;  // the means' memory, in samples of each row (1 s at 50 Hz)
  double fall_s = 5;  // lambda falls by e in this time while the innovations are consistent
  double rise_s = 0.25;  // and rises by e in this time while they are not
  double evidence_s = 1;  // without a GNSS row for this long, lambda rises
  double nis_cap = 25;  // one innovation counts at most this much (a gate rejection: the cap)
  // A row whose normalised innovations nu / sqrt(S) have a mean this many of its own standard
  // errors from zero shows a drift the NIS alone misses (a bias of 0.4 sigma moves the NIS
  // by 0.16, within its noise, but the mean of 50 samples by 4 standard errors).
  double bias_sigma = 4;
  // Each time the test fails, lambda's floor rises to floor_gain times the lambda it failed at,
  // and it forgets that over floor_memory_s (e-folding): a model that drifts below some noise
  // finds it once, rather than dropping to min_scale and drifting again each fall.
  double floor_gain = 10;
  double floor_memory_s = 60;
};

class PlantNoiseAdaptation {
 public:
  explicit PlantNoiseAdaptation(const PlantNoiseAdaptationConfig& c = {}) : c_(c) {}
  // After a start or a reset of the model: the innovations so far say nothing of the new one.
  void restart();
  static constexpr int kRows = 4;  // GNSS position east, north; velocity east, north
  // One GNSS row's (0..kRows-1) innovation nu and its variance S at time t.
  void observe(int row, double innovation, double variance, double t);
  // End of a step at t, dt after the last: lambda moves.
  void advance(double t, double dt);
  double scale() const { return scale_; }
  double floor() const { return floor_; }
  double mean_nis() const { return mean_; }
  // The largest of the rows' mean normalised innovation, in standard errors of that mean.
  double bias_test() const;
  const PlantNoiseAdaptationConfig& config() const { return c_; }

 private:
  PlantNoiseAdaptationConfig c_;
  double scale_ = 1, mean_ = 1, last_row_t_ = -1, floor_ = 0;
  bool failing_ = false;
  int rows_ = 0;
  std::array<double, kRows> bias_{};  // each row's mean of nu / sqrt(S)
  std::array<int, kRows> row_n_{};
};

}  // namespace mbo::est
