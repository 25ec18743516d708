#include "mbobserver/mb/workspace.hpp"

#include <algorithm>

namespace mbo::mb {

Workspace::Workspace(const Model& m) {
  const int nx = m.nq + m.nconst;
  x = m.x0;
  xd = VectorXd::Zero(nx);
  xa = VectorXd::Zero(nx);
  xb = VectorXd::Zero(nx);
  phi = phi_t = phi_tt = hv = VectorXd::Zero(m.nc);
  jac.assign(m.jac.size(), 0.0);
  forces = make_force_buffers(m);
  res = dq = qd_hat = qdd_hat = tmp = tmp2 = dq_prev = VectorXd::Zero(m.nq);
  kc_dyn = VectorXd::Zero(m.nc);

  // Tangent pattern: M, Phi_q' Phi_q, K, C and the custom forces' blocks.
  std::vector<std::pair<int, int>> entries;
  for (const auto& e : m.mass) entries.emplace_back(e.row, e.col);
  for (int r = 0; r < m.nc; ++r)
    for (int a = m.jac_row_begin[r]; a < m.jac_row_begin[r + 1]; ++a)
      for (int b = a; b < m.jac_row_begin[r + 1]; ++b) entries.emplace_back(m.jac[a].col, m.jac[b].col);
  for (const auto& e : m.force_K) entries.emplace_back(e.row, e.col);
  for (const auto& e : m.force_C) entries.emplace_back(e.row, e.col);
  for (const auto& f : m.custom_forces) {
    auto c = f->coordinates();
    for (int i : c)
      for (int j : c) entries.emplace_back(i, j);
  }
  for (const auto& r : m.rotors)
    for (int k = 0; k < 3; ++k)
      if (r.e2 + k < m.nq) entries.emplace_back(r.theta, r.e2 + k);
  tangent.build(m.nq, entries);
  for (const auto& r : m.rotors) {
    std::array<int, 3> s{-1, -1, -1};
    for (int k = 0; k < 3; ++k)
      if (r.e2 + k < m.nq) s[k] = tangent.slot(r.theta, r.e2 + k);
    rotor_slots.push_back(s);
  }
  for (std::size_t e = 0; e < m.mass.size(); ++e)
    if (m.mass[e].row <= m.mass[e].col)
      mass_slots.push_back({static_cast<int>(e), tangent.slot(m.mass[e].row, m.mass[e].col), 1.0});
  for (int r = 0; r < m.nc; ++r)
    for (int a = m.jac_row_begin[r]; a < m.jac_row_begin[r + 1]; ++a)
      for (int b = a; b < m.jac_row_begin[r + 1]; ++b)
        jtj_slots.push_back({a, b, tangent.slot(m.jac[a].col, m.jac[b].col)});
  // K and C enter symmetrised: (K + K')/2.
  auto weighted = [&](const std::vector<Model::Entry>& pat, std::vector<WeightedSlot>& out) {
    for (std::size_t e = 0; e < pat.size(); ++e)
      out.push_back({static_cast<int>(e), tangent.slot(pat[e].row, pat[e].col), pat[e].row == pat[e].col ? 1.0 : 0.5});
  };
  weighted(m.force_K, K_slots);
  weighted(m.force_C, C_slots);
  for (const auto& f : m.custom_forces) {
    auto c = f->coordinates();
    const int n = static_cast<int>(c.size());
    std::vector<WeightedSlot> s;
    for (int a = 0; a < n; ++a)
      for (int b = 0; b < n; ++b) s.push_back({a + b * n, tangent.slot(c[a], c[b]), a == b ? 1.0 : 0.5});
    custom_slots.push_back(std::move(s));
    custom_coordinates.push_back(std::move(c));
  }

  // Kinematics over the dependent coordinates.
  if (!m.z.empty()) {
    has_kinematics = true;
    dep_index.assign(m.nq, -1);
    r_column.assign(m.nq, -1);
    for (int i = 0; i < m.nq; ++i)
      if (!m.is_z(i)) {
        dep_index[i] = static_cast<int>(dep_slots.size());
        dep_slots.push_back(i);
      }
    std::vector<std::pair<int, int>> kent;
    for (int r = 0; r < m.nc; ++r)
      for (int a = m.jac_row_begin[r]; a < m.jac_row_begin[r + 1]; ++a)
        for (int b = a; b < m.jac_row_begin[r + 1]; ++b) {
          int da = dep_index[m.jac[a].col], db = dep_index[m.jac[b].col];
          if (da >= 0 && db >= 0) kent.emplace_back(da, db);
        }
    kin.build(static_cast<int>(dep_slots.size()), kent);
    for (int r = 0; r < m.nc; ++r)
      for (int a = m.jac_row_begin[r]; a < m.jac_row_begin[r + 1]; ++a)
        for (int b = a; b < m.jac_row_begin[r + 1]; ++b) {
          int da = dep_index[m.jac[a].col], db = dep_index[m.jac[b].col];
          if (da >= 0 && db >= 0) kin_slots.push_back({a, b, kin.slot(da, db)});
        }
    kd = VectorXd::Zero(dep_slots.size());
    kr = VectorXd::Zero(dep_slots.size());
    kc = VectorXd::Zero(m.nc);
    R = Eigen::MatrixXd::Zero(m.nq, m.z.size());
    kRHS = kscratch =
        RowMatrix::Zero(static_cast<Eigen::Index>(dep_slots.size()), static_cast<Eigen::Index>(m.z.size()));
    kcols = RowMatrix::Zero(m.nc, static_cast<Eigen::Index>(m.z.size()));
    Rdot = Eigen::MatrixXd::Zero(m.nq, m.z.size());
    all_z.resize(m.z.size());
    for (std::size_t j = 0; j < m.z.size(); ++j) all_z[j] = static_cast<int>(j);
  }
}

}  // namespace mbo::mb
