// The 3-D vehicle model: one step at dt = 2 ms (the 500 Hz IMU rate of Sinigaglia 2016 Table 3),
// driven by the closed-loop driver through whole manoeuvres. Every step is timed on its own
// (steady_clock around set_inputs + mb::step), so the percentiles include the real tails;
// the real-time factor is dt over the mean step time. Heap allocations are counted by the
// tests' malloc interposer over all steps after the first.
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>

#include "alloc_count.hpp"
#include "mbobserver/mb/dynamics.hpp"
#include "mbobserver/models/manoeuvres.hpp"
#include "mbobserver/models/vehicle.hpp"
#include "mbobserver/models/vehicle_outputs.hpp"

namespace {

using namespace mbo;
using namespace mbo::models;

struct Case {
  const char* vehicle;
  const char* manoeuvre;
  double speed_kmh;
};

const Case kCases[] = {
    {"sedan", "double_lane_change", 80},
    {"sedan", "braking", 100},
    {"sedan", "bump_crossing", 30},
    {"van", "double_lane_change", 80},
};

Road bump_road() {
  Road r;
  for (int k = 0; k < 5; ++k) r.bumps.push_back({20.0 + 12.0 * k, 0.05, 0.5});
  return r;
}

void BM_VehicleStep(benchmark::State& state) {
  const Case& c = kCases[state.range(0)];
  const std::string file = std::string(MBO_SOURCE_DIR) + "/config/vehicles/" + c.vehicle + ".json";
  VehicleParams p = load_vehicle_params(file);
  const bool bumps = std::string(c.manoeuvre) == "bump_crossing";
  Vehicle v = bumps ? build_vehicle(p, bump_road()) : build_vehicle(p);
  nlohmann::json j = {{"type", c.manoeuvre}, {"speed_kmh", c.speed_kmh}};
  if (std::string(c.manoeuvre) == "braking") j["abs"] = true;
  JsonReader r(j, "bench");
  const ManoeuvreSpec m = load_manoeuvre(r, v);
  const double dt = 0.002;
  const int steps = static_cast<int>(m.duration_s / dt);
  mb::Workspace ws(v.model);

  std::vector<double> times, cpu;
  times.reserve(1 << 20);
  cpu.reserve(1 << 20);
  auto thread_cpu_us = [] {
    timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec * 1e-3;
  };
  long iterations = 0, failures = 0, stepped = 0;
  long allocations = 0;
  for (auto _ : state) {
    state.PauseTiming();
    mb::State s = start_vehicle(v, ws, m.start);
    DriverState d;
    VehicleOutputs o;
    vehicle_outputs(v, s, o);
    state.ResumeTiming();
    for (int k = 0; k < steps; ++k) {
      const double t = (k + 1) * dt;
      VehicleInputs in = manoeuvre_inputs(m, v, o, d, t, dt);
      if (k > 0) mbo::test::alloc_count_start();
      const double c0 = thread_cpu_us();
      auto t0 = std::chrono::steady_clock::now();
      set_inputs(v, in, s);
      auto res = mb::step(v.model, s, ws, dt);
      auto t1 = std::chrono::steady_clock::now();
      cpu.push_back(thread_cpu_us() - c0);
      vehicle_outputs(v, s, o);
      if (k > 0) allocations += mbo::test::alloc_count_stop();
      times.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
      iterations += res.iterations;
      failures += !res.converged;
      ++stepped;
    }
  }
  std::sort(times.begin(), times.end());
  std::sort(cpu.begin(), cpu.end());
  auto pct = [&](double q) { return times[std::min(times.size() - 1, static_cast<std::size_t>(q * times.size()))]; };
  auto cpct = [&](double q) { return cpu[std::min(cpu.size() - 1, static_cast<std::size_t>(q * cpu.size()))]; };
  double mean = 0;
  for (double t : times) mean += t;
  mean /= times.size();
  state.counters["p50_us"] = pct(0.50);
  state.counters["p99_us"] = pct(0.99);
  state.counters["p99.9_us"] = pct(0.999);
  state.counters["max_us"] = times.back();
  // Thread CPU time of the same steps: what the step costs when the machine is shared (the
  // wall-clock tails include time the thread was not running).
  state.counters["cpu_p50_us"] = cpct(0.50);
  state.counters["cpu_p99_us"] = cpct(0.99);
  state.counters["cpu_p99.9_us"] = cpct(0.999);
  state.counters["RTF"] = dt * 1e6 / mean;
  state.counters["nq"] = v.model.nq;
  state.counters["nc"] = v.model.nc;
  state.counters["newton_mean"] = double(iterations) / stepped;
  state.counters["failures"] = failures;
  state.counters["allocs_per_step"] = double(allocations) / stepped;
  state.SetLabel(std::string(c.vehicle) + " " + c.manoeuvre + " " + std::to_string(int(c.speed_kmh)) + " km/h, " +
                 std::to_string(times.size()) + " steps");
}

}  // namespace

BENCHMARK(BM_VehicleStep)->DenseRange(0, 3)->Unit(benchmark::kMillisecond)->Iterations(3);
