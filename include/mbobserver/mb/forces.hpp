// Generalised forces Q of the force elements (Sinigaglia 2016 eq. (29): Q = C_P^T F for a force at a
// body point), with their stiffness K = -dQ/dq and damping C = -dQ/dqd, which enter the
// tangent matrix of eq. (41) and the projections of eq. (42).
#pragma once

#include <vector>

#include "mbobserver/mb/model.hpp"

namespace mbo::mb {

// What a CustomForce writes into: global Q (nq), and, when jacobians are wanted, its local
// K and C matrices indexed like its coordinates() list (already zeroed).
class ForceSink {
 public:
  ForceSink(Eigen::Ref<VectorXd> Q, int nq, Eigen::MatrixXd* K, Eigen::MatrixXd* C) : Q_(Q), nq_(nq), K_(K), C_(C) {}
  void add(int slot, double v) {
    if (slot < nq_) Q_[slot] += v;
  }
  bool jacobians() const { return K_ != nullptr; }
  Eigen::MatrixXd& K() { return *K_; }
  Eigen::MatrixXd& C() { return *C_; }

 private:
  Eigen::Ref<VectorXd> Q_;
  int nq_;
  Eigen::MatrixXd* K_;
  Eigen::MatrixXd* C_;
};

// Storage for one evaluation of all force elements (sized by make_force_buffers).
struct ForceBuffers {
  VectorXd Q;  // nq
  std::vector<double> K, C;  // values of m.force_K / m.force_C unique entries
  std::vector<Eigen::MatrixXd> custom_K, custom_C;  // one local block per custom force
};

ForceBuffers make_force_buffers(const Model& m);

// Q(x, xd, u, t) of every element (gravity included; not the FE correction). With
// `jacobians`, also K and C. x and xd are over [q; constants] (constant velocities zero).
void generalized_forces(const Model& m, const VectorXd& x, const VectorXd& xd, const VectorXd& u, double t,
                        bool jacobians, ForceBuffers& out);

// Build-time: the write sequences of the built-in elements' K and C.
void record_force_patterns(const Model& m, const VectorXd& x, std::vector<Model::Entry>& K,
                           std::vector<Model::Entry>& C);

// Potential energy of gravity and of the linear springs (for conservation checks).
double potential_energy(const Model& m, const VectorXd& x);
// Kinetic energy 1/2 qd' M qd plus the rotors' coupling J theta_dot (e1 . e2_dot); x over
// [q; constants] (the rotors' e1), qd over q.
double kinetic_energy(const Model& m, const VectorXd& x, const VectorXd& qd);

}  // namespace mbo::mb
