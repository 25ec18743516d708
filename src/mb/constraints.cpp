#include "mbobserver/mb/constraints.hpp"

#include <cmath>

namespace mbo::mb {
namespace {

// The Jacobian is written as a sequence of (row, x-slot, value); entries on constant slots
// are dropped. The same code runs once with JacRecorder to learn the pattern, then with
// JacWriter (a separate type, so the evaluation has no branch on the mode).
struct JacWriter {
  int nq;
  double* values;
  const int* target;
  int k = 0;
  void operator()(int, int slot, double v) {
    if (slot >= nq) return;
    values[target[k++]] += v;
  }
};

struct JacRecorder {
  int nq;
  std::vector<Model::Entry>* record;
  void operator()(int row, int slot, double) {
    if (slot < nq) record->push_back({row, slot});
  }
};

// Gradient g of a scalar functional with respect to the vector A = LinearVec, pushed through
// each term: d/dE = a g + b (g x ez).
template <class W>
void write_gradient(W& w, int row, const LinearVec& A, const Vector3d& g, int dim, double scale) {
  for (const auto& t : A.terms) {
    Vector3d gt = t.a * g + t.b * Vector3d(g.y(), -g.x(), 0);
    for (int k = 0; k < dim; ++k) w(row, t.slot + k, scale * gt[k]);
  }
}

Vector3d eval_dir(const LinearVec& v, const VectorXd& d, int dim) { return evaluate(v, d, dim); }

// sin and cos of an angle coordinate. One Newton iteration evaluates the same few angles
// (yaw, pitch, roll, steering, spins) in Phi, Phi_q and every column of the Hessian product, so
// the last value of each slot is remembered: an exact hit returns the same numbers, a miss
// (another slot on the same line, or a new value) recomputes. Per thread, fixed size.
struct SinCos {
  double s, c;
};
SinCos sin_cos(int slot, double v) {
  struct Line {
    int slot = -1;
    double v = 0, s = 0, c = 1;
  };
  static thread_local Line cache[256];
  Line& l = cache[static_cast<unsigned>(slot) & 255u];
  if (l.slot != slot || l.v != v) {
    l.slot = slot, l.v = v;
    l.s = std::sin(v), l.c = std::cos(v);
  }
  return {l.s, l.c};
}

struct FactorValues {
  double g[3], dg[3], ddg[3];
};

FactorValues factor_values(const CombinationTerm& term, const VectorXd& x) {
  FactorValues f{};
  for (int j = 0; j < term.nfactors; ++j) {
    const int slot = term.factors[j].slot;
    const double s = x[slot];
    switch (term.factors[j].kind) {
      case FactorKind::linear:
        f.g[j] = s, f.dg[j] = 1, f.ddg[j] = 0;
        break;
      case FactorKind::cos: {
        const auto sc = sin_cos(slot, s);
        f.g[j] = sc.c, f.dg[j] = -sc.s, f.ddg[j] = -sc.c;
        break;
      }
      case FactorKind::sin: {
        const auto sc = sin_cos(slot, s);
        f.g[j] = sc.s, f.dg[j] = sc.c, f.ddg[j] = -sc.s;
        break;
      }
    }
  }
  return f;
}

// product of g over factors except i and j (-1: none)
double product_except(const FactorValues& f, int n, int i, int j) {
  double p = 1;
  for (int l = 0; l < n; ++l)
    if (l != i && l != j) p *= f.g[l];
  return p;
}

void combination_values(const CombinationConstraint& c, const VectorXd& x, int dim, double* out) {
  Vector3d sum = Vector3d::Zero();
  for (const auto& term : c.terms) {
    FactorValues f = factor_values(term, x);
    sum += term.c * product_except(f, term.nfactors, -1, -1) * apply(term.vec, load(x, term.vec.slot, dim));
  }
  for (int k = 0; k < dim; ++k) out[k] = sum[k];
}

// With `phi`, also the constraint's values (combination_values) from the same factors.
template <class W>
void combination_jacobian(const CombinationConstraint& c, const VectorXd& x, int dim, int row0, W& w, double* phi) {
  Vector3d sum = Vector3d::Zero();
  for (const auto& term : c.terms) {
    FactorValues f = factor_values(term, x);
    const int n = term.nfactors;
    double coef = term.c * product_except(f, n, -1, -1);
    if (phi) sum += coef * apply(term.vec, load(x, term.vec.slot, dim));
    // d/dE: coef (a I + b K), K = [ez x]
    for (int r = 0; r < dim; ++r) {
      if (term.vec.b == 0) {
        w(row0 + r, term.vec.slot + r, coef * term.vec.a);
      } else {
        for (int j = 0; j < dim; ++j) {
          double kk = (r == 0 && j == 1) ? -1 : (r == 1 && j == 0) ? 1 : 0;
          w(row0 + r, term.vec.slot + j, coef * (term.vec.a * (r == j) + term.vec.b * kk));
        }
      }
    }
    // d/ds_j
    if (n > 0) {
      Vector3d L = apply(term.vec, load(x, term.vec.slot, dim));
      for (int j = 0; j < n; ++j) {
        double dgj = term.c * f.dg[j] * product_except(f, n, j, -1);
        for (int r = 0; r < dim; ++r) w(row0 + r, term.factors[j].slot, dgj * L[r]);
      }
    }
  }
  if (phi)
    for (int k = 0; k < dim; ++k) phi[row0 + k] = sum[k];
}

Vector3d axis_of(const AngleConstraint& c, const VectorXd& x, int dim) {
  return c.n.terms.empty() ? Vector3d::UnitZ() : evaluate(c.n, x, dim);
}

}  // namespace

Vector3d evaluate(const LinearVec& v, const VectorXd& x, int dim) {
  Vector3d s = Vector3d::Zero();
  for (const auto& t : v.terms) s += apply(t, load(x, t.slot, dim));
  return s;
}

void constraint_values(const Model& m, const VectorXd& x, const VectorXd& u, VectorXd& phi) {
  for (const auto& c : m.constraints) {
    switch (c.kind) {
      case ConstraintKind::dot: {
        const auto& d = m.dots[c.index];
        phi[c.row] = evaluate(d.A, x, m.dim).dot(evaluate(d.B, x, m.dim)) - d.c;
        break;
      }
      case ConstraintKind::combination:
        combination_values(m.combinations[c.index], x, m.dim, &phi[c.row]);
        break;
      case ConstraintKind::angle: {
        const auto& a = m.angles[c.index];
        Vector3d A = evaluate(a.A, x, m.dim), B = evaluate(a.B, x, m.dim), n = axis_of(a, x, m.dim);
        const auto th = sin_cos(a.theta_slot, x[a.theta_slot]);
        phi[c.row] = th.c * A.cross(B).dot(n) - th.s * A.dot(B);
        break;
      }
      case ConstraintKind::driving: {
        const auto& d = m.drivings[c.index];
        phi[c.row] = x[d.slot] - (d.input_value >= 0 ? u[d.input_value] : 0.0);
        break;
      }
    }
  }
}

namespace {
// Phi_q, and with `phi` also Phi(x, u) from the same evaluations (a Newton iteration needs both).
template <class W>
void jacobian_impl(const Model& m, const VectorXd& x, W& w, const VectorXd* u = nullptr, double* phi = nullptr) {
  for (const auto& c : m.constraints) {
    switch (c.kind) {
      case ConstraintKind::dot: {
        const auto& d = m.dots[c.index];
        Vector3d A = evaluate(d.A, x, m.dim), B = evaluate(d.B, x, m.dim);
        if (phi) phi[c.row] = A.dot(B) - d.c;
        write_gradient(w, c.row, d.A, B, m.dim, 1.0);
        write_gradient(w, c.row, d.B, A, m.dim, 1.0);
        break;
      }
      case ConstraintKind::combination:
        combination_jacobian(m.combinations[c.index], x, m.dim, c.row, w, phi);
        break;
      case ConstraintKind::angle: {
        const auto& a = m.angles[c.index];
        Vector3d A = evaluate(a.A, x, m.dim), B = evaluate(a.B, x, m.dim), n = axis_of(a, x, m.dim);
        const auto th = sin_cos(a.theta_slot, x[a.theta_slot]);
        const double ct = th.c, st = th.s;
        double T = A.cross(B).dot(n), D = A.dot(B);
        if (phi) phi[c.row] = ct * T - st * D;
        w(c.row, a.theta_slot, -st * T - ct * D);
        write_gradient(w, c.row, a.A, ct * B.cross(n) - st * B, m.dim, 1.0);
        write_gradient(w, c.row, a.B, ct * n.cross(A) - st * A, m.dim, 1.0);
        if (!a.n.terms.empty()) write_gradient(w, c.row, a.n, ct * A.cross(B), m.dim, 1.0);
        break;
      }
      case ConstraintKind::driving: {
        const auto& d = m.drivings[c.index];
        if (phi) phi[c.row] = x[d.slot] - (d.input_value >= 0 ? (*u)[d.input_value] : 0.0);
        w(c.row, d.slot, 1.0);
        break;
      }
    }
  }
}
}  // namespace

void constraint_jacobian(const Model& m, const VectorXd& x, double* jac_values) {
  std::fill_n(jac_values, m.jac.size(), 0.0);
  JacWriter w{m.nq, jac_values, m.jac_write_target.data()};
  jacobian_impl(m, x, w);
}

void constraint_values_jacobian(const Model& m, const VectorXd& x, const VectorXd& u, VectorXd& phi,
                                double* jac_values) {
  std::fill_n(jac_values, m.jac.size(), 0.0);
  JacWriter w{m.nq, jac_values, m.jac_write_target.data()};
  jacobian_impl(m, x, w, &u, phi.data());
}

std::vector<Model::Entry> record_jacobian_pattern(const Model& m, const VectorXd& x) {
  std::vector<Model::Entry> seq;
  JacRecorder w{m.nq, &seq};
  jacobian_impl(m, x, w);
  return seq;
}

namespace {
// Directions b of a Hessian product: one vector over x, or columns of a matrix over q.
struct VectorDirection {
  const VectorXd& b;
  int dim;
  double at(int slot, int) const { return b[slot]; }
  Vector3d load_entity(int slot, int) const { return load(b, slot, dim); }
  Vector3d eval(const LinearVec& v, int) const { return eval_dir(v, b, dim); }
};

struct ColumnDirections {
  const Eigen::MatrixXd& B;
  std::span<const int> cols;
  int nq, dim;
  double at(int slot, int c) const { return slot < nq ? B(slot, cols[c]) : 0.0; }
  Vector3d load_entity(int slot, int c) const {
    if (slot >= nq) return Vector3d::Zero();  // a constant entity: no direction
    const int j = cols[c];
    return dim == 3 ? Vector3d(B(slot, j), B(slot + 1, j), B(slot + 2, j)) : Vector3d(B(slot, j), B(slot + 1, j), 0);
  }
  Vector3d eval(const LinearVec& v, int c) const {
    Vector3d s = Vector3d::Zero();
    for (const auto& t : v.terms) s += apply(t, load_entity(t.slot, c));
    return s;
  }
};

// out(row, c) = sum_jk d2Phi_row/dx_j dx_k a_j b_k for the k directions b; what depends on x
// and a is evaluated once per constraint.
template <class Directions, class Out>
void hessian_products(const Model& m, const VectorXd& x, const VectorXd& a, const Directions& b, int k, Out out) {
  for (const auto& c : m.constraints) {
    switch (c.kind) {
      case ConstraintKind::dot: {
        const auto& d = m.dots[c.index];
        const Vector3d Aa = eval_dir(d.A, a, m.dim), Ba = eval_dir(d.B, a, m.dim);
        for (int col = 0; col < k; ++col) out(c.row, col) = Aa.dot(b.eval(d.B, col)) + b.eval(d.A, col).dot(Ba);
        break;
      }
      case ConstraintKind::combination: {
        const auto& cc = m.combinations[c.index];
        for (int r = 0; r < m.dim; ++r)
          for (int col = 0; col < k; ++col) out(c.row + r, col) = 0;
        for (const auto& term : cc.terms) {
          const int n = term.nfactors;
          if (n == 0) continue;  // linear in x: no second derivative
          const FactorValues f = factor_values(term, x);
          const Vector3d Lx = apply(term.vec, load(x, term.vec.slot, m.dim));
          const Vector3d La = apply(term.vec, load(a, term.vec.slot, m.dim));
          double dj[3], d2[3][3];
          for (int j = 0; j < n; ++j) {
            dj[j] = f.dg[j] * product_except(f, n, j, -1);
            for (int l = 0; l < n; ++l)
              d2[j][l] =
                  (j == l) ? f.ddg[j] * product_except(f, n, j, -1) : f.dg[j] * f.dg[l] * product_except(f, n, j, l);
          }
          for (int col = 0; col < k; ++col) {
            const Vector3d Lb = apply(term.vec, b.load_entity(term.vec.slot, col));
            double ga = 0, gb = 0, hab = 0;
            for (int j = 0; j < n; ++j) {
              const double sa = a[term.factors[j].slot], sb = b.at(term.factors[j].slot, col);
              ga += dj[j] * sa;
              gb += dj[j] * sb;
              for (int l = 0; l < n; ++l) hab += d2[j][l] * sa * b.at(term.factors[l].slot, col);
            }
            const Vector3d t = term.c * (hab * Lx + ga * Lb + gb * La);
            for (int r = 0; r < m.dim; ++r) out(c.row + r, col) += t[r];
          }
        }
        break;
      }
      case ConstraintKind::angle: {
        const auto& g = m.angles[c.index];
        const Vector3d A = evaluate(g.A, x, m.dim), B = evaluate(g.B, x, m.dim), n = axis_of(g, x, m.dim);
        const Vector3d Aa = eval_dir(g.A, a, m.dim), Ba = eval_dir(g.B, a, m.dim);
        const Vector3d na = g.n.terms.empty() ? Vector3d::Zero() : eval_dir(g.n, a, m.dim);
        const auto th = sin_cos(g.theta_slot, x[g.theta_slot]);
        const double ct = th.c, st = th.s, tha = a[g.theta_slot];
        const double T = A.cross(B).dot(n), D = A.dot(B);
        const double dTa = Aa.cross(B).dot(n) + A.cross(Ba).dot(n) + A.cross(B).dot(na);
        const double dDa = Aa.dot(B) + A.dot(Ba);
        for (int col = 0; col < k; ++col) {
          const Vector3d Ab = b.eval(g.A, col), Bb = b.eval(g.B, col);
          const Vector3d nb = g.n.terms.empty() ? Vector3d::Zero() : b.eval(g.n, col);
          const double thb = b.at(g.theta_slot, col);
          const double dTb = Ab.cross(B).dot(n) + A.cross(Bb).dot(n) + A.cross(B).dot(nb);
          const double dDb = Ab.dot(B) + A.dot(Bb);
          const double d2T = Aa.cross(Bb).dot(n) + Ab.cross(Ba).dot(n) + Aa.cross(B).dot(nb) + Ab.cross(B).dot(na) +
                             A.cross(Ba).dot(nb) + A.cross(Bb).dot(na);
          const double d2D = Aa.dot(Bb) + Ab.dot(Ba);
          out(c.row, col) = (-ct * T + st * D) * tha * thb + (-st * dTb - ct * dDb) * tha +
                            (-st * dTa - ct * dDa) * thb + ct * d2T - st * d2D;
        }
        break;
      }
      case ConstraintKind::driving:
        for (int col = 0; col < k; ++col) out(c.row, col) = 0;
        break;
    }
  }
}
}  // namespace

void constraint_hessian_product(const Model& m, const VectorXd& x, const VectorXd& a, const VectorXd& b,
                                VectorXd& out) {
  hessian_products(m, x, a, VectorDirection{b, m.dim}, 1, [&](int row, int) -> double& { return out[row]; });
}

void constraint_hessian_product_columns(const Model& m, const VectorXd& x, const VectorXd& a, const Eigen::MatrixXd& B,
                                        std::span<const int> cols, RowMatrix& out) {
  hessian_products(m, x, a, ColumnDirections{B, cols, m.nq, m.dim}, static_cast<int>(cols.size()),
                   [&](int row, int col) -> double& { return out(row, col); });
}

void constraint_time_terms(const Model& m, const VectorXd& u, VectorXd& phi_t, VectorXd& phi_tt) {
  phi_t.setZero();
  phi_tt.setZero();
  for (const auto& c : m.constraints) {
    if (c.kind != ConstraintKind::driving) continue;
    const auto& d = m.drivings[c.index];
    phi_t[c.row] = d.input_rate >= 0 ? -u[d.input_rate] : 0.0;
    phi_tt[c.row] = d.input_accel >= 0 ? -u[d.input_accel] : 0.0;
  }
}

}  // namespace mbo::mb
