// Observer steps. The vehicle observer of the daemon (issue 6, "Speed"): model step,
// prediction, the updates of every sensor sample due, the kinematic correction and the virtual
// sensors, at dt = 2 ms, on the repository's scenarios. The four-bar observer of Sinigaglia 2016
// (issue 4, "Speed"): model step, filter and correction, errorEKF and errorEKF-FE, and the
// 20-run experiment. The truth and its sensor samples are made before timing; each step is
// timed on its own, so the percentiles include the real tails. Heap allocations are counted
// over every step after the first second.
#include <time.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>

#include "alloc_count.hpp"
#include "mbobserver/experiment/runner.hpp"
#include "mbobserver/experiment/scenario.hpp"
#include "mbobserver/experiment/vehicle_experiment.hpp"
#include "mbobserver/mb/dynamics.hpp"

namespace {

using namespace mbo;
using Eigen::VectorXd;

const char* const kScenarios[] = {"vehicle_double_lane_change.json", "vehicle_circle.json", "vehicle_braking.json"};

// What the observer can learn (issue 18, "Speed"), by block: the sensor parameters (gyro
// biases and scale factors, wheel scales, the GNSS latency), the payloads, the tyres' stiffness
// scales, and all of them, with the excitation gating.
const char* const kSensorBlock = R"("imu": {"estimate_gyro_bias": {}, "estimate_gyro_scale": {}},
  "wheels": {"estimate_scale": {}}, "gnss": {"estimate_latency": {}})";
const char* const kPayloads = R"("payload_front": {"initial_std": 150, "plant_noise": 1},
  "payload_rear": {"initial_std": 150, "plant_noise": 1})";
const char* const kStiffness = R"("cornering_front": {"initial_std": 0.1, "plant_noise": 1e-6},
  "cornering_rear": {"initial_std": 0.1, "plant_noise": 1e-6}, "slip_stiffness": {"initial_std": 0.1, "plant_noise": 1e-6})";
const char* const kBlocks[] = {"all", "sensor parameters", "payloads", "stiffness scales"};

nlohmann::json learning_patch(int block) {
  const std::string sensors = kSensorBlock, loads = kPayloads, stiffness = kStiffness;
  auto inputs = [](const std::string& list) {
    return R"("filter": {"force_error": {"estimate_inputs": {)" + list + "}}}";
  };
  switch (block) {
    case 1:
      return nlohmann::json::parse("{" + sensors + "}");
    case 2:
      return nlohmann::json::parse("{" + inputs(loads) + "}");
    case 3:
      return nlohmann::json::parse("{" + inputs(stiffness) + "}");
    default:
      return nlohmann::json::parse("{" + sensors + ", " + inputs(loads + ", " + stiffness) + "}");
  }
}

void observer_step(benchmark::State& state, const nlohmann::json* patch, const std::string& variant = "",
                   bool full_newton = false) {
  const std::string name = kScenarios[state.range(0)];
  auto sc = exp::load_vehicle_scenario(std::string(MBO_SOURCE_DIR) + "/scenarios/" + name, patch);
  sc.duration = std::min(sc.duration, 8.0);
  if (full_newton) {  // the observer's model only: the truth drive is not timed
    auto model = std::make_shared<models::Vehicle>(*sc.model);
    model->model.solver.refresh_contraction = 0;
    model->model.solver.extrapolate = false;
    sc.model = model;
  }
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
  auto pct = [](const std::vector<double>& v, double q) {
    return v[std::min(v.size() - 1, static_cast<std::size_t>(q * v.size()))];
  };
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
  state.SetLabel(name + " (" + sc.observer.filter_type + (variant.empty() ? std::string() : ", " + variant) + ", " +
                 std::to_string(wall.size()) + " steps)");
}

void BM_VehicleObserverStep(benchmark::State& state) { observer_step(state, nullptr); }

// The shipped observer with its plant noise fixed (scenarios/patches/fixed_plant_noise.json):
// the adaptation's cost is the ratio to BM_VehicleObserverStep of the same run.
void BM_VehicleObserverStepFixedNoise(benchmark::State& state) {
  const auto patch = nlohmann::json::parse(R"({"filter": {"adaptive_plant_noise": {"enabled": false}}})");
  observer_step(state, &patch, "plant noise fixed");
}

