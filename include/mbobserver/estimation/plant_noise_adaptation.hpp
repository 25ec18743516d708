// The plant noise that adapts to the car (covariance matching on the innovations). The
// configured `plant_noise` of the chassis must cover a car that differs from its vehicle file
// (a load, worn tyres): on a car that is its file it makes the filter pessimistic (the lane
// change's lateral velocity NEES 0.14, tyre Fy 0.06-0.13). A fixed smaller value would make the
// differing cars optimistic. So the lateral noise (across the heading) and the yaw's are scaled
// by lambda in [min_scale, 1]: lambda falls while the innovations of the GNSS position and
// velocity and of the yaw gyro are consistent with the filter's own variance (mean NIS at most
// `nis_limit`, each row's mean normalised innovation within `bias_sigma` standard errors of
// zero), and rises when they are not, as Mehra's covariance matching (Mehra 1972; Mohamed &
// Schwarz 1999) with a one-sided test. A model that is its car keeps the innovations white at
// any lambda; one that is not shows its drift as soon as lambda is too small for it (a wrong
// sideslip that the GNSS alone would take for a heading error shows in the yaw gyro, whose
// noise the configured yaw plant noise otherwise hides). Without fixes there is no evidence:
// lambda returns to 1 at the rise rate.
#pragma once

#include <array>
#include <vector>

namespace mbo::est {

struct PlantNoiseAdaptationConfig {
  bool on = false;
  // What lambda scales: the chassis's acceleration noise along its heading, across it, and
  // the yaw's. Across and yaw by default: the lateral model (the tyres' cornering) is what a
  // matched car gets right and what the gyro checks; along the heading the wheels' slip and
  // radius errors hide in the position innovations.
  bool longitudinal = false, lateral = true, yaw = true;
  int x = -1, y = -1, yaw_index = -1;  // their observed indices
  double yaw_min_scale = 0.1;  // the yaw's lambda goes no lower
  double min_scale = 1e-5;  // the smallest lambda
  double nis_limit = 1.5;  // mean NIS of the GNSS rows above which lambda rises
  // (these defaults: the lane change's tyre Fy NEES into [0.5, 2]; docs/configuration.md)
  int window_samples = 50;  // the means' memory, in samples of each GNSS row (1 s at 50 Hz)
  int gyro_window_samples = 500;  // and of the yaw gyro's (1 s at 500 Hz)
  double fall_s = 0.25;  // lambda falls by e in this time while the innovations are consistent
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
  double sustained_s = 2;  // a failure this long sets the floor to 1 (see advance)
  // A tyre whose force is above this share of its friction limit (|F| / (mu Fz)) is where the
  // model's force depends on a friction the innovations cannot check (ABS braking, a circle at
  // the limit): lambda is 1 while any tyre is there.
  double limit_utilisation = 0.7;
};

class PlantNoiseAdaptation {
 public:
  explicit PlantNoiseAdaptation(const PlantNoiseAdaptationConfig& c = {}) : c_(c) {}
  // After a start or a reset of the model: the innovations so far say nothing of the new one.
  void restart();
  // GNSS position east, north; velocity east, north (kGnssRows); the yaw gyro
  static constexpr int kRows = 5, kGnssRows = 4, kGyroRow = 4;
  // One row's (0..kRows-1) innovation nu and its variance S at time t.
  void observe(int row, double innovation, double variance, double t);
  // End of a step at t, dt after the last: lambda moves. `unchecked`: lambda is 1, the model
  // rests on what the innovations cannot check (a tyre above limit_utilisation, an input
  // guessed).
  void advance(double t, double dt, bool unchecked = false);
  double scale() const { return scale_; }
  double floor() const { return floor_; }
  double mean_nis() const { return mean_; }
  // The largest of the rows' mean normalised innovation, in standard errors of that mean.
  double bias_test() const;
  const PlantNoiseAdaptationConfig& config() const { return c_; }

 private:
  int window(int row) const { return row == kGyroRow ? c_.gyro_window_samples : c_.window_samples; }
  PlantNoiseAdaptationConfig c_;
  double scale_ = 1, mean_ = 1, last_row_t_ = -1, floor_ = 0;
  double failing_s_ = 0;
  bool failing_ = false;
  int rows_ = 0;
  std::array<double, kRows> bias_{};  // each row's mean of nu / sqrt(S)
  std::array<int, kRows> row_n_{};
};

}  // namespace mbo::est
