#include "mbobserver/models/aero.hpp"

#include "mbobserver/mb/forces.hpp"

namespace mbo::models {

AeroDrag::AeroDrag(double half_rho_cd_a, const Eigen::Vector3d& local, int P0, int u, int v, int w, int input_wind_x,
                   int input_wind_y)
    : k_(half_rho_cd_a), local_(local), base_{P0, u, v, w}, wind_x_(input_wind_x), wind_y_(input_wind_y) {}

std::vector<int> AeroDrag::coordinates() const {
  std::vector<int> c;
  for (int b : base_)
    for (int k = 0; k < 3; ++k) c.push_back(b + k);
  return c;
}

void AeroDrag::evaluate(const mb::Model&, const Eigen::VectorXd&, const Eigen::VectorXd& xd, const Eigen::VectorXd& u,
                        double, mb::ForceSink& out) const {
  // The point is P0 + cu u + cv v + cw w; its Jacobian is [I, cu I, cv I, cw I].
  const double coef[4] = {1, local_.x(), local_.y(), local_.z()};
  Eigen::Vector3d vel = Eigen::Vector3d::Zero();
  for (int b = 0; b < 4; ++b) vel += coef[b] * xd.segment<3>(base_[b]);
  Eigen::Vector3d wind(wind_x_ >= 0 ? u[wind_x_] : 0.0, wind_y_ >= 0 ? u[wind_y_] : 0.0, 0.0);
  const Eigen::Vector3d vr = vel - wind;
  const double speed = vr.norm();
  const Eigen::Vector3d F = -k_ * speed * vr;
  for (int b = 0; b < 4; ++b)
    for (int k = 0; k < 3; ++k) out.add(base_[b] + k, coef[b] * F[k]);
  if (!out.jacobians() || speed < 1e-9) return;
  const Eigen::Matrix3d Cp = k_ * (speed * Eigen::Matrix3d::Identity() + vr * vr.transpose() / speed);
  for (int b1 = 0; b1 < 4; ++b1)
    for (int b2 = 0; b2 < 4; ++b2) out.C().block<3, 3>(3 * b1, 3 * b2) += coef[b1] * coef[b2] * Cp;
}

}  // namespace mbo::models
