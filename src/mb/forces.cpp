#include "mbobserver/mb/forces.hpp"

#include <algorithm>
#include <cmath>

#include "mbobserver/mb/constraints.hpp"

namespace mbo::mb {
namespace {

// Same write-sequence scheme as the constraint Jacobian.
struct MatWriter {
  int nq;
  double* values = nullptr;
  const int* target = nullptr;
  std::vector<Model::Entry>* record = nullptr;
  int k = 0;
  void operator()(int i, int j, double v) {
    if (i >= nq || j >= nq) return;
    if (record)
      record->push_back({i, j});
    else
      values[target[k]] += v;
    ++k;
  }
};

// Q += J^T F for a force F applied at the linear point p.
void add_point_force(const LinearVec& p, const Vector3d& F, int dim, int nq, VectorXd& Q) {
  for (const auto& t : p.terms) {
    Vector3d g = t.a * F + t.b * Vector3d(F.y(), -F.x(), 0);
    for (int k = 0; k < dim; ++k)
      if (t.slot + k < nq) Q[t.slot + k] += g[k];
  }
}

// K_q += J^T Kd J over the terms of p (Kd a 3x3 matrix in the point's space).
void add_point_matrix(const LinearVec& p, const Eigen::Matrix3d& Kd, int dim, MatWriter& w) {
  auto term_matrix = [](const LinearTerm& t) {
    Eigen::Matrix3d A = t.a * Eigen::Matrix3d::Identity();
    A(0, 1) -= t.b;
    A(1, 0) += t.b;
    return A;
  };
  for (const auto& t1 : p.terms) {
    Eigen::Matrix3d A1 = term_matrix(t1);
    for (const auto& t2 : p.terms) {
      Eigen::Matrix3d B = A1.transpose() * Kd * term_matrix(t2);
      for (int r = 0; r < dim; ++r)
        for (int s = 0; s < dim; ++s) w(t1.slot + r, t2.slot + s, B(r, s));
    }
  }
}

void spring_damper(const Model& m, const SpringDamper& s, const VectorXd& x, const VectorXd& xd, bool jac, VectorXd& Q,
                   MatWriter* wk, MatWriter* wc) {
  Vector3d r1 = evaluate(s.p1, x, m.dim), r2 = evaluate(s.p2, x, m.dim);
  Vector3d v1 = evaluate(s.p1, xd, m.dim), v2 = evaluate(s.p2, xd, m.dim);
  Vector3d d = r2 - r1;
  double l = d.norm();
  Vector3d n = l > 0 ? Vector3d(d / l) : Vector3d::UnitX();
  double ldot = n.dot(v2 - v1);
  double e = l - s.l0;
  double f = s.preload + (s.spring.empty() ? s.k * e : s.spring.value(e)) +
             (s.damper.empty() ? s.c * ldot : s.damper.value(ldot));
  // Tension f pulls p1 towards p2 and p2 towards p1.
  add_point_force(s.p1, f * n, m.dim, m.nq, Q);
  add_point_force(s.p2, -f * n, m.dim, m.nq, Q);
  if (jac) {
    double ke = s.spring.empty() ? s.k : s.spring.slope(e);
    double ce = s.damper.empty() ? s.c : s.damper.slope(ldot);
    Eigen::Matrix3d nn = n * n.transpose();
    Eigen::Matrix3d P = Eigen::Matrix3d::Identity() - nn;
    if (m.dim == 2) P(2, 2) = 0;
    Eigen::Matrix3d Kd = ke * nn + (l > 0 ? f / l : 0.0) * P;
    Eigen::Matrix3d Cd = ce * nn;
    add_point_matrix(s.span, Kd, m.dim, *wk);
    add_point_matrix(s.span, Cd, m.dim, *wc);
  }
}

void coordinate_spring_damper(const CoordinateSpringDamper& s, const VectorXd& x, const VectorXd& xd, bool jac, int nq,
                              VectorXd& Q, MatWriter* wk, MatWriter* wc) {
  double d = x[s.slot] - (s.slot2 >= 0 ? x[s.slot2] : 0.0);
  double dd = xd[s.slot] - (s.slot2 >= 0 ? xd[s.slot2] : 0.0);
  double e = d - s.x0;
  double f =
      s.preload + (s.spring.empty() ? s.k * e : s.spring.value(e)) + (s.damper.empty() ? s.c * dd : s.damper.value(dd));
  if (s.slot < nq) Q[s.slot] -= f;
  if (s.slot2 >= 0 && s.slot2 < nq) Q[s.slot2] += f;
  if (jac) {
    double ke = s.spring.empty() ? s.k : s.spring.slope(e);
    double ce = s.damper.empty() ? s.c : s.damper.slope(dd);
    (*wk)(s.slot, s.slot, ke);
    (*wc)(s.slot, s.slot, ce);
    if (s.slot2 >= 0) {
      (*wk)(s.slot, s.slot2, -ke);
      (*wk)(s.slot2, s.slot, -ke);
      (*wk)(s.slot2, s.slot2, ke);
      (*wc)(s.slot, s.slot2, -ce);
      (*wc)(s.slot2, s.slot, -ce);
      (*wc)(s.slot2, s.slot2, ce);
    }
  }
}

void builtin_forces(const Model& m, const VectorXd& x, const VectorXd& xd, const VectorXd& u, bool jac, VectorXd& Q,
                    MatWriter& wk, MatWriter& wc) {
  for (const auto& p : m.point_forces) {
    Vector3d F = p.constant;
    for (int k = 0; k < 3; ++k)
      if (p.inputs[k] >= 0) F[k] += u[p.inputs[k]];
    add_point_force(p.point, F, m.dim, m.nq, Q);
  }
  for (const auto& bt : m.body_torques) {
    Vector3d T = bt.constant;
    for (int k = 0; k < 3; ++k)
      if (bt.inputs[k] >= 0) T[k] += u[bt.inputs[k]];
    const auto& body = m.bodies[bt.body];
    Eigen::Matrix3d G = Eigen::Matrix3d::Zero();
    Vector3d e[3];
    const int nb = static_cast<int>(body.basis.size());
    for (int k = 0; k < nb; ++k) {
      e[k] = evaluate(body.basis[k], x, m.dim);
      G += e[k] * e[k].transpose();
    }
    Eigen::Matrix3d A = G.trace() * Eigen::Matrix3d::Identity() - G;
    Vector3d w = A.ldlt().solve(T);
    for (int k = 0; k < nb; ++k) add_point_force(body.basis[k], w.cross(e[k]), m.dim, m.nq, Q);
  }
  for (const auto& s : m.spring_dampers) spring_damper(m, s, x, xd, jac, Q, &wk, &wc);
  for (const auto& s : m.coordinate_spring_dampers) coordinate_spring_damper(s, x, xd, jac, m.nq, Q, &wk, &wc);
  for (const auto& f : m.coordinate_forces) {
    double v = f.constant + (f.input >= 0 ? f.gain * u[f.input] : 0.0);
    if (f.slot < m.nq) Q[f.slot] += v;
  }
}

}  // namespace

double Table::value(double v) const {
  const std::size_t n = x.size();
  if (n == 1) return y[0];
  std::size_t i = std::upper_bound(x.begin(), x.end(), v) - x.begin();
  i = std::clamp<std::size_t>(i, 1, n - 1);
  double s = (y[i] - y[i - 1]) / (x[i] - x[i - 1]);
  return y[i - 1] + s * (v - x[i - 1]);
}

double Table::slope(double v) const {
  const std::size_t n = x.size();
  if (n == 1) return 0;
  std::size_t i = std::upper_bound(x.begin(), x.end(), v) - x.begin();
  i = std::clamp<std::size_t>(i, 1, n - 1);
  return (y[i] - y[i - 1]) / (x[i] - x[i - 1]);
}

ForceBuffers make_force_buffers(const Model& m) {
  ForceBuffers b;
  b.Q = VectorXd::Zero(m.nq);
  b.K.assign(m.force_K.size(), 0.0);
  b.C.assign(m.force_C.size(), 0.0);
  for (const auto& f : m.custom_forces) {
    int n = static_cast<int>(f->coordinates().size());
    b.custom_K.emplace_back(Eigen::MatrixXd::Zero(n, n));
    b.custom_C.emplace_back(Eigen::MatrixXd::Zero(n, n));
  }
  return b;
}

void generalized_forces(const Model& m, const VectorXd& x, const VectorXd& xd, const VectorXd& u, double t,
                        bool jacobians, ForceBuffers& out) {
  out.Q = m.Q_gravity;
  MatWriter wk{m.nq}, wc{m.nq};
  if (jacobians) {
    std::fill(out.K.begin(), out.K.end(), 0.0);
    std::fill(out.C.begin(), out.C.end(), 0.0);
    wk.values = out.K.data();
    wk.target = m.force_K_target.data();
    wc.values = out.C.data();
    wc.target = m.force_C_target.data();
  }
  builtin_forces(m, x, xd, u, jacobians, out.Q, wk, wc);
  for (std::size_t i = 0; i < m.custom_forces.size(); ++i) {
    if (jacobians) {
      out.custom_K[i].setZero();
      out.custom_C[i].setZero();
    }
    ForceSink sink(out.Q, m.nq, jacobians ? &out.custom_K[i] : nullptr, jacobians ? &out.custom_C[i] : nullptr);
    m.custom_forces[i]->evaluate(m, x, xd, u, t, sink);
  }
}

void record_force_patterns(const Model& m, const VectorXd& x, std::vector<Model::Entry>& K,
                           std::vector<Model::Entry>& C) {
  VectorXd Q = VectorXd::Zero(m.nq), xd = VectorXd::Zero(x.size()), u = VectorXd::Zero(m.inputs.size());
  MatWriter wk{m.nq}, wc{m.nq};
  wk.record = &K;
  wc.record = &C;
  builtin_forces(m, x, xd, u, true, Q, wk, wc);
}

double potential_energy(const Model& m, const VectorXd& x) {
  double V = 0;
  for (const auto& b : m.bodies) {
    VectorXd xl(b.slots.size());
    for (std::size_t i = 0; i < b.slots.size(); ++i) xl[i] = x[b.slots[i]];
    Eigen::MatrixXd C = b.C0;
    for (int k = 0; k < 3; ++k)
      if (b.Ck[k].size()) C += b.com_local[k] * b.Ck[k];
    VectorXd r = C * xl;
    Vector3d rg = Vector3d::Zero();
    rg.head(r.size()) = r;
    V -= b.mass * m.gravity.dot(rg);
  }
  for (const auto& s : m.spring_dampers) {
    if (!s.spring.empty()) continue;
    double l = (evaluate(s.p2, x, m.dim) - evaluate(s.p1, x, m.dim)).norm() - s.l0;
    V += 0.5 * s.k * l * l + s.preload * l;
  }
  for (const auto& s : m.coordinate_spring_dampers) {
    if (!s.spring.empty()) continue;
    double d = x[s.slot] - (s.slot2 >= 0 ? x[s.slot2] : 0.0) - s.x0;
    V += 0.5 * s.k * d * d + s.preload * d;
  }
  return V;
}

double kinetic_energy(const Model& m, const VectorXd& x, const VectorXd& qd) {
  double T = 0;
  for (std::size_t e = 0; e < m.mass.size(); ++e) {
    const auto& en = m.mass[e];
    T += 0.5 * qd[en.row] * m.mass_values[e] * qd[en.col];
  }
  for (const auto& r : m.rotors)
    if (r.e2 < m.nq) T += r.J * qd[r.theta] * x.segment<3>(r.e1).dot(qd.segment<3>(r.e2));
  return T;
}

}  // namespace mbo::mb
