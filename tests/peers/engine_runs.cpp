#include "engine_runs.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "chain_model.hpp"
#include "mbobserver/mb/builder.hpp"
#include "mbobserver/mb/forces.hpp"
#include "mbobserver/mb/kinematics.hpp"
#include "mbobserver/mb/model_json.hpp"

namespace mbo::peers {

using mbo::mb::Model;

EngineRun::EngineRun(Model m) : model(std::move(m)), ws(model), s(mbo::mb::initial_state(model)) {}

std::vector<double> EngineRun::tracked_values() const {
  std::vector<double> out;
  out.reserve(3 * tracked.size());
  for (int slot : tracked)
    for (int k = 0; k < 3; ++k) out.push_back(k < model.dim ? s.q[slot + k] : 0.0);
  if (spin >= 0) {
    // u, v turned about w by the spin: u cos + v sin, v cos - u sin (w x u = v).
    const double c = std::cos(s.q[spin]), sn = std::sin(s.q[spin]);
    for (int k = 0; k < 3; ++k) {
      const double u = out[k], v = out[3 + k];
      out[k] = c * u + sn * v;
      out[3 + k] = c * v - sn * u;
    }
  }
  return out;
}

double EngineRun::energy() {
  ws.x.head(model.nq) = s.q;
  return mbo::mb::kinetic_energy(model, ws.x, s.qd) + mbo::mb::potential_energy(model, ws.x);
}

bool EngineRun::advance_to(double t, double dt) {
  while (s.t < t - 0.5 * dt) {
    last = mbo::mb::step(model, s, ws, dt);
    ++steps;
    if (!last.converged) return false;
    max_phi = std::max(max_phi, last.phi_norm);
  }
  return true;
}

double max_abs_difference(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.size() != b.size()) throw std::invalid_argument("max_abs_difference: sizes differ");
  double m = 0;
  for (std::size_t i = 0; i < a.size(); ++i) m = std::max(m, std::abs(a[i] - b[i]));
  return m;
}

namespace {

int slot_of(const Model& m, const std::string& entity) {
  const int e = m.entity(entity);
  if (e < 0) throw std::invalid_argument(m.name + ": no entity \"" + entity + "\"");
  return m.entities[e].slot;
}

// Dependent positions and velocities from the independent coordinates already in r.s, then
// consistent accelerations.
void assemble(EngineRun& r) {
  const auto k = mbo::mb::solve_position(r.model, r.s.q, r.s.u, r.ws);
  if (!k.converged)
    throw std::runtime_error(r.model.name +
                             ": position problem did not converge (|Phi| = " + std::to_string(k.residual) + ")");
  mbo::mb::solve_velocity(r.model, r.s.u, r.s.qd, r.ws);
  mbo::mb::initialize_accelerations(r.model, r.s, r.ws);
}

std::string join(const std::string& dir, const char* file) { return dir + "/" + file; }

}  // namespace

std::unique_ptr<EngineRun> engine_double_pendulum(const std::string& dir, const DoublePendulumSpec& sp) {
  auto r = std::make_unique<EngineRun>(mbo::mb::load_model(join(dir, "double_pendulum.json")));
  const int t1 = slot_of(r->model, "theta1"), t2 = slot_of(r->model, "theta2");
  r->s.q[t1] = sp.theta1;
  r->s.q[t2] = sp.theta2;
  r->s.qd[t1] = sp.omega1;
  r->s.qd[t2] = sp.omega2;
  r->tracked = {slot_of(r->model, "P1"), slot_of(r->model, "P2")};
  assemble(*r);
  return r;
}

std::unique_ptr<EngineRun> engine_spinning_top(const std::string& dir, const TopSpec& sp) {
  auto r = std::make_unique<EngineRun>(mbo::mb::load_model(join(dir, "spinning_top.json")));
  const int yaw = slot_of(r->model, "yaw"), pitch = slot_of(r->model, "pitch"), roll = slot_of(r->model, "roll");
  r->s.q[yaw] = sp.yaw;
  r->s.q[pitch] = sp.pitch;
  r->s.q[roll] = sp.roll;
  // omega = yaw' ez + pitch' Rz(yaw) ey + roll' Rz(yaw) Ry(pitch) ex (ZYX angles): the angle
  // rates of the given angular velocity; the velocity problem then gives u', v', w'.
  const double cy = std::cos(sp.yaw), sy = std::sin(sp.yaw), cp = std::cos(sp.pitch), spi = std::sin(sp.pitch);
  Eigen::Matrix3d E;
  E.col(0) = Eigen::Vector3d::UnitZ();
  E.col(1) = Eigen::Vector3d(-sy, cy, 0);
  E.col(2) = Eigen::Vector3d(cy * cp, sy * cp, -spi);
  const Eigen::Vector3d rates = E.lu().solve(Eigen::Vector3d(sp.omega[0], sp.omega[1], sp.omega[2]));
  r->s.qd[yaw] = rates[0];
  r->s.qd[pitch] = rates[1];
  r->s.qd[roll] = rates[2];
  r->tracked = {slot_of(r->model, "u"), slot_of(r->model, "v"), slot_of(r->model, "w")};
  assemble(*r);
  return r;
}

