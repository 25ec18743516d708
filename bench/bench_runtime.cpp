// Runtime building blocks: what the publisher costs per datagram and what the estimator
// thread pays per step for its hand-over and latency bookkeeping.
#include <random>
#include <string>

#include <benchmark/benchmark.h>

#include "mbobserver/core/estimate.hpp"
#include "mbobserver/core/measurement.hpp"
#include "mbobserver/runtime/estimate_json.hpp"
#include "mbobserver/runtime/event_wakeup.hpp"
#include "mbobserver/runtime/latency_histogram.hpp"
#include "mbobserver/runtime/spsc_queue.hpp"

namespace {

mbo::EstimateRecord realistic_estimate() {
  // Values with full double precision, as the estimator produces them (worst case for
  // shortest round-trip formatting).
  std::mt19937_64 rng(1);
  std::uniform_real_distribution<double> u(-100, 100);
  mbo::EstimateRecord r;
  r.seq = 123456;
  r.t = 246.912;
  r.t_wall = 1700000246.912345;
  for (double* v : {&r.x,
                    &r.y,
                    &r.z,
                    &r.yaw,
                    &r.pitch,
                    &r.roll,
                    &r.vx,
                    &r.vy,
                    &r.vz,
                    &r.v_long,
                    &r.v_lat,
                    &r.yaw_rate,
                    &r.sideslip_deg,
                    &r.std_x,
                    &r.std_y,
                    &r.std_yaw,
                    &r.std_vx,
                    &r.std_vy,
                    &r.std_sideslip_deg,
                    &r.frame_to_step_us,
                    &r.step_compute_us,
                    &r.step_to_send_us})
    *v = u(rng);
  for (auto* a : {&r.tyre_fx, &r.tyre_fy, &r.tyre_fz, &r.slip_ratio, &r.slip_angle_deg, &r.suspension_travel})
    for (double& v : *a) v = u(rng);
  for (auto& s : r.sensors)
    s = {.age_ms = u(rng) + 100, .fused = 1000, .rejected = 3, .test_ratio = 0.3, .timed_out = false};
  r.faults = mbo::kFaultGnssTimeout;
  return r;
}

void BM_EstimateJson(benchmark::State& state) {
  const mbo::EstimateRecord r = realistic_estimate();
  std::string out;
  out.reserve(4096);
  for (auto _ : state) {
    mbo::runtime::write_estimate_json(r, out);
    benchmark::DoNotOptimize(out.data());
  }
  state.counters["bytes"] = static_cast<double>(out.size());
}
BENCHMARK(BM_EstimateJson);

void BM_StatusJson(benchmark::State& state) {
  mbo::runtime::StatusRecord s;
  s.add_queue("measurements", {.capacity = 8192, .depth = 3, .high_water = 40});
  s.add_queue("estimates", {.capacity = 256});
  mbo::runtime::CanControllerStatus can0;
  mbo::runtime::set_name(can0.name, "can0");
  s.add_can(can0);
  std::string out;
  out.reserve(8192);
  for (auto _ : state) {
    mbo::runtime::write_status_json(s, out);
    benchmark::DoNotOptimize(out.data());
  }
  state.counters["bytes"] = static_cast<double>(out.size());
}
BENCHMARK(BM_StatusJson);

void BM_HistogramRecord(benchmark::State& state) {
  mbo::runtime::LatencyHistogram h;
  std::mt19937_64 rng(2);
  std::lognormal_distribution<double> d(std::log(200e3), 0.5);  // around 200 us
  std::vector<std::int64_t> values(4096);
  for (auto& v : values) v = static_cast<std::int64_t>(d(rng));
  std::size_t i = 0;
  for (auto _ : state) {
    h.record_ns(values[i++ & 4095]);
  }
  benchmark::DoNotOptimize(h.count());
}
BENCHMARK(BM_HistogramRecord);

void BM_HistogramPercentiles(benchmark::State& state) {
  mbo::runtime::LatencyHistogram h;
  for (std::int64_t v = 1000; v < 10'000'000; v += 997) h.record_ns(v);
  for (auto _ : state) benchmark::DoNotOptimize(h.summary());
}
BENCHMARK(BM_HistogramPercentiles);

void BM_SpscPushPopEstimate(benchmark::State& state) {
  mbo::runtime::SpscQueue<mbo::EstimateRecord> q(256);
  const mbo::EstimateRecord r = realistic_estimate();
  mbo::EstimateRecord out;
  for (auto _ : state) {
    q.push(r);
    q.pop(out);
    benchmark::DoNotOptimize(out.seq);
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * sizeof r));
}
BENCHMARK(BM_SpscPushPopEstimate);

void BM_SpscPushPopMeasurement(benchmark::State& state) {
  mbo::runtime::SpscQueue<mbo::Measurement> q(8192);
  const mbo::Measurement m{.t = 1, .channel = mbo::Channel::gyro_z, .value = 0.1};
  mbo::Measurement out;
  for (auto _ : state) {
    q.push(m);
    q.pop(out);
    benchmark::DoNotOptimize(out.value);
  }
}
BENCHMARK(BM_SpscPushPopMeasurement);

void BM_EventWakeupNotify(benchmark::State& state) {
  // The per-step cost of waking the I/O thread (one eventfd write).
  mbo::runtime::EventWakeup w;
  for (auto _ : state) w.notify();
}
BENCHMARK(BM_EventWakeupNotify);

}  // namespace
