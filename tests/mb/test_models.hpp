// Models for the engine's tests: the JSON reference mechanisms and a 3-D model built in code
// that uses every constraint kind (orientation angles, a strut with a travel coordinate,
// steering and spin as products of trigonometric factors, a 3-D angle about a moving axis,
// dot constraints, a driven coordinate).
#pragma once

#include <string>

#include "mbobserver/mb/builder.hpp"
#include "mbobserver/mb/model_json.hpp"

namespace mbo::test {

inline std::string model_path(const std::string& name) {
  return std::string(MBO_SOURCE_DIR) + "/config/models/" + name + ".json";
}

inline mb::Model kitchen_sink_model() {
  using namespace mb;
  ModelBuilder b("kitchen_sink", 3);
  b.set_gravity({0, 0, -9.81});
  const double yaw0 = 0.3, pitch0 = 0.05, roll0 = -0.04;
  Eigen::Matrix3d R = (Eigen::AngleAxisd(yaw0, Vector3d::UnitZ()) * Eigen::AngleAxisd(pitch0, Vector3d::UnitY()) *
                       Eigen::AngleAxisd(roll0, Vector3d::UnitX()))
                          .toRotationMatrix();
  int P0 = b.point("P0", {1, 2, 0.5});
  int u = b.vector("u", R.col(0)), v = b.vector("v", R.col(1)), w = b.vector("w", R.col(2));
  int yaw = b.scalar("yaw", yaw0, ScalarKind::angle);
  int pitch = b.scalar("pitch", pitch0, ScalarKind::angle);
  int roll = b.scalar("roll", roll0, ScalarKind::angle);
  b.orientation_zyx(u, v, w, yaw, pitch, roll);
  BodySpec ch;
  ch.name = "chassis";
  ch.mass = 300;
  ch.origin = P0;
  ch.basis = {{u, -1}, {v, -1}, {w, -1}};
  ch.points[P0] = Vector3d::Zero();
  ch.vectors[u] = Vector3d::UnitX();
  ch.vectors[v] = Vector3d::UnitY();
  ch.vectors[w] = Vector3d::UnitZ();
  ch.com = {0.3, 0, 0.1};
  ch.inertia = Eigen::Vector3d(100, 300, 350).asDiagonal();
  ch.rigid_constraints = false;
  int chassis = b.body(ch);

  // Wheel centre C on a strut through a chassis point, along the chassis w axis.
  Vector3d attach(1.2, 0.8, -0.2);
  Vector3d C0 = Vector3d(1, 2, 0.5) + R * (attach + Vector3d(0, 0, -0.1));
  int C = b.point("C", C0);
  int st = b.scalar("travel", -0.1, ScalarKind::distance);
  b.point_on_line(C, b.body_point(chassis, attach), b.of(w), st);
  // Steering delta (driven) and spin theta.
  int delta = b.scalar("delta", 0.1, ScalarKind::angle);
  int theta = b.scalar("theta", 0.7, ScalarKind::angle);
  int in_delta = b.input("steer"), in_rate = b.input("steer_rate"), in_acc = b.input("steer_acc");
  b.driving(delta, in_delta, in_rate, in_acc);
  const double d0 = 0.1, t0 = 0.7;
  Vector3d a0 = R * Vector3d(-std::sin(d0), std::cos(d0), 0);
  Vector3d r0 = R * (std::cos(t0) * Vector3d(std::cos(d0), std::sin(d0), 0) + std::sin(t0) * Vector3d::UnitZ());
  int a = b.vector("a", a0);
  int r = b.vector("r", r0);
  const int U = b.entity(u).slot, V = b.entity(v).slot, W = b.entity(w).slot;
  const int D = b.entity(delta).slot, T = b.entity(theta).slot;
  auto term = [](double c, std::initializer_list<Factor> f, int slot) {
    CombinationTerm t;
    t.c = c;
    t.nfactors = static_cast<int>(f.size());
    std::copy(f.begin(), f.end(), t.factors.begin());
    t.vec = {slot, 1, 0};
    return t;
  };
  Factor cd{D, FactorKind::cos}, sd{D, FactorKind::sin}, ct{T, FactorKind::cos}, sT{T, FactorKind::sin};
  // a = -sin(delta) u + cos(delta) v
  b.combination({term(1, {}, b.entity(a).slot), term(1, {sd}, U), term(-1, {cd}, V)}, "axle");
  // r = cos(theta) (cos(delta) u + sin(delta) v) + sin(theta) w
  b.combination({term(1, {}, b.entity(r).slot), term(-1, {ct, cd}, U), term(-1, {ct, sd}, V), term(-1, {sT}, W)},
                "spin");
  BodySpec wh;
  wh.name = "wheel";
  wh.mass = 20;
  wh.origin = C;
  int sv = b.vector("s", Vector3d(r0.cross(a0)));
  b.combination({term(1, {}, b.entity(sv).slot), term(1, {sT, cd}, U), term(1, {sT, sd}, V), term(-1, {ct}, W)},
                "spin s");
  wh.basis = {{a, -1}, {r, -1}, {sv, -1}};
  wh.points[C] = Vector3d::Zero();
  wh.vectors[a] = Vector3d::UnitY();
  wh.vectors[r] = Vector3d::UnitX();
  wh.vectors[sv] = Vector3d::UnitZ();  // r x a
  wh.inertia = Eigen::Vector3d(0.8, 1.2, 0.8).asDiagonal();
  wh.rigid_constraints = false;
  b.body(wh);

  // A flap rotating about v (3-D angle with a moving axis).
  const double phi0 = 0.4;
  Vector3d f0 = std::cos(phi0) * R.col(0) - std::sin(phi0) * R.col(2);  // rotation about v
  int f = b.vector("f", f0);
  int phi = b.scalar("phi", phi0, ScalarKind::angle);
  b.dot(b.of(f), b.of(f), 1, "unit f");
  b.dot(b.of(f), b.of(v), 0, "f perp v");
  b.angle(phi, b.of(u), b.of(f), b.of(v), "flap angle");
  // The flap's mass is a point at P0 + 0.5 f (a combination constraint) so its angle has inertia.
  int Pf = b.point("Pf", Vector3d(1, 2, 0.5) + 0.5 * f0);
  b.combination({term(1, {}, b.entity(Pf).slot), term(-1, {}, b.entity(P0).slot), term(-0.5, {}, b.entity(f).slot)},
                "flap tip");
  BodySpec fl;
  fl.name = "flap";
  fl.mass = 2;
  fl.origin = Pf;
  b.body(fl);  // a point mass (exercises empty bases)

  b.independent({b.entity(P0).slot, b.entity(P0).slot + 1, b.entity(P0).slot + 2, b.entity(yaw).slot,
                 b.entity(pitch).slot, b.entity(roll).slot, b.entity(st).slot, T, b.entity(phi).slot});
  b.spring_damper({b.body_point(chassis, {1, 0, 0}), b.of(C), {}, 1e4, 50, 0.3, 100, {}, {}});
  return std::move(b).build();
}

}  // namespace mbo::test
