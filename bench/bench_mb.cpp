// One dynamic step of the multibody engine (issue 3, "Speed"): four-bar, slider-crank and the
// spatial chain of n = 1, 4, 16, 64 bodies at dt = 1 ms, and Simbody's step for the same
// mechanisms in the same run.
//
// Every step is timed on its own with std::chrono::steady_clock (manual time), so the
// counters give the tail, not just the mean: p50_us, p99_us, p99.9_us, max_us. The mechanisms
// keep moving from step to step (released under gravity), as in a real run. allocs_per_step
// counts heap allocations inside the timed steps (tests/support/alloc_count.hpp; the first step
// is taken before timing). newton_iters is the mean number of Newton iterations of a step.
//
// Simbody: RK-Merson (4th order, 5 stages) at a fixed 1 ms step, projection of the loop
// constraints every step; one step() is one integrator step (sb_steps_per_step checks it).
// simbody_dynamics: one forward-dynamics evaluation alone (one stage's work).
#if defined(MBO_BENCH_HAS_PEER_SUPPORT)

#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>

#include "alloc_count.hpp"
#include "engine_runs.hpp"
#if defined(MBO_BENCH_HAS_SIMBODY)
#include "simbody_peer.hpp"
#endif

namespace {

using Clock = std::chrono::steady_clock;
using mbo::peers::EngineRun;

constexpr double kDt = 1e-3;
const std::string kModels = std::string(MBO_SOURCE_DIR) + "/config/models";

void report_percentiles(benchmark::State& st, std::vector<double>& ns, long allocs) {
  if (ns.empty()) return;
  std::sort(ns.begin(), ns.end());
  auto pct = [&](double p) {
    const auto i = static_cast<std::size_t>(std::ceil(p * static_cast<double>(ns.size()))) - 1;
    return ns[std::min(i, ns.size() - 1)] * 1e-3;
  };
  st.counters["p50_us"] = pct(0.50);
  st.counters["p99_us"] = pct(0.99);
  st.counters["p99.9_us"] = pct(0.999);
  st.counters["max_us"] = ns.back() * 1e-3;
  st.counters["allocs_per_step"] = static_cast<double>(allocs) / static_cast<double>(ns.size());
}

void engine_step(benchmark::State& st, const std::function<std::unique_ptr<EngineRun>()>& make) {
  auto run = make();
  auto first = mbo::mb::step(run->model, run->s, run->ws, kDt);
  if (!first.converged) {
    st.SkipWithError("first step did not converge");
    return;
  }
  std::vector<double> ns;
  ns.reserve(static_cast<std::size_t>(st.max_iterations));
  long allocs = 0, iterations = 0;
  for (auto _ : st) {
    mbo::test::alloc_count_start();
    const auto t0 = Clock::now();
    const auto r = mbo::mb::step(run->model, run->s, run->ws, kDt);
    const auto t1 = Clock::now();
    allocs += mbo::test::alloc_count_stop();
    const double d = std::chrono::duration<double, std::nano>(t1 - t0).count();
    st.SetIterationTime(d * 1e-9);
    ns.push_back(d);
    iterations += r.iterations;
    if (!r.converged) {
      st.SkipWithError("a step did not converge");
      break;
    }
  }
  report_percentiles(st, ns, allocs);
  st.counters["newton_iters"] =
      static_cast<double>(iterations) / static_cast<double>(std::max<std::size_t>(ns.size(), 1));
  st.counters["nq"] = run->model.nq;
  st.counters["nc"] = run->model.nc;
}

#if defined(MBO_BENCH_HAS_SIMBODY)
using mbo::peers::SimbodyOptions;
using mbo::peers::SimbodyPeer;

void simbody_step(benchmark::State& st,
                  const std::function<std::unique_ptr<SimbodyPeer>(const SimbodyOptions&)>& make) {
  SimbodyOptions o;
  o.fixed_step = kDt;
  auto peer = make(o);
  peer->step(kDt);
  std::vector<double> ns;
  ns.reserve(static_cast<std::size_t>(st.max_iterations));
  long allocs = 0;
  const long steps0 = peer->steps_taken();
  for (auto _ : st) {
    mbo::test::alloc_count_start();
    const auto t0 = Clock::now();
    peer->step(kDt);
    const auto t1 = Clock::now();
    allocs += mbo::test::alloc_count_stop();
    const double d = std::chrono::duration<double, std::nano>(t1 - t0).count();
    st.SetIterationTime(d * 1e-9);
    ns.push_back(d);
  }
  report_percentiles(st, ns, allocs);
  st.counters["sb_steps_per_step"] =
      static_cast<double>(peer->steps_taken() - steps0) / static_cast<double>(std::max<std::size_t>(ns.size(), 1));
  st.counters["nq"] = peer->coordinates();
}

// Simbody's forward dynamics alone (one realize to Acceleration after new q and u): the cost
// of one of RK-Merson's five stages, without the integrator's bookkeeping.
void simbody_dynamics(benchmark::State& st,
                      const std::function<std::unique_ptr<SimbodyPeer>(const SimbodyOptions&)>& make) {
  SimbodyOptions o;
  o.fixed_step = kDt;
  auto peer = make(o);
  peer->step(kDt);
  peer->evaluate_dynamics();
  std::vector<double> ns;
  ns.reserve(static_cast<std::size_t>(st.max_iterations));
  long allocs = 0;
  for (auto _ : st) {
    mbo::test::alloc_count_start();
    const auto t0 = Clock::now();
    peer->evaluate_dynamics();
    const auto t1 = Clock::now();
    allocs += mbo::test::alloc_count_stop();
    const double d = std::chrono::duration<double, std::nano>(t1 - t0).count();
    st.SetIterationTime(d * 1e-9);
    ns.push_back(d);
  }
  report_percentiles(st, ns, allocs);
}
#endif

// Enough steps for a p99.9 backed by 20+ samples; the long chain gets fewer for time's sake.
int steps_for(int n) { return n >= 64 ? 20000 : n >= 16 ? 50000 : 100000; }

void register_all() {
  auto reg = [](const std::string& name, int steps, auto fn) {
    benchmark::RegisterBenchmark(name.c_str(), fn)->UseManualTime()->Iterations(steps)->Unit(benchmark::kMicrosecond);
  };
  reg("mb_step/fourbar", 100000,
      [](benchmark::State& st) { engine_step(st, [] { return mbo::peers::engine_fourbar(kModels, {}); }); });
  reg("mb_step/slider_crank", 100000,
      [](benchmark::State& st) { engine_step(st, [] { return mbo::peers::engine_slider_crank(kModels, {}); }); });
  for (int n : {1, 4, 16, 64})
    reg("mb_step/chain/" + std::to_string(n), steps_for(n), [n](benchmark::State& st) {
      engine_step(st, [n] { return mbo::peers::engine_chain(mbo::peers::ChainSpec{n}); });
    });
#if defined(MBO_BENCH_HAS_SIMBODY)
  reg("simbody_step/fourbar", 100000, [](benchmark::State& st) {
    simbody_step(st, [](const SimbodyOptions& o) { return SimbodyPeer::fourbar({}, o); });
  });
  reg("simbody_step/slider_crank", 100000, [](benchmark::State& st) {
    simbody_step(st, [](const SimbodyOptions& o) { return SimbodyPeer::slider_crank({}, o); });
  });
  for (int n : {1, 4, 16, 64})
    reg("simbody_step/chain/" + std::to_string(n), steps_for(n), [n](benchmark::State& st) {
      simbody_step(st, [n](const SimbodyOptions& o) { return SimbodyPeer::chain(mbo::peers::ChainSpec{n}, o); });
    });
  reg("simbody_dynamics/fourbar", 100000, [](benchmark::State& st) {
    simbody_dynamics(st, [](const SimbodyOptions& o) { return SimbodyPeer::fourbar({}, o); });
  });
  reg("simbody_dynamics/slider_crank", 100000, [](benchmark::State& st) {
    simbody_dynamics(st, [](const SimbodyOptions& o) { return SimbodyPeer::slider_crank({}, o); });
  });
  for (int n : {1, 4, 16, 64})
    reg("simbody_dynamics/chain/" + std::to_string(n), steps_for(n), [n](benchmark::State& st) {
      simbody_dynamics(st, [n](const SimbodyOptions& o) { return SimbodyPeer::chain(mbo::peers::ChainSpec{n}, o); });
    });
#endif
}

[[maybe_unused]] const bool g_registered = (register_all(), true);

}  // namespace

#endif  // MBO_BENCH_HAS_PEER_SUPPORT
