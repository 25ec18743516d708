#include "chain_model.hpp"

#include <string>

#include "mbobserver/mb/builder.hpp"

namespace mbo::peers {
namespace {
// "P" + std::to_string(i) trips GCC 12's -Wrestrict false positive (GCC bug 105329).
std::string label(const char* prefix, int i) {
  std::string s(prefix);
  s += std::to_string(i);
  return s;
}
}  // namespace

mbo::mb::Model build_chain_model(const ChainSpec& s, double penalty) {
  using Eigen::Vector3d;
  using mbo::mb::BasisItem;
  using mbo::mb::BodySpec;
  mbo::mb::ModelBuilder b(label("chain", s.n), 3);
  b.set_gravity(Vector3d(0, 0, -s.g));
  b.solver().penalty = penalty;
  int near = b.point("P0", Vector3d::Zero(), true);
  Vector3d at = Vector3d::Zero();
  for (int i = 1; i <= s.n; ++i) {
    const Mat3 r = chain_initial_rotation(s, i);
    const Vector3d x(r[0], r[3], r[6]), y(r[1], r[4], r[7]), z(r[2], r[5], r[8]);
    at += s.length * x;
    const int far = b.point(label("P", i), at);
    const int u = b.vector(label("u", i), y);
    const int v = b.vector(label("v", i), z);
    BodySpec body;
    body.name = label("link", i);
    body.mass = s.mass;
    body.origin = near;
    body.basis = {BasisItem{near, far}, BasisItem{u, -1}, BasisItem{v, -1}};
    body.points = {{near, Vector3d::Zero()}, {far, Vector3d(s.length, 0, 0)}};
    body.vectors = {{u, Vector3d::UnitY()}, {v, Vector3d::UnitZ()}};
    body.com = Vector3d(s.length / 2, 0, 0);
    body.inertia = Vector3d(s.inertia_axial(), s.inertia_transverse(), s.inertia_transverse()).asDiagonal();
    b.body(body);
    near = far;
  }
  return std::move(b).build();
}

std::vector<int> chain_point_slots(const mbo::mb::Model& m, int n) {
  std::vector<int> slots;
  for (int i = 1; i <= n; ++i) slots.push_back(m.entities.at(m.entity(label("P", i))).slot);
  return slots;
}

}  // namespace mbo::peers
