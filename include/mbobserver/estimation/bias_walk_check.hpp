// Whether a learned gyro bias wanders faster than its random walk says, seen at the car's stops.
// At rest the bias is measured outright (StandstillAiding: the chassis's rate is zero, so the
// gyro reads its bias), and what a stop teaches it is one innovation of a scalar measurement
// of the bias: with the bias b0 and variance P0 just before the stop and bs, Ps once the stop
// has settled, that innovation's normalised square is (bs - b0)^2 / (P0 - Ps) (for y = b + n:
// S = P0^2 / (P0 - Ps) and bs - b0 = (P0 / S) nu). About 1 where the walk is the bias's; a
// walk q too small by a factor k makes it about k. Above nis_limit the walk is scaled by it, so
// that the bias's sigma, and the heading's with it, grow between stops as the bias does.
//
// The robustness suite's sensors-from-prior drive with the learned-car patch (its gyro drifting
// at 80 deg/h where the patch says 5 deg/h: 250 x the variance rate) had its heading flagged
// valid while 4 sigma off on 19 % of its steps with the standstill rows alone.
#pragma once

namespace mbo::est {

struct BiasWalkCheckConfig {
  bool on = true;
  double settle_s = 2;  // s standing before the bias counts as measured
  double nis_limit = 9;  // a 3-sigma innovation
  double max_scale = 1e4;  // of the configured walk, over the whole drive
  // the stop must have taught the bias: its variance at most this share of the one before
  double min_gain = 0.5;
};

class BiasWalkCheck {
 public:
  explicit BiasWalkCheck(const BiasWalkCheckConfig& c = {}) : c_(c) {}
  // Each step at time t: whether the car stands, the bias's value and variance. Returns the
  // scale of the bias's random walk from now on (1 until a stop says otherwise).
  double update(double t, bool standing, double value, double variance);
  double scale() const { return scale_; }
  int stops_checked() const { return stops_; }
  double last_nis() const { return nis_; }
  // After a reset of the filter: the values before it are of another estimate.
  void restart() {
    moving_ = false;
    stand_since_ = -1;
    checked_ = false;
  }

 private:
  BiasWalkCheckConfig c_;
  double scale_ = 1, nis_ = 0;
  double moving_value_ = 0, moving_var_ = 0, stand_since_ = -1;
  bool moving_ = false, checked_ = false;
  int stops_ = 0;
};

}  // namespace mbo::est
