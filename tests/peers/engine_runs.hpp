// Our engine set up on the mechanisms of mechanisms.hpp, from the same initial conditions the
// Simbody peer uses: the geometry and masses come from config/models/*.json (or
// build_chain_model), the initial angles and rates from the spec, and the dependent
// coordinates from the kinematic problems. Shared by the peer test, the divergence tool and
// the bench.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "chain_model.hpp"
#include "mbobserver/mb/dynamics.hpp"
#include "mbobserver/mb/model.hpp"
#include "mbobserver/mb/state.hpp"
#include "mbobserver/mb/workspace.hpp"
#include "mechanisms.hpp"

namespace mbo::peers {

class EngineRun {
 public:
  explicit EngineRun(mbo::mb::Model m);
  EngineRun(const EngineRun&) = delete;
  EngineRun& operator=(const EngineRun&) = delete;

  const mbo::mb::Model model;
  mbo::mb::Workspace ws;
  mbo::mb::State s;
  std::vector<int> tracked;  // x slot of each tracked point or vector (model.dim components)
  // >= 0: the q slot of a rotor's spin about the third tracked vector w; the first two (u, v)
  // are then turned by it about w, giving the axes of the spinning body (engine_gyroscope).
  int spin = -1;

  // Tracked values as 3-D vectors (z = 0 in planar models), in the peer's order.
  std::vector<double> tracked_values() const;
  double energy();  // kinetic + gravitational potential
  // Steps of dt up to t (t a multiple of dt from s.t); false if a step did not converge.
  // Keeps the largest ||Phi||_inf after a step in max_phi.
  bool advance_to(double t, double dt);
  mbo::mb::StepResult last;
  double max_phi = 0;
  long steps = 0;
};

// `models_dir` holds double_pendulum.json, spinning_top.json, fourbar.json, slider_crank.json.
std::unique_ptr<EngineRun> engine_double_pendulum(const std::string& models_dir, const DoublePendulumSpec& spec);
std::unique_ptr<EngineRun> engine_spinning_top(const std::string& models_dir, const TopSpec& spec);
// The same top as a gimbal and a rotor (mb::Rotor): a carrier triad u, v, w = Rz(yaw) Ry(pitch)
// holding the top's mass, centre of gravity and inertia, and the spin about w as a rotor
// angle. spec.roll must be 0. Tracked: the top's u, v, w (see EngineRun::spin).
std::unique_ptr<EngineRun> engine_gyroscope(const TopSpec& spec);
std::unique_ptr<EngineRun> engine_fourbar(const std::string& models_dir, const FourBarSpec& spec);
std::unique_ptr<EngineRun> engine_slider_crank(const std::string& models_dir, const SliderCrankSpec& spec);
std::unique_ptr<EngineRun> engine_chain(const ChainSpec& spec, double penalty = kChainPenalty);

// max_k |a_k - b_k|
double max_abs_difference(const std::vector<double>& a, const std::vector<double>& b);

}  // namespace mbo::peers
