// Which sparse LDL' for the tangent (issue 3: "Eigen's sparse LDLT or SuiteSparse CHOLMOD:
// pick by measurement"). The same matrices, in the same run: the vehicle's tangent (73x73) and
// a spatial chain's (16 and 64 bodies), each taken after a few steps of a real run, factorised
// numerically again and again by
//   ours:                mb::SparseSystem (AMD once, row patterns of L precomputed)
//   eigen_ldlt:          Eigen::SimplicialLDLT::factorize (AMD once, elimination tree per call)
//   cholmod_simplicial:  CHOLMOD's LDL' (its own ordering once), through Eigen/CholmodSupport
//   cholmod_supernodal:  CHOLMOD's supernodal LL'
// Counters are microseconds per numeric factorisation (mean of many).
#include <chrono>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>

#include <Eigen/CholmodSupport>
#include <Eigen/SparseCholesky>

#if defined(MBO_BENCH_HAS_PEER_SUPPORT)
#include "chain_model.hpp"
#endif
#include "mbobserver/mb/dynamics.hpp"
#include "mbobserver/mb/state.hpp"
#include "mbobserver/mb/workspace.hpp"
#include "mbobserver/models/vehicle.hpp"

namespace {

using namespace mbo;
using Clock = std::chrono::steady_clock;
using Sparse = Eigen::SparseMatrix<double>;

// The tangent in the model's own ordering (upper triangle), read back through the slots.
Sparse tangent_matrix(mb::SparseSystem& T) {
  std::vector<Eigen::Triplet<double>> t;
  const int n = T.size();
  for (int j = 0; j < n; ++j)
    for (int i = 0; i <= j; ++i)
      if (const int s = T.slot(i, j); s >= 0) t.emplace_back(i, j, T.values()[s]);
  Sparse A(n, n);
  A.setFromTriplets(t.begin(), t.end());
  A.makeCompressed();
  return A;
}

template <class F>
double micros_per_call(int reps, F&& f) {
  const auto t0 = Clock::now();
  for (int i = 0; i < reps; ++i) f();
  return std::chrono::duration<double, std::micro>(Clock::now() - t0).count() / reps;
}

void compare(benchmark::State& state, mb::Workspace& ws, const std::string& label) {
  mb::SparseSystem& T = ws.tangent;
  const Sparse A = tangent_matrix(T);
  Eigen::SimplicialLDLT<Sparse, Eigen::Upper> eigen;
  eigen.analyzePattern(A);
  Eigen::CholmodSimplicialLDLT<Sparse, Eigen::Upper> simplicial;
  simplicial.analyzePattern(A);
  Eigen::CholmodSupernodalLLT<Sparse, Eigen::Upper> supernodal;
  supernodal.analyzePattern(A);
  const int reps = T.size() > 200 ? 500 : 3000;
  double ours = 0, e = 0, cs = 0, cn = 0;
  bool ok = true;
  for (auto _ : state) {
    ours = micros_per_call(reps, [&] { ok = T.factorize() && ok; });
    e = micros_per_call(reps, [&] { eigen.factorize(A); });
    cs = micros_per_call(reps, [&] { simplicial.factorize(A); });
    cn = micros_per_call(reps, [&] { supernodal.factorize(A); });
  }
  ok = ok && eigen.info() == Eigen::Success && simplicial.info() == Eigen::Success &&
       supernodal.info() == Eigen::Success;
  if (!ok) state.SkipWithError("a factorisation failed");
  state.counters["n"] = T.size();
  state.counters["factor_nnz"] = T.factor_nonzeros();
  state.counters["ours_us"] = ours;
  state.counters["eigen_ldlt_us"] = e;
  state.counters["cholmod_simplicial_us"] = cs;
  state.counters["cholmod_supernodal_us"] = cn;
  state.SetLabel(label);
}

void BM_TangentFactorisation_Vehicle(benchmark::State& state) {
  const auto v =
      models::build_vehicle(models::load_vehicle_params(std::string(MBO_SOURCE_DIR) + "/config/vehicles/sedan.json"));
  mb::Workspace ws(v.model);
  models::VehicleStart start;
  start.speed = 20;
  mb::State s = models::start_vehicle(v, ws, start);
  for (int i = 0; i < 10; ++i) mb::step(v.model, s, ws, 0.002);
  compare(state, ws, "sedan at 20 m/s");
}

#if defined(MBO_BENCH_HAS_PEER_SUPPORT)
void BM_TangentFactorisation_Chain(benchmark::State& state) {
  peers::ChainSpec spec;
  spec.n = static_cast<int>(state.range(0));
  const auto m = peers::build_chain_model(spec);
  mb::Workspace ws(m);
  mb::State s = mb::initial_state(m);
  mb::initialize_accelerations(m, s, ws);
  for (int i = 0; i < 5; ++i) mb::step(m, s, ws, 0.001);
  compare(state, ws, "spatial chain of " + std::to_string(spec.n) + " bodies");
}
#endif

}  // namespace

BENCHMARK(BM_TangentFactorisation_Vehicle)->Iterations(1)->Unit(benchmark::kMillisecond);
#if defined(MBO_BENCH_HAS_PEER_SUPPORT)
BENCHMARK(BM_TangentFactorisation_Chain)->Arg(16)->Arg(64)->Iterations(1)->Unit(benchmark::kMillisecond);
#endif
