// What every aiding unit of the vehicle observer is made of. As in PX4's EKF2, each source of
// information (GNSS, IMU, wheel Hall counters, the model's inputs) is one unit that owns its
// newest samples and their ages, turns them into scalar measurement rows for the filter, keeps
// its gate, rejection timer and reset, and its timeout and health. The observer keeps only the
// model, the filter and the order of a step (vehicle_observer.hpp).
#pragma once

#include <array>
#include <cstddef>
#include <memory>
#include <vector>

#include "mbobserver/core/estimate.hpp"
#include "mbobserver/core/measurement.hpp"
#include "mbobserver/estimation/error_ekf.hpp"
#include "mbobserver/estimation/observer.hpp"
#include "mbobserver/estimation/sensor.hpp"

namespace mbo::est::aiding {

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
  // Time of the newest sample of c a step has taken; -1: none yet.
  double last_taken(Channel c) const { return taken_t_[slot(c)]; }

 private:
  static constexpr std::size_t slot(Channel c) { return index_of(c) - index_of(First); }
  std::array<Sample, N> s_{};
  std::array<double, N> taken_t_{};
};

// The health of one sensor kind as the estimate publishes it (SensorHealth): fused and
// rejected rows, the gate's test ratio low-passed over steps, the age of the newest sample
// and the timeout.
class SourceHealth {
 public:
  void set_timeout(double timeout_s) { timeout_s_ = timeout_s; }
  void account(const UpdateResult& u);
  // The newest sample of this kind was taken at t.
  void sampled(double t) { last_sample_t_ = t; }
  double last_sample_t() const { return last_sample_t_; }
  // End of a step at time t: age, timeout, and the filtered test ratio of the step's largest.
  void update(double t);
  bool timed_out() const { return published_.timed_out; }
  const SensorHealth& published() const { return published_; }

 private:
  // The test ratio's low-pass: this much of the last value is kept each step.
  static constexpr double kRatioKept = 0.9, kRatioNew = 0.1;
  SensorHealth published_{};
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
  void add(SensorKind kind, int row, double value, double variance, double gate_sigma) {
    rows_.push_back({static_cast<int>(index_of(kind)), row, value, variance, gate_sigma});
  }
  const std::vector<ScalarMeasurement>& rows() const { return rows_; }
  static SensorKind kind(const ScalarMeasurement& m) { return static_cast<SensorKind>(m.sensor); }

 private:
  // GNSS 3 + 2 + 1, IMU 6, wheels 4 = 16 rows at most: no allocation after construction.
  static constexpr std::size_t kCapacity = 32;
  std::vector<ScalarMeasurement> rows_;
};

// The measurement models of the vehicle's sensors, one per SensorKind, in that order.
using SensorModels = std::array<std::shared_ptr<const Sensor>, kSensorKindCount>;

}  // namespace mbo::est::aiding
