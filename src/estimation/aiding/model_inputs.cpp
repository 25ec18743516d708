#include "mbobserver/estimation/aiding/model_inputs.hpp"

namespace mbo::est::aiding {

InputsConfig read_inputs_config(const JsonReader& in) {
  InputsConfig c;
  c.timeout_s = in.positive("timeout_s", c.timeout_s);
  in.finish();
  return c;
}

void ModelInputs::gather(double t) {
  double v = 0, ts = 0;
  if (samples_.take(Channel::steer_angle, t, v, ts)) {
    if (last_steer_t_ >= 0 && ts > last_steer_t_) {
      const double rate = (v - last_steer_) / (ts - last_steer_t_);
      inputs_.steer_rate = kSteerRateKept * inputs_.steer_rate + kSteerRateNew * rate;
    }
    inputs_.steer = v;
    last_steer_ = v;
    last_steer_t_ = ts;
    last_t_ = ts;
  }
  for (int w = 0; w < 4; ++w) {
    if (samples_.take(static_cast<Channel>(index_of(Channel::drive_torque_fl) + w), t, v, ts))
      inputs_.drive_torque[w] = v, last_t_ = ts;
    if (samples_.take(static_cast<Channel>(index_of(Channel::brake_pressure_fl) + w), t, v, ts))
      inputs_.brake_pressure[w] = v, last_t_ = ts;
  }
}

}  // namespace mbo::est::aiding
