// The part of a vehicle model the chassis-mounted sensors read: the unit triad u, v, w of the
// chassis (columns of its rotation matrix C, Sinigaglia 2016 eq. (111)) and body points as linear
// vectors (r = r_CH + x u + y v + z w, eq. (83)). Mounting rotation T: columns are the sensor's
// axes in chassis axes (eqs. (103), (112)).
#pragma once

#include <Eigen/Dense>

#include "mbobserver/estimation/sensor.hpp"
#include "mbobserver/mb/constraints.hpp"

namespace mbo::est {

struct ChassisFrame {
  int u = 0, v = 0, w = 0;  // first q slot of each unit vector (3-D model)
  mb::LinearVec point(const mb::LinearVec& origin, const Eigen::Vector3d& local) const {
    mb::LinearVec p = origin;
    const int s[3] = {u, v, w};
    for (int k = 0; k < 3; ++k)
      if (local[k] != 0) p.terms.push_back({s[k], local[k], 0});
    return p;
  }
  Eigen::Matrix3d rotation(const VectorXd& x) const {
    Eigen::Matrix3d C;
    C.col(0) = x.segment<3>(u);
    C.col(1) = x.segment<3>(v);
    C.col(2) = x.segment<3>(w);
    return C;
  }
};

// Pushes a 3-vector gradient through a linear vector's terms (3-D, no perpendicular part).
inline void push_gradient(const mb::LinearVec& p, const Eigen::Vector3d& g, SparseGradient& out) {
  for (const auto& t : p.terms)
    for (int k = 0; k < 3; ++k) out.add(t.slot + k, t.a * g[k]);
}

}  // namespace mbo::est