// The shipped observer with a new tangent every Newton iteration (the vehicle file's
// solver.newton_refresh_contraction 0) and no extrapolation of the corrections, as before
// 0.10: the gain of both is the ratio of BM_VehicleObserverStep to this in the same run.
void BM_VehicleObserverStepFullNewton(benchmark::State& state) {
  observer_step(state, nullptr, "full Newton, not extrapolated", true);
}

// The shipped observer whose published sigmas carry what it does not learn: a gyro bias on
// each axis and a GNSS latency (imu.gyro_bias_std, gnss.latency_std), besides the tyres'
// radius it always carries (the consider analysis's sensitivity, one column each): its cost
// is the ratio to BM_VehicleObserverStep of the same run.
void BM_VehicleObserverStepUnmodelledBiases(benchmark::State& state) {
  const auto patch = nlohmann::json::parse(R"({"imu": {"gyro_bias_std": 0.3}, "gnss": {"latency_std": 0.05}})");
  observer_step(state, &patch, "unmodelled gyro bias and latency in the sigmas");
}

// The shipped observer without the rolling radius in its sigmas (validity.
// rolling_radius_rel_std 0): the cost of that consider analysis is BM_VehicleObserverStep's
// ratio to this, in the same run.
void BM_VehicleObserverStepNoRadiusSigma(benchmark::State& state) {
  const auto patch = nlohmann::json::parse(R"({"validity": {"rolling_radius_rel_std": 0}})");
  observer_step(state, &patch, "no rolling radius in the sigmas");
}

// range(0): the scenario; range(1): the block learned (kBlocks).
void BM_VehicleObserverStepLearning(benchmark::State& state) {
  const auto patch = learning_patch(static_cast<int>(state.range(1)));
  observer_step(state, &patch, std::string("learning ") + kBlocks[state.range(1)]);
}

const char* const kFourbarFilters[] = {"errorEKF", "errorEKF-FE"};

void BM_FourbarObserverStep(benchmark::State& state) {
  const exp::Scenario sc = exp::load_scenario(std::string(MBO_SOURCE_DIR) + "/scenarios/fourbar_sinigaglia.json");
  const std::string filter = kFourbarFilters[state.range(0)];
  // the model's starting state as the experiment makes it (exp::run_experiment)
  auto started = [&](const mb::Model& m, const std::vector<double>& z0, const std::vector<double>& zd0,
                     const std::vector<exp::InputTable>& inputs) {
    exp::SimulatedModel sim(m, z0, zd0);
    exp::apply_inputs(inputs, 0, sim.s);
    sim.start();
    return sim.s;
  };
  // the encoder samples of every step, from the truth (noise as the experiment adds it)
  std::vector<std::shared_ptr<const est::Sensor>> on_truth, on_model;
  for (const auto& spec : sc.sensors)
    on_truth.push_back(exp::make_sensor(spec, sc.truth)), on_model.push_back(exp::make_sensor(spec, sc.model));
  const long steps = std::lround(sc.duration / sc.dt);
  std::vector<std::vector<est::ScalarMeasurement>> samples(steps);
  std::vector<VectorXd> model_u(steps);
  {
    mb::Workspace ws(sc.truth);
    mb::State s = started(sc.truth, sc.truth_z0, sc.truth_zd0, sc.truth_inputs);
    mb::State open = started(sc.model, sc.model_z0, sc.model_zd0, sc.model_inputs);
    std::mt19937_64 rng(1);
    std::normal_distribution<double> normal(0.0, 1.0);
    VectorXd xdd = VectorXd::Zero(sc.truth.nq + sc.truth.nconst);
    for (long k = 0; k < steps; ++k) {
      const double t = (k + 1) * sc.dt;
      exp::apply_inputs(sc.truth_inputs, t, s);
      mb::step(sc.truth, s, ws, sc.dt);
      exp::apply_inputs(sc.model_inputs, t, open);
      model_u[k] = sc.model_inputs_from_truth ? s.u : open.u;
      ws.x.head(sc.truth.nq) = s.q;
      ws.xd.head(sc.truth.nq) = s.qd;
      xdd.head(sc.truth.nq) = s.qdd;
      est::MeasureContext ctx{sc.truth, ws.x, ws.xd, xdd};
      for (std::size_t i = 0; i < sc.sensors.size(); ++i)
        for (int row = 0; row < on_truth[i]->rows(); ++row)
          samples[k].push_back({static_cast<int>(i), row,
                                on_truth[i]->measure(ctx, row, nullptr) + sc.sensors[i].noise_std * normal(rng),
                                sc.sensors[i].noise_std * sc.sensors[i].noise_std});
    }
  }
  est::ObserverSettings settings = sc.filter;
  settings.filter.force_error = filter == "errorEKF-FE";
  if (settings.filter.force_error && !sc.fe_accel_noise.empty()) settings.filter.accel_noise = sc.fe_accel_noise;
  std::vector<double> wall;
  wall.reserve(steps * 4);
  long allocations = 0, counted = 0;
  std::vector<est::UpdateResult> results;
  results.reserve(16);
  for (auto _ : state) {
    state.PauseTiming();
    est::MbObserver obs(sc.model, on_model, settings, sc.dt);
    obs.initialize(started(sc.model, sc.model_z0, sc.model_zd0, sc.model_inputs));
    state.ResumeTiming();
    for (long k = 0; k < steps; ++k) {
      const bool count = (k + 1) * sc.dt > 1.0;
      obs.state().u = model_u[k];
      if (count) mbo::test::alloc_count_start();
      const auto t0 = std::chrono::steady_clock::now();
      obs.step(samples[k], &results);
      const auto t1 = std::chrono::steady_clock::now();
      if (count) allocations += mbo::test::alloc_count_stop(), ++counted;
      wall.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
    }
  }
  std::sort(wall.begin(), wall.end());
  auto pct = [&](double q) { return wall[std::min(wall.size() - 1, static_cast<std::size_t>(q * wall.size()))]; };
  state.counters["p50_us"] = pct(0.50);
  state.counters["p99_us"] = pct(0.99);
  state.counters["p99.9_us"] = pct(0.999);
  state.counters["allocs_per_step"] = counted ? double(allocations) / counted : 0;
  state.SetLabel("fourbar_sinigaglia.json (" + filter + ", " + std::to_string(wall.size()) + " steps)");
}

