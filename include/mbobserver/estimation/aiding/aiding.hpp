// What every aiding unit of the vehicle observer is made of. As in PX4's EKF2, each source of
// information (GNSS, IMU, wheel Hall counters, the model's inputs) is one unit that owns its
// newest samples and their ages, turns them into scalar measurement rows for the filter, keeps
// its gate, rejection timer and reset, and its timeout and health. The observer keeps only the
// model, the filter and the order of a step (vehicle_observer.hpp).
#pragma once

#include <array>
#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "mbobserver/core/estimate.hpp"
#include "mbobserver/core/json_reader.hpp"
#include "mbobserver/core/measurement.hpp"
#include "mbobserver/estimation/error_ekf.hpp"
#include "mbobserver/estimation/observer.hpp"
#include "mbobserver/estimation/sensor.hpp"

namespace mbo::est::aiding {

// Bounds of the configuration (docs/configuration.md): a sensor mounted on a road vehicle sits
// within this of the vehicle frame's origin, m; a gate wider than this many sigma gates nothing.
inline constexpr double kMaxLeverArm_m = 50;
inline constexpr double kMaxGateSigma = 1000;

constexpr std::size_t index_of(Channel c) { return static_cast<std::size_t>(c); }
constexpr std::size_t index_of(SensorKind k) { return static_cast<std::size_t>(k); }

// The newest sample of one channel, kept until a step takes it.
struct Sample {
  double t = -1, value = 0;
  bool fresh = false;
};

// The newest samples of a source's channels First .. First + N - 1 (contiguous in Channel).
template <Channel First, std::size_t N>
class ChannelSamples {
 public:
  ChannelSamples() { taken_t_.fill(-1); }
  static constexpr bool owns(Channel c) { return index_of(c) >= index_of(First) && index_of(c) < index_of(First) + N; }
  // Keeps m as its channel's newest sample; false when it is older than the one held (the
  // caller counts it stale).
  bool hold(const Measurement& m) {
    auto& s = s_[slot(m.channel)];
    if (m.t < s.t) return false;
    s = {m.t, m.value, true};
    return true;
  }
  // The fresh sample of c, if it is not newer than the step's time t: it is then used up.
  bool take(Channel c, double t, double& value, double& time) {
    auto& s = s_[slot(c)];
    if (!s.fresh || s.t > t + kSameInstant_s) return false;
    s.fresh = false;
    value = s.value;
    time = s.t;
    taken_t_[slot(c)] = s.t;
    return true;
  }
  const Sample& peek(Channel c) const { return s_[slot(c)]; }
  // After a jump of the time base: the samples held are of another time.
  void forget() {
    s_ = {};
    taken_t_.fill(-1);
  }
  // Time of the newest sample of c a step has taken; -1: none yet.
  double last_taken(Channel c) const { return taken_t_[slot(c)]; }

 private:
  static constexpr std::size_t slot(Channel c) { return index_of(c) - index_of(First); }
  std::array<Sample, N> s_{};
  std::array<double, N> taken_t_{};
};

// How a source's innovations are judged over time (the "validity" section).
struct MonitorConfig {
  double nis_time_constant_s = 0.2;  // low-pass of each row's normalised innovation squared
  double nis_limit = 9;  // a row whose filtered NIS is above this is inconsistent
  double nis_cap = 100;  // one innovation counts at most this much (a single outlier fades)
  int rejections = 2;  // this many rejections in a row make a row inconsistent at once
  // After a reset, a row that has a sample is not consistent before this many in a row are
  // accepted (the reset state's transient is not yet seen).
  int settle_samples = 5;
  // A row's accepted innovations averaged over this (exponential, s): a mean further than
  // bias_sigma of its own standard errors from zero is a bias the filter does not remove (a
  // model that is not its car), published in the sigma of what the row measures.
  double bias_time_constant_s = 2;
  double bias_sigma = 3;
};

// The consistency of one measurement row (PX4's innovation test, with memory): a low-pass of
// its normalised innovation squared nu^2 / S, whose mean is 1 for a consistent filter, and
// its current run of gate rejections.
class RowMonitor {
 public:
  void update(const UpdateResult& u, double t, const MonitorConfig& c);
  double nis() const { return nis_; }
  int rejected_in_a_row() const { return rejected_; }
  double rejected_since() const { return rejected_since_; }  // -1: the last one was accepted
  // The mean of the accepted innovations over bias_time_constant_s where it is further than
  // bias_sigma standard errors from zero (the innovation's variance S over the samples'
  // effective count), else 0; in the row's unit.
  double bias(const MonitorConfig& c) const;
  bool consistent(const MonitorConfig& c) const {
    return nis_ <= c.nis_limit && rejected_ < c.rejections && (!sampled_ || accepted_ >= c.settle_samples);
  }
  // Forgets the row's history. `settling`: the row must show settle_samples accepted ones
  // before it is consistent again (a reset of its own state); otherwise only once it has a
  // sample (a row the step never fuses stays out of the way).
  void restart(bool settling) {
    *this = RowMonitor{};
    sampled_ = settling;
  }

