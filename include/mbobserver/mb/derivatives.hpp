// Derivatives of the reduced accelerations of Sinigaglia 2016 eq. (67),
//   zdd = Mbar^-1 R' (Q + Q_c - M Rdot zd),   Mbar = R' M R,
// with respect to chosen independent coordinates (dzdd/dz, dzdd/dzd) and model inputs
// (dzdd/du), by one-sided finite differences. They sit beside the dynamics as Pinocchio keeps
// its derivative algorithms beside its dynamics: free functions over the model, a state and a
// data block that holds their scratch and their results. errorEKF-FE takes them into its
// transition (eq. (66)); anything else that needs the model's linearisation can call them.
//
// Two ways to difference eq. (67):
//   all     every term re-evaluated along each perturbation (R, Rdot and Mbar move too), in
//           one call: what a linkage needs.
//   forces  Mbar and Rdot held at the base state, the applied forces Q (and R' Q for the
//           position columns) differentiated; spread over up to three steps: what a vehicle
//           needs, whose tyre forces change far faster than its inertia.
#pragma once

#include <vector>

#include <Eigen/Dense>

#include "mbobserver/mb/model.hpp"
#include "mbobserver/mb/state.hpp"
#include "mbobserver/mb/workspace.hpp"

namespace mbo::mb {

enum class DerivativeTerms { all, forces };

// What the derivatives are taken of and how often; scratch sized once; the latest results.
struct AccelerationDerivatives {
  // `columns`: indices into m.z of the coordinates differentiated (and of the rows kept);
  // `inputs`: indices into State::u; `period`: a complete set every this many steps (> 0).
  AccelerationDerivatives(const Model& m, std::vector<int> columns, std::vector<int> inputs, DerivativeTerms terms,
                          int period);

  std::vector<int> columns, inputs;
  DerivativeTerms terms;
  int period;
  // With `forces`: a mass input's column holds its inertia only, not its weight (the lasting
  // effect of a load on the accelerations: derivatives.cpp). False: both, the instant response.
  bool persistent_mass_inputs = true;
  // With persistent_mass_inputs: a mass input's column also holds what its settled weight does
  // to the forces that read it (Model::MassParameter::settled_load: a tyre's grip at its slip).
  bool settled_mass_inputs = true;

  // The latest complete set (columns x columns, columns x inputs), valid once
  // differentiate_accelerations() has returned true.
  Eigen::MatrixXd dz, dzd, du;

  // scratch: the base state of a set spread over several steps, and eq. (67)'s pieces
  Eigen::MatrixXd M, Mbar, MR, Rcols;
  Eigen::LDLT<Eigen::MatrixXd> mbar_ldlt;
  Eigen::VectorXd q0, qd0, u0, Q0, RtQ0, qp, qdp, dQ, tmp_q, rhs_z, zdd0, zdd1;
  double t0 = 0;
};

// Evaluates eq. (67) at (q, qd) with the state's inputs, time and force correction: zdd over
// all of m.z. Uses ws's kinematic factorisation, R and Rdot (left at q).
void reduced_accelerations(const Model& m, const State& s, const VectorXd& q, const VectorXd& qd, Workspace& ws,
                           AccelerationDerivatives& d, VectorXd& zdd);

// The piece of a set that falls on `step` (counted from the model's start): with `all` the whole
// set every `period` steps; with `forces` the velocity columns and the inputs on the first
// step of a period, then half of the position columns on each of the next two (on the first
// step as well when the period is shorter than 3). True when a new complete set is in d.dz,
// d.dzd, d.du. Allocates nothing.
bool differentiate_accelerations(const Model& m, const State& s, long step, Workspace& ws, AccelerationDerivatives& d);

}  // namespace mbo::mb