// `mbobserver-experiment scenarios/fourbar_sinigaglia.json --runs 20`, without the JSON output.
void BM_FourbarExperiment20Runs(benchmark::State& state) {
  exp::Scenario sc = exp::load_scenario(std::string(MBO_SOURCE_DIR) + "/scenarios/fourbar_sinigaglia.json");
  sc.filter_type = kFourbarFilters[state.range(0)];
  for (auto _ : state) {
    std::vector<nlohmann::json> runs;
    for (std::uint64_t seed = 1; seed <= 20; ++seed) runs.push_back(exp::run_experiment(sc, {seed, nullptr}));
    benchmark::DoNotOptimize(exp::aggregate_reports(runs));
  }
  state.SetLabel(sc.filter_type + ", 20 runs of 10 s");
}

}  // namespace

BENCHMARK(BM_FourbarObserverStep)->DenseRange(0, 1)->Unit(benchmark::kMillisecond)->Iterations(3);
BENCHMARK(BM_FourbarExperiment20Runs)->DenseRange(0, 1)->Unit(benchmark::kMillisecond)->Iterations(1);
BENCHMARK(BM_VehicleObserverStep)->DenseRange(0, 2)->Unit(benchmark::kMillisecond)->Iterations(2);
BENCHMARK(BM_VehicleObserverStepFixedNoise)->DenseRange(0, 2)->Unit(benchmark::kMillisecond)->Iterations(2);
BENCHMARK(BM_VehicleObserverStepFullNewton)->DenseRange(0, 2)->Unit(benchmark::kMillisecond)->Iterations(2);
BENCHMARK(BM_VehicleObserverStepUnmodelledBiases)->DenseRange(0, 2)->Unit(benchmark::kMillisecond)->Iterations(2);
BENCHMARK(BM_VehicleObserverStepNoRadiusSigma)->DenseRange(0, 2)->Unit(benchmark::kMillisecond)->Iterations(2);
BENCHMARK(BM_VehicleObserverStepLearning)
    ->ArgsProduct({{0, 1, 2}, {0}})
    ->ArgsProduct({{0}, {1, 2, 3}})
    ->Unit(benchmark::kMillisecond)
    ->Iterations(2);
