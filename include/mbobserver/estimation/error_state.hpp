// The error state of errorEKF and errorEKF-FE as named blocks, in this order (Sinigaglia 2016
// 3.3 and 4.5, Fig. 33):
//   z      position errors of the n observed independent coordinates      (eq. (54))
//   zd     their velocity errors                                          (eq. (54))
//   accel  FE: acceleration (force) errors of the forced coordinates, random walks (eq. (125))
//   input  FE: errors of estimated model inputs (the road friction), random walks that
//          accelerate the model through B = dzdd/dp
//   sensor errors of sensor parameters (gyroscope biases, wheels' rolling-radius scales, the
//          GNSS latency; random walks) and of the receiver's wandering error (Gauss-Markov),
//          which enter the measurement rows only (H), not the model
// Every part of the estimator (the filter, the observer, the aiding units, the experiments)
// indexes the error state through this layout, never by raw offsets. A new block (sensor
// parameters that enter H only, say) is appended after the last one here.
#pragma once

namespace mbo::est {

// A contiguous run of error-state entries.
struct ErrorBlock {
  int offset = 0;
  int size = 0;
  int end() const { return offset + size; }
};

struct ErrorStateLayout {
  int observed = 0;  // n: observed independent coordinates
  int forced = 0;  // FE: coordinates with an acceleration error (a subset of the observed)
  int inputs = 0;  // FE: estimated model inputs
  int sensors = 0;  // estimated sensor parameters

  ErrorBlock z() const { return {0, observed}; }
  ErrorBlock zd() const { return {observed, observed}; }
  ErrorBlock accel() const { return {2 * observed, forced}; }
  ErrorBlock input() const { return {accel().end(), inputs}; }
  ErrorBlock sensor() const { return {input().end(), sensors}; }
  int size() const { return sensor().end(); }
  // The kinematic part [z, zd], the one a truth can be compared with (NEES).
  ErrorBlock kinematic() const { return {0, 2 * observed}; }

  // Entry of observed coordinate j (0..n-1), of forced coordinate k, of input k.
  int z(int j) const { return j; }
  int zd(int j) const { return observed + j; }
  int accel(int k) const { return 2 * observed + k; }
  int input(int k) const { return input().offset + k; }
  int sensor(int k) const { return sensor().offset + k; }
};

}  // namespace mbo::est