 private:
  double nis_ = 0, last_t_ = -1, rejected_since_ = -1;
  // exponentially weighted sums of the accepted innovations: weights, their squares, w nu, w S
  double w_ = 0, w2_ = 0, w_nu_ = 0, w_s_ = 0, last_accepted_t_ = -1;
  int rejected_ = 0, accepted_ = 0;
  bool sampled_ = false;
};

// The health of one sensor kind as the estimate publishes it (SensorHealth): fused and
// rejected rows, the gate's test ratio low-passed over steps, the age of the newest sample,
// the timeout, and the consistency of each row.
class SourceHealth {
 public:
  static constexpr int kMaxRows = 4;
  void set_timeout(double timeout_s) { timeout_s_ = timeout_s; }
  void set_monitor(const MonitorConfig& c) { monitor_ = c; }
  // What the filter did with `row` of this kind at time t.
  void account(int row, const UpdateResult& u, double t);
  // A sample this source did not fuse because it is implausible (at its limit, stuck).
  void implausible() { ++published_.implausible; }
  // The newest sample of this kind was taken at t (-1: none in this time base).
  void sampled(double t) { last_sample_t_ = t; }
  double last_sample_t() const { return last_sample_t_; }
  // End of a step at time t: age, timeout, the filtered test ratio of the step's largest, and
  // the rows' consistency.
  void update(double t);
  bool timed_out() const { return published_.timed_out; }
  bool consistent() const { return published_.consistent; }
  // The largest filtered NIS over the rows (1 for a consistent filter).
  double nis() const { return published_.nis; }
  // Row r's innovation bias (RowMonitor::bias), in its unit.
  double bias(int r) const { return rows_[r].bias(monitor_); }
  const RowMonitor& row(int r) const { return rows_[r]; }
  // After a reset of the model: the rows' history says nothing of the new state.
  void restart_monitor();
  void restart_row(int r) { rows_[r].restart(true); }
  const SensorHealth& published() const { return published_; }

 private:
  // The test ratio's low-pass: this much of the last value is kept each step.
  static constexpr double kRatioKept = 0.9, kRatioNew = 0.1;
  SensorHealth published_{};
  MonitorConfig monitor_{};
  std::array<RowMonitor, kMaxRows> rows_{};
  double timeout_s_ = 0;
  double last_sample_t_ = -1;
  double step_largest_ratio_ = 0;
};

// The scalar rows one step fuses. The vehicle observer's sensor models are indexed by
// SensorKind (SensorModels), so a row's `sensor` is its kind.
class MeasurementRows {
 public:
  MeasurementRows() { rows_.reserve(kCapacity); }
  void clear() { rows_.clear(); }
  // `lag`: the sample's age at the step's time, s (its sensor model adds its latency).
  // `unmodelled_bias`: the value is the truth plus `coefficient` times that bias
  // (ErrorEkf::set_unmodelled_biases).
  void add(SensorKind kind, int row, double value, double variance, double gate_sigma, double lag = -1,
           int unmodelled_bias = -1, double coefficient = 1) {
    rows_.push_back(
        {static_cast<int>(index_of(kind)), row, value, variance, gate_sigma, lag, unmodelled_bias, coefficient});
  }
  // ... with two unmodelled biases
  void add2(SensorKind kind, int row, double value, double variance, double gate_sigma, int bias, double coefficient,
            int bias2, double coefficient2) {
    rows_.push_back({static_cast<int>(index_of(kind)), row, value, variance, gate_sigma, -1, bias, coefficient, false,
                     bias2, coefficient2});
  }
  // ... whose unmodelled bias is a latency: its coefficient is the row's d h / d latency
  void add_late(SensorKind kind, int row, double value, double variance, double gate_sigma, double lag,
                int unmodelled_latency) {
    rows_.push_back({static_cast<int>(index_of(kind)), row, value, variance, gate_sigma, lag, unmodelled_latency, 1.0,
                     unmodelled_latency >= 0});
  }
  const std::vector<ScalarMeasurement>& rows() const { return rows_; }
  static SensorKind kind(const ScalarMeasurement& m) { return static_cast<SensorKind>(m.sensor); }

 private:
  // GNSS 3 + 2 + 1, IMU 6, wheels 4 = 16 rows at most: no allocation after construction.
  static constexpr std::size_t kCapacity = 32;
  std::vector<ScalarMeasurement> rows_;
};

// A sensor parameter the filter estimates (a bias, a scale factor, a latency), as a unit
// declares it: a random walk within [min, max] that enters that unit's measurement rows.
struct SensorParameter {
  std::string name;  // as published: "gyro_bias_z", "wheel_scale_fl", "gnss_latency"
  double initial = 0, initial_std = 1, rate_noise = 0, min = 0, max = 0;
  double converged_std = 0;  // its 1-sigma below this: learned
  // > 0: a first-order Gauss-Markov process of this correlation time (s) rather than a random
  // walk; its value decays to 0 between updates (a receiver's slowly wandering error).
  double correlation_s = 0;
  // A calibration of the car or a sensor, published and kept in the state file; false: a
  // nuisance state the filter needs and nobody keeps (the receiver's present error).
  bool published = true;
  // What the data cannot teach below this: the sensor model's own fidelity, added in quadrature
  // to the published 1-sigma (and so to what a calibration file keeps).
  double model_std = 0;
};

// The configuration of an estimated parameter ("estimate_...": {...} in a unit's section).
struct EstimateConfig {
  bool on = false;
  double initial_std = 0, rate_noise = 0, min = 0, max = 0;
};

// Reads `key` of `section` if present: {"initial_std", "plant_noise", "min", "max"}, each
// scaled by `unit` (a section in degrees per second: pi / 180), with the given defaults.
EstimateConfig read_estimate_config(const JsonReader& section, std::string_view key, const EstimateConfig& defaults,
                                    double unit = 1);

// The list of estimated sensor parameters the units declare, in the order of the error
// state's sensor block.
class SensorParameters {
 public:
  // Appends p and returns its index.
  int add(SensorParameter p) {
    list_.push_back(std::move(p));
    return static_cast<int>(list_.size()) - 1;
  }
  const std::vector<SensorParameter>& list() const { return list_; }

 private:
  std::vector<SensorParameter> list_;
};

// The measurement models of the vehicle's sensors, one per SensorKind, in that order.
using SensorModels = std::array<std::shared_ptr<const Sensor>, kSensorKindCount>;

}  // namespace mbo::est::aiding