std::unique_ptr<EngineRun> engine_gyroscope(const TopSpec& sp) {
  if (sp.roll != 0) throw std::invalid_argument("engine_gyroscope: the gimbal has no roll");
  using Eigen::Vector3d;
  mbo::mb::ModelBuilder b("gyroscope", 3);
  b.set_gravity({0, 0, -sp.g});
  const Eigen::Matrix3d R0 =
      (Eigen::AngleAxisd(sp.yaw, Vector3d::UnitZ()) * Eigen::AngleAxisd(sp.pitch, Vector3d::UnitY()))
          .toRotationMatrix();
  const int O = b.point("O", Vector3d::Zero(), true);
  const int u = b.vector("u", R0.col(0)), v = b.vector("v", R0.col(1)), w = b.vector("w", R0.col(2));
  const int yaw = b.scalar("yaw", sp.yaw, mbo::mb::ScalarKind::angle);
  const int pitch = b.scalar("pitch", sp.pitch, mbo::mb::ScalarKind::angle);
  const int roll = b.scalar("roll", 0, mbo::mb::ScalarKind::angle, true);
  const int spin = b.scalar("spin", 0, mbo::mb::ScalarKind::angle);
  b.orientation_zyx(u, v, w, yaw, pitch, roll);
  mbo::mb::BodySpec c;
  c.name = "top";
  c.mass = sp.mass;
  c.origin = O;
  c.basis = {{u, -1}, {v, -1}, {w, -1}};
  c.vectors[u] = Vector3d::UnitX();
  c.vectors[v] = Vector3d::UnitY();
  c.vectors[w] = Vector3d::UnitZ();
  c.com = Vector3d(0, 0, sp.com_height);
  c.inertia = Vector3d(sp.inertia_transverse, sp.inertia_transverse, sp.inertia_axial).asDiagonal();
  c.rigid_constraints = false;
  b.body(c);
  b.rotor(spin, v, u, sp.inertia_axial);  // about u x v = w
  b.independent({b.entity(yaw).slot, b.entity(pitch).slot, b.entity(spin).slot});
  auto r = std::make_unique<EngineRun>(std::move(b).build());
  // omega = yaw' ez + pitch' Rz(yaw) ey + spin' w.
  Eigen::Matrix3d E;
  E.col(0) = Vector3d::UnitZ();
  E.col(1) = Vector3d(-std::sin(sp.yaw), std::cos(sp.yaw), 0);
  E.col(2) = R0.col(2);
  const Vector3d rates = E.lu().solve(Vector3d(sp.omega[0], sp.omega[1], sp.omega[2]));
  r->s.qd[slot_of(r->model, "yaw")] = rates[0];
  r->s.qd[slot_of(r->model, "pitch")] = rates[1];
  r->s.qd[slot_of(r->model, "spin")] = rates[2];
  r->tracked = {slot_of(r->model, "u"), slot_of(r->model, "v"), slot_of(r->model, "w")};
  r->spin = slot_of(r->model, "spin");
  assemble(*r);
  return r;
}

std::unique_ptr<EngineRun> engine_fourbar(const std::string& dir, const FourBarSpec& sp) {
  auto r = std::make_unique<EngineRun>(mbo::mb::load_model(join(dir, "fourbar.json")));
  r->s.q[slot_of(r->model, "theta")] = sp.theta;
  r->tracked = {slot_of(r->model, "P1"), slot_of(r->model, "P2")};
  assemble(*r);
  return r;
}

std::unique_ptr<EngineRun> engine_slider_crank(const std::string& dir, const SliderCrankSpec& sp) {
  auto r = std::make_unique<EngineRun>(mbo::mb::load_model(join(dir, "slider_crank.json")));
  r->s.q[slot_of(r->model, "theta")] = sp.theta;
  r->tracked = {slot_of(r->model, "P1"), slot_of(r->model, "P2")};
  assemble(*r);
  return r;
}

std::unique_ptr<EngineRun> engine_chain(const ChainSpec& sp, double penalty) {
  auto r = std::make_unique<EngineRun>(build_chain_model(sp, penalty));
  r->tracked = chain_point_slots(r->model, sp.n);
  // Exact initial coordinates at rest: only the accelerations are needed.
  mbo::mb::initialize_accelerations(r->model, r->s, r->ws);
  return r;
}

}  // namespace mbo::peers
