// Aerodynamic drag on the chassis: F = -1/2 rho Cd A |v_r| v_r at a chassis point (the centre
// of pressure), v_r the point's velocity relative to the air (wind from inputs). Its damping
// C = 1/2 rho Cd A (|v_r| I + v_r v_r' / |v_r|), mapped to the chassis coordinates, goes to
// the tangent.
#pragma once

#include "mbobserver/mb/model.hpp"

namespace mbo::models {

class AeroDrag final : public mb::CustomForce {
 public:
  // local: the point's coordinates along u, v, w from P0; slots: first q slot of P0, u, v, w.
  AeroDrag(double half_rho_cd_a, const Eigen::Vector3d& local, int P0, int u, int v, int w, int input_wind_x,
           int input_wind_y);
  std::vector<int> coordinates() const override;
  void evaluate(const mb::Model& model, const Eigen::VectorXd& x, const Eigen::VectorXd& xd,
                const Eigen::VectorXd& inputs, double t, mb::ForceSink& out) const override;
  const Eigen::Vector3d& point() const { return local_; }  // along u, v, w from P0

 private:
  double k_;
  Eigen::Vector3d local_;
  int base_[4];
  int wind_x_, wind_y_;
};

}  // namespace mbo::models
