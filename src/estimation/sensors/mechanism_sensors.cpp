#include "mbobserver/estimation/sensors/mechanism_sensors.hpp"

#include <cmath>

#include "mbobserver/mb/constraints.hpp"

namespace mbo::est {
namespace {

// Pushes a gradient w (3-vector, d/dv of a functional of the linear vector v) through v's
// terms into a SparseGradient.
void push(const mb::LinearVec& v, const Eigen::Vector3d& w, int dim, SparseGradient& out) {
  for (const auto& t : v.terms) {
    Eigen::Vector3d gt = t.a * w + t.b * Eigen::Vector3d(w.y(), -w.x(), 0);
    for (int k = 0; k < dim; ++k) out.add(t.slot + k, gt[k]);
  }
}

}  // namespace

double EncoderSensor::measure(const MeasureContext& c, int, Gradients* g) const {
  if (g) g->dq.add(slot_, 1.0);
  return c.x[slot_];
}

double BodyAngleSensor::measure(const MeasureContext& c, int, Gradients* g) const {
  Eigen::Vector3d e = mb::evaluate(e_, c.x, c.model.dim);
  double r2 = e.x() * e.x() + e.y() * e.y();
  if (g) push(e_, Eigen::Vector3d(-e.y() / r2, e.x() / r2, 0), c.model.dim, g->dq);
  return wrap_angle(std::atan2(e.y(), e.x()) + offset_);
}

double PlanarGyroSensor::measure(const MeasureContext& c, int, Gradients* g) const {
  Eigen::Vector3d e = mb::evaluate(e_, c.x, c.model.dim), ed = mb::evaluate(e_, c.xd, c.model.dim);
  double r2 = e.x() * e.x() + e.y() * e.y();
  double cr = e.x() * ed.y() - e.y() * ed.x();
  if (g) {
    // d/de of cr/r2 = (ed_y, -ed_x)/r2 - 2 cr e / r2^2 ;  d/ded = (-e_y, e_x)/r2
    push(e_, Eigen::Vector3d(ed.y() / r2 - 2 * cr * e.x() / (r2 * r2), -ed.x() / r2 - 2 * cr * e.y() / (r2 * r2), 0),
         c.model.dim, g->dq);
    push(e_, Eigen::Vector3d(-e.y() / r2, e.x() / r2, 0), c.model.dim, g->dqd);
  }
  return cr / r2 + bias_;
}

double PlanarAccelerometerSensor::measure(const MeasureContext& c, int, Gradients* g) const {
  const int d = c.model.dim;
  Eigen::Vector3d e = mb::evaluate(e_, c.x, d);
  Eigen::Vector3d a = mb::evaluate(p_, c.xdd, d) - g_;
  double L = std::hypot(e.x(), e.y());
  Eigen::Vector3d perp(-e.y(), e.x(), 0);
  Eigen::Vector3d n = (c_ * e + s_ * perp) / L;
  if (g) {
    // h = n(e) . a ; n = M e / L with M = c I + s [ez x]; dh/de = M' a / L - (n . a) e / L^2
    Eigen::Vector3d Mta(c_ * a.x() + s_ * a.y(), -s_ * a.x() + c_ * a.y(), 0);
    push(e_, Mta / L - n.dot(a) * e / (L * L), d, g->dq);
    push(p_, n, d, g->dqdd);
  }
  return n.dot(a);
}

}  // namespace mbo::est
