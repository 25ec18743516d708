// The spatial chain of ChainSpec (mechanisms.hpp) in natural coordinates, built in code with
// ModelBuilder for the peer test and the bench.
//
// Body i (1..n) is described by its near joint P_{i-1} (shared with body i-1, P_0 fixed at the
// origin: the spherical joints are shared points, Sinigaglia 2016 ch. 2.1.1), its far joint P_i and
// two unit vectors u_i, v_i normal to the link: 9 coordinates per body (3 for P_i, 3 + 3 for
// the vectors) and 6 rigid-body constraints (link length, two unit norms, three right
// angles), so 3 degrees of freedom per body as in Simbody's ball joints.
#pragma once

#include <vector>

#include "mbobserver/mb/model.hpp"
#include "mechanisms.hpp"

namespace mbo::peers {

// Penalty factor of the chain's augmented Lagrangian. The engine's default (1e8) leaves the
// Newton iteration of a step converging linearly here: its rate is roughly
// M_eff / (M_eff + alpha dt^2/4 |Phi_q|^2), and a 0.25 m link's length constraint has
// |Phi_q|^2 = 4 L^2 = 0.25 while the effective mass grows along the chain. Measured with
// dt = 1 ms over 1 s (steps that missed the 1e-10 tolerance in 25 iterations):
//   alpha 1e8: n=4 0/1000, n=16 582/1000, n=64 797/1000
//   alpha 1e9: 0, 0, 0 (up to 24 iterations for n=64)
//   alpha 1e10: 0, 0, 0 (max 4, 6, 8 iterations); at dt = 0.1 ms n=64 still fails 660/10000
//   alpha 1e11: 0, 0, 0 (max 4, 4, 5 iterations); at dt = 0.1 ms 0 failures for all n
constexpr double kChainPenalty = 1e11;

// Entities "P1".."Pn" (far joints) and "u1".."un", "v1".."vn"; the initial coordinates are
// the exact start of ChainSpec (consistent, so no position problem is needed) and there are
// no independent coordinates declared (the dynamic step does not use them).
mbo::mb::Model build_chain_model(const ChainSpec& spec, double penalty = kChainPenalty);

// q slot of the x component of each far joint point P_1..P_n.
std::vector<int> chain_point_slots(const mbo::mb::Model& m, int n);

}  // namespace mbo::peers
