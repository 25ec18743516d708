// Scratch memory for the solvers of one model, allocated once (sizes, sparse patterns,
// orderings and symbolic factorisations). After construction, kinematics and dynamics
// allocate nothing.
#pragma once

#include <array>
#include <vector>

#include "mbobserver/mb/forces.hpp"
#include "mbobserver/mb/model.hpp"
#include "mbobserver/mb/sparse_system.hpp"

namespace mbo::mb {

struct PairSlot {
  int e1, e2;  // entries of m.jac in the same row
  int slot;  // in the system's values
};

struct WeightedSlot {
  int entry;  // index into a value array
  int slot;
  double weight;
};

class Workspace {
 public:
  explicit Workspace(const Model& m);

  // x = [q; constants], xd = [qd; 0]
  VectorXd x, xd, xa, xb;
  VectorXd phi, phi_t, phi_tt, hv;  // nc
  std::vector<double> jac;  // Phi_q values of m.jac
  ForceBuffers forces;

  // Dynamics: tangent matrix M + dt/2 C + dt^2/4 (alpha Phi_q' Phi_q + K) of eq. (41)-(42).
  SparseSystem tangent;
  std::vector<WeightedSlot> mass_slots, K_slots, C_slots;
  std::vector<PairSlot> jtj_slots;
  std::vector<std::vector<WeightedSlot>> custom_slots;  // per custom force: column-major a+b*n -> slot
  std::vector<std::vector<int>> custom_coordinates;  // per custom force: its coordinates()
  std::vector<std::array<int, 3>> rotor_slots;  // per rotor: tangent slots (theta, e2 + k); -1: e2 fixed
  VectorXd res, dq, qd_hat, qdd_hat, tmp, tmp2;
  VectorXd dq_prev;  // the Newton correction before dq (mb::step's acceleration)
  VectorXd kc_dyn;  // nc scratch of the dynamics

  // Kinematics: normal equations over the dependent coordinates (Phi_qd' Phi_qd).
  bool has_kinematics = false;
  std::vector<int> dep_index;  // q slot -> dependent index, -1 for z
  std::vector<int> dep_slots;  // dependent index -> q slot
  std::vector<int> all_z;  // 0 .. nz-1: every column of R
  std::vector<int> r_column;  // q slot -> column of kcols while compute_R fills it, else -1
  SparseSystem kin;
  std::vector<PairSlot> kin_slots;  // pairs of Jacobian entries on dependent columns
  VectorXd kd, kr, kc;  // dependent-sized scratch; nc-sized scratch
  Eigen::MatrixXd R, Rdot;  // nq x nz
  // Columns of R and Rdot solved together (row-major: one row per equation, nz wide).
  RowMatrix kRHS, kscratch;  // dependent x nz
  RowMatrix kcols;  // nc x nz
};

}  // namespace mbo::mb
