// The vehicle observer step of the daemon (issue 6, "Speed"): model step, prediction, the
// updates of every sensor sample due, the kinematic correction and the virtual sensors, at
// dt = 2 ms, on the repository's scenarios. The truth drive and its sensor samples are made
// before timing; each step (pushes + step) is timed on its own, so the percentiles include the
// real tails. Heap allocations are counted over every step after the first second.
#include <time.h>

#include <algorithm>
#include <chrono>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>

#include "alloc_count.hpp"
#include "mbobserver/experiment/vehicle_experiment.hpp"

namespace {

using namespace mbo;

const char* const kScenarios[] = {"vehicle_double_lane_change.json", "vehicle_circle.json", "vehicle_braking.json"};

void BM_VehicleObserverStep(benchmark::State& state) {
  const std::string name = kScenarios[state.range(0)];
  auto sc = exp::load_vehicle_scenario(std::string(MBO_SOURCE_DIR) + "/scenarios/" + name);
  sc.duration = std::min(sc.duration, 8.0);
  // the sensor samples of every step, from the truth drive
  std::vector<std::vector<Measurement>> samples;
  std::vector<double> times;
  {
    exp::TruthDrive truth(sc, 1);
    while (!truth.done()) {
      samples.emplace_back();
      truth.advance(samples.back());
      times.push_back(truth.t());
    }
  }
  std::vector<double> wall, cpu;
  wall.reserve(samples.size() * 4);
  cpu.reserve(samples.size() * 4);
  auto thread_cpu_us = [] {
    timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec * 1e-3;
  };
  long allocations = 0, counted = 0;
  for (auto _ : state) {
    state.PauseTiming();
    est::VehicleObserver obs(sc.model, sc.observer, sc.dt);
    if (sc.start_from_truth) obs.start(sc.manoeuvre.start, 0);
    state.ResumeTiming();
    for (std::size_t k = 0; k < samples.size(); ++k) {
      const bool count = times[k] > 1.0;
      if (count) mbo::test::alloc_count_start();
      const double c0 = thread_cpu_us();
      const auto t0 = std::chrono::steady_clock::now();
      for (const auto& m : samples[k]) obs.push(m);
      obs.step(times[k]);
      const auto t1 = std::chrono::steady_clock::now();
      cpu.push_back(thread_cpu_us() - c0);
      if (count) allocations += mbo::test::alloc_count_stop(), ++counted;
      wall.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
    }
  }
  std::sort(wall.begin(), wall.end());
  std::sort(cpu.begin(), cpu.end());
  auto pct = [](const std::vector<double>& v, double q) { return v[std::min(v.size() - 1, static_cast<std::size_t>(q * v.size()))]; };
  state.counters["p50_us"] = pct(wall, 0.50);
  state.counters["p99_us"] = pct(wall, 0.99);
  state.counters["p99.9_us"] = pct(wall, 0.999);
  state.counters["max_us"] = wall.back();
  state.counters["cpu_p50_us"] = pct(cpu, 0.50);
  state.counters["cpu_p99.9_us"] = pct(cpu, 0.999);
  double mean = 0;
  for (double w : wall) mean += w;
  state.counters["RTF"] = sc.dt * 1e6 / (mean / wall.size());
  state.counters["allocs_per_step"] = counted ? double(allocations) / counted : 0;
  state.SetLabel(name + " (" + sc.observer.filter_type + ", " + std::to_string(wall.size()) + " steps)");
}

}  // namespace

BENCHMARK(BM_VehicleObserverStep)->DenseRange(0, 2)->Unit(benchmark::kMillisecond)->Iterations(2);
