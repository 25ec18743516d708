// The changing data of a multibody simulation (the "mjData" to Model's "mjModel"): positions,
// velocities, accelerations, augmented-Lagrangian multipliers, input values and the
// generalised-force correction an errorEKF-FE keeps in the model.
#pragma once

#include "mbobserver/mb/model.hpp"

namespace mbo::mb {

struct State {
  double t = 0;
  VectorXd q, qd, qdd;  // nq
  VectorXd lambda;  // nc
  VectorXd u;  // inputs, by Model::inputs
  VectorXd Q_correction;  // nq, added to Q (errorEKF-FE, Sinigaglia 2016 eqs. (125)-(126))
  // The predictor's history (see step()): accelerations of the two steps before this one,
  // how many of them are valid (0-2) and the step they were taken with.
  VectorXd qdd_prev, qdd_prev2;  // nq
  int history = 0;
  double history_dt = 0;
};

// q from the model's initial values, everything else zero.
State initial_state(const Model& m);

}  // namespace mbo::mb
