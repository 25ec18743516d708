// Measures where our engine and Simbody part as the step shrinks: for each mechanism, the
// running maximum over time of the largest difference of the tracked positions (m) or unit
// vectors, and the energy drift of both programs. Usage:
//   mbo_peer_divergence [mechanism] [horizon_s] [chain_penalty]
// mechanism: pendulum | top | gyroscope | chain1 | chain4 | fourbar | slider | all (default all).
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "engine_runs.hpp"
#include "simbody_peer.hpp"

using namespace mbo::peers;

namespace {

const std::string kModels = std::string(MBO_SOURCE_DIR) + "/config/models";
double g_chain_penalty = kChainPenalty;

struct Mechanism {
  std::string name;
  std::function<std::unique_ptr<EngineRun>()> engine;
  std::function<std::unique_ptr<SimbodyPeer>(double accuracy)> peer;
  std::function<std::unique_ptr<SimbodyPeer>(const SimbodyOptions&)> peer_fixed;
};

TopSpec spinning() {
  TopSpec s;
  // 50 rad/s about the symmetry axis w0 = (sin 0.3, 0, cos 0.3).
  s.omega = {50 * std::sin(0.3), 0, 50 * std::cos(0.3)};
  return s;
}

std::vector<Mechanism> mechanisms() {
  auto acc = [](double a) {
    SimbodyOptions o;
    o.accuracy = a;
    o.constraint_tolerance = std::min(1e-10, a);
    return o;
  };
  return {
      {"pendulum", [] { return engine_double_pendulum(kModels, {}); },
       [=](double a) { return SimbodyPeer::double_pendulum({}, acc(a)); },
       [](const SimbodyOptions& o) { return SimbodyPeer::double_pendulum({}, o); }},
      {"top", [] { return engine_spinning_top(kModels, spinning()); },
       [=](double a) { return SimbodyPeer::spinning_top(spinning(), acc(a)); },
       [](const SimbodyOptions& o) { return SimbodyPeer::spinning_top(spinning(), o); }},
      {"gyroscope", [] { return engine_gyroscope(spinning()); },
       [=](double a) { return SimbodyPeer::spinning_top(spinning(), acc(a)); },
       [](const SimbodyOptions& o) { return SimbodyPeer::spinning_top(spinning(), o); }},
      {"chain1", [] { return engine_chain(ChainSpec{1}, g_chain_penalty); },
       [=](double a) { return SimbodyPeer::chain(ChainSpec{1}, acc(a)); },
       [](const SimbodyOptions& o) { return SimbodyPeer::chain(ChainSpec{1}, o); }},
      {"chain4", [] { return engine_chain(ChainSpec{4}, g_chain_penalty); },
       [=](double a) { return SimbodyPeer::chain(ChainSpec{4}, acc(a)); },
       [](const SimbodyOptions& o) { return SimbodyPeer::chain(ChainSpec{4}, o); }},
      {"fourbar", [] { return engine_fourbar(kModels, {}); },
       [=](double a) { return SimbodyPeer::fourbar({}, acc(a)); },
       [](const SimbodyOptions& o) { return SimbodyPeer::fourbar({}, o); }},
      {"slider", [] { return engine_slider_crank(kModels, {}); },
       [=](double a) { return SimbodyPeer::slider_crank({}, acc(a)); },
       [](const SimbodyOptions& o) { return SimbodyPeer::slider_crank({}, o); }},
  };
}

void run(const Mechanism& m, double horizon) {
  const double sample = 0.01;
  const int ns = static_cast<int>(std::lround(horizon / sample));
  // Reference: Simbody at 1e-12; its distance from a 1e-10 run shows how converged it is.
  std::vector<std::vector<double>> ref(ns + 1);
  std::vector<double> ref_e(ns + 1);
  auto p = m.peer(1e-12);
  auto p2 = m.peer(1e-10);
  double ref_self = 0, peer_drift = 0;
  const double pe0 = p->energy();
  ref[0] = p->tracked();
  for (int k = 1; k <= ns; ++k) {
    p->advance_to(k * sample);
    p2->advance_to(k * sample);
    ref[k] = p->tracked();
    ref_self = std::max(ref_self, max_abs_difference(ref[k], p2->tracked()));
    peer_drift = std::max(peer_drift, std::abs(p->energy() - pe0));
  }
  std::printf(
      "\n== %s: horizon %.1f s; Simbody RK-Merson 1e-12: %ld steps, |E-E0|max %.2e J, "
      "|Phi|max %.1e, distance to its 1e-10 run %.1e\n",
      m.name.c_str(), horizon, p->steps_taken(), peer_drift, p->constraint_error(), ref_self);
  const std::vector<double> marks{0.5, 1, 2, 3, 5, 10, 20, 30};
  std::printf("%-8s", "dt");
  for (double t : marks)
    if (t <= horizon + 1e-9) std::printf("  max<=%-5g", t);
  std::printf("  |E-E0|max  |Phi|max  E0 ours-Simbody\n");
  // Simbody itself at the bench's fixed 1 ms RK-Merson step, for the same-step comparison.
  {
    SimbodyOptions fo;
    fo.fixed_step = 1e-3;
    auto f = m.peer_fixed(fo);
    const double f0 = f->energy();
    double err = 0, drift = 0;
    std::vector<double> at_mark;
    std::size_t mi = 0;
    for (int k = 1; k <= ns; ++k) {
      f->advance_to(k * sample);
      err = std::max(err, max_abs_difference(f->tracked(), ref[k]));
      drift = std::max(drift, std::abs(f->energy() - f0));
      while (mi < marks.size() && std::abs(k * sample - marks[mi]) < 1e-9) {
        at_mark.push_back(err);
        ++mi;
      }
    }
    std::printf("%-8s", "SbRK1ms");
    for (double v : at_mark) std::printf("  %-10.2e", v);
    std::printf("  %-9.2e  %-8.1e  (Simbody RK-Merson, fixed 1 ms)\n", drift, f->constraint_error());
  }
  for (double dt : {1e-3, 5e-4, 2.5e-4, 1e-4}) {
    auto e = m.engine();
    const double e0 = e->energy();
    double err = 0, drift = 0;
    std::vector<double> at_mark;
    std::size_t mi = 0;
    err = max_abs_difference(e->tracked_values(), ref[0]);
    bool ok = true;
    for (int k = 1; k <= ns && ok; ++k) {
      ok = e->advance_to(k * sample, dt);
      err = std::max(err, max_abs_difference(e->tracked_values(), ref[k]));
      drift = std::max(drift, std::abs(e->energy() - e0));
      while (mi < marks.size() && std::abs(k * sample - marks[mi]) < 1e-9) {
        at_mark.push_back(err);
        ++mi;
      }
    }
    std::printf("%-8g", dt);
    for (double v : at_mark) std::printf("  %-10.2e", v);
    std::printf("  %-9.2e  %-8.1e  %.1e%s\n", drift, e->max_phi, e0 - pe0, ok ? "" : "  (step did not converge)");
  }
}

}  // namespace

int main(int argc, char** argv) {
  const std::string which = argc > 1 ? argv[1] : "all";
  const double horizon = argc > 2 ? std::atof(argv[2]) : 10;
  if (argc > 3) g_chain_penalty = std::atof(argv[3]);
  for (const auto& m : mechanisms())
    if (which == "all" || which == m.name) run(m, horizon);
}
