// The order of a vehicle observer step; what each source contributes is in its aiding unit.
#include "mbobserver/estimation/vehicle_observer.hpp"

#include <algorithm>
#include <cmath>
#include <span>
#include <stdexcept>
#include <tuple>

#include "mbobserver/estimation/vehicle_record.hpp"
#include "mbobserver/mb/kinematics.hpp"

namespace mbo::est {
namespace {

// rad (11 deg): a model sideslip beyond this at a reset is the model's failure, not the car's
constexpr double kMaxResetSideslip_rad = 0.2;

}  // namespace

VehicleObserver::VehicleObserver(std::shared_ptr<const models::Vehicle> vehicle, const VehicleObserverConfig& config,
                                 double dt)
    : vehicle_(std::move(vehicle)),
      cfg_(config),
      inputs_(cfg_.inputs),
      gnss_(cfg_.gnss, *vehicle_),
      imu_(cfg_.imu, *vehicle_),
      wheels_(cfg_.wheels, *vehicle_),
      wheel_speeds_(cfg_.wheel_speeds, *vehicle_),
      standstill_(cfg_.standstill, *vehicle_, cfg_.imu.rotation,
                  {cfg_.imu.use_gyro && cfg_.imu.gyro_axes[0], cfg_.imu.use_gyro && cfg_.imu.gyro_axes[1],
                   cfg_.imu.use_gyro && cfg_.imu.gyro_axes[2]},
                  cfg_.wheels.modulus, cfg_.gnss.velocity_std, cfg_.imu.gyro_std),
      bus_inputs_(cfg_.bus_inputs, *vehicle_),
      dt_(dt),
      adaptation_(cfg_.adaptation),
      scale_release_(cfg_.wheels.release),
      excitation_(cfg_.excitation) {
  const auto& v = *vehicle_;
  bias_walk_.fill(BiasWalkCheck(cfg_.standstill.bias_walk));
  // An estimated friction starts from the front tyres' own (input 0 means "the tyres' own",
  // which the estimate's range would otherwise clamp); it then applies to all four tyres.
  const auto& est = cfg_.settings.estimated_inputs;
  if (std::find(est.begin(), est.end(), v.in.mu) != est.end()) inputs_.inputs().mu = v.params.axles[0].tyre.mu;
  // Which observed coordinates carry a force error (FE: all of them when none is named)
  std::vector<int> forced = cfg_.settings.filter.forced;
  if (cfg_.settings.filter.force_error && forced.empty())
    for (int j = 0; j < static_cast<int>(cfg_.settings.observed.size()); ++j) forced.push_back(j);
  imu_.use_accelerometers(cfg_.settings.observed, cfg_.settings.filter.force_error, forced);
  if (cfg_.bus_inputs.brakes_set && cfg_.bus_inputs.brakes.abs && cfg_.bus_inputs.brakes.abs_force_error > 0) {
    for (std::size_t k = 0; k < forced.size(); ++k)
      if (v.model.z[cfg_.settings.observed[static_cast<std::size_t>(forced[k])]] == v.x)
        abs_force_error_ = static_cast<int>(k);
    imu_.set_accelerometers_open(false);  // opened while the ABS model limits a wheel
  }
  // The sensor parameters the units estimate become the error state's sensor block.
  aiding::SensorParameters params;
  imu_.declare_parameters(params);
  wheels_.declare_parameters(params);
  gnss_.declare_parameters(params);
  parameters_ = params.list();
  for (const auto& p : parameters_) {
    const std::size_t index = calibration_index(p.name);
    if (p.published && index == kCalibrationCount)
      throw std::logic_error("sensor parameter without a published name: " + p.name);
    calibration_index_.push_back(index);  // kCalibrationCount: unpublished
  }
  ObserverSettings settings = cfg_.settings;
  for (const auto& p : parameters_) {
    settings.sensor_initial.push_back(p.initial);
    settings.sensor_min.push_back(p.min);
    settings.sensor_max.push_back(p.max);
    settings.filter.initial_std_s.push_back(p.initial_std);
    settings.filter.sensor_rate_noise.push_back(p.rate_noise);
    settings.filter.sensor_decay.push_back(p.correlation_s > 0 ? 1 / p.correlation_s : 0.0);
  }
  aiding::SensorModels models;
  gnss_.add_models(models);
  imu_.add_models(models);
  wheels_.add_models(models);
  wheel_speeds_.add_models(models);
  standstill_.add_models(models);
  obs_ = std::make_unique<MbObserver>(v.model, std::vector<std::shared_ptr<const Sensor>>(models.begin(), models.end()),
                                      settings, dt);
  std::vector<double> unmodelled;
  imu_.declare_unmodelled(unmodelled);
  gnss_.declare_unmodelled(unmodelled);
  // the Hall rows leave it out where their scales are learned, the wheel and vehicle speeds not
  if (cfg_.validity.rolling_radius_rel_std > 0 &&
      (!(cfg_.wheels.use && cfg_.wheels.scale.on) || cfg_.wheels.release.on || wheel_speeds_.active())) {
    wheels_.consider_radius(static_cast<int>(unmodelled.size()));
    wheel_speeds_.consider_radius(static_cast<int>(unmodelled.size()));
    unmodelled.push_back(cfg_.validity.rolling_radius_rel_std);
  }
  if (!unmodelled.empty()) obs_->filter().set_unmodelled_biases(unmodelled);
  if (cfg_.wheels.release.on) {  // the scales as sure as held_std until the fixes release them
    set_wheel_scales_std(cfg_.wheels.release.held_std);
    wheels_.hold_scales(true);
  }
  // the split's model error, where the motion teaches both payloads
  const int kf = input_index(v.in.payload_front), kr = input_index(v.in.payload_rear);
  const bool split_learned = kf >= 0 && kr >= 0 && learns_input(kf) && learns_input(kr);
  sigma_ = std::make_unique<OutputSigma>(
      v, *obs_, PayloadSigma{cfg_.validity.payload_std_kg, split_learned ? cfg_.validity.payload_split_std_kg : 0.0},
      cfg_.bus_inputs.steering_set ? aiding::road_wheel_angle_std(cfg_.bus_inputs.steering) : 0.0);
  gnss_.set_monitor(cfg_.validity.monitor);
  imu_.set_monitor(cfg_.validity.monitor);
  wheels_.set_monitor(cfg_.validity.monitor);
  wheel_speeds_.set_monitor(cfg_.validity.monitor);
  standstill_.set_monitor(cfg_.validity.monitor);
  results_.reserve(32);
  restored_input_var_.assign(cfg_.settings.estimated_inputs.size(), -1.0);
  // each parameter's state and the motion it needs
  const auto& L = obs_->filter().layout();
  for (std::size_t k = 0; k < parameters_.size(); ++k) {  // a nuisance state is always estimated
    const auto& p = parameters_[k];
    if (!p.published) continue;
    // A latency error moves a fix along the track by v dtau, which a wheel's scale or an
    // accelerometer's bias explains from the first pull-away, but the heading only in turns
    // (by the turn rate times dtau), and there the filter considers it (the latency's sigma).
    const bool heading = p.name.starts_with("gyro_bias") || p.name.starts_with("gyro_scale");
    learned_.push_back({L.sensor(static_cast<int>(k)), excitation_of(p.name), true,
                        heading ? cfg_.gnss.heading_learn_max_latency_std : cfg_.gnss.learn_max_latency_std});
  }
  for (int k = 0; k < L.inputs; ++k) {
    const int slot = est[static_cast<std::size_t>(k)];
    std::string_view name = "mu";
    for (const auto& p : model_parameters())
      if (p.slot == slot) name = p.name;
    const bool learn = learns_input(k);
    learned_.push_back({L.input(k), excitation_of(name), false, 0, learn});
    learns_car_ = learns_car_ || (learn && name != "mu");
  }
}

void VehicleObserver::correlate_start_with_receiver_error() {
  // A start at a fix is where the receiver's error puts it: the position error is minus the
  // receiver's, P(r, r) += P(e, e), P(r, e) = -P(e, e). Without it the start was as sure as
  // initial_std (5 cm) 1.7 m off, and valid.
  const int k = gnss_.error_param();
  const int jx = obs_->observed_index(vehicle_->x), jy = obs_->observed_index(vehicle_->y);
  if (k < 0 || jx < 0 || jy < 0) return;
  // the fix placed the model where the receiver's error puts it: that error starts again
  const double s0 = parameters_[static_cast<std::size_t>(k)].initial_std;
  obs_->set_sensor_parameter(k, 0.0, s0 * s0);
  obs_->set_sensor_parameter(k + 1, 0.0, s0 * s0);
  auto& P = obs_->filter().covariance();
  const auto& L = obs_->filter().layout();
  for (auto [j, e] : {std::pair{jx, L.sensor(k)}, std::pair{jy, L.sensor(k + 1)}}) {
    const int i = L.z(j);
    const double var = P(e, e);
    P(i, i) += var;
    P(i, e) = P(e, i) = -var;
  }
}

void VehicleObserver::correlate_start_with_latency(const models::VehicleStart& st) {
  // A start placed at a fix carried along the receiver's velocity over the learned latency is
  // wrong by v dtau wherever the latency is: its position error is the latency's, along the
  // track, P(r, tau) = v P(tau, tau), P(r, r) += v v' P(tau, tau). Without it a start at speed
  // with a latency not yet learned (0 +- 0.1 s at 22 m/s: 2.2 m) was as sure as the fix.
  const int k = gnss_.latency_param();
  const int jx = obs_->observed_index(vehicle_->x), jy = obs_->observed_index(vehicle_->y);
  if (jx < 0 || jy < 0 || st.speed <= cfg_.gnss.course_min_speed) return;
  const auto& L = obs_->filter().layout();
  // (a start carries the fix along the course whenever the receiver gives one, fused or not)
  if (const int b = gnss_.latency_bias(); b >= 0) {
    // a latency not told (gnss.latency_std): the same error v dtau, as its sensitivity
    obs_->filter().set_unmodelled(L.z(jx), b, st.speed * std::cos(st.yaw));
    obs_->filter().set_unmodelled(L.z(jy), b, st.speed * std::sin(st.yaw));
  }
  if (k < 0 || !cfg_.gnss.use_course) return;
  auto& P = obs_->filter().covariance();
  const int ix = L.z(jx), iy = L.z(jy), it = L.sensor(k);
  const double var = P(it, it), ve = st.speed * std::cos(st.yaw), vn = st.speed * std::sin(st.yaw);
  P(ix, ix) += ve * ve * var;
  P(iy, iy) += vn * vn * var;
  P(ix, iy) += ve * vn * var;
  P(iy, ix) = P(ix, iy);
  P(ix, it) = P(it, ix) = ve * var;
  P(iy, it) = P(it, iy) = vn * var;
}

void VehicleObserver::choose_learning(double dt) {
  if (learned_.empty()) return;
  excitation_.update(out_.velocity_body.x(), rec_.a_long, rec_.a_lat, dt);
  const bool good_fixes = gnss_.good_for_learning();
  const double latency_std = gnss_.latency_std();
  for (const auto& p : learned_)
    obs_->filter().set_learning(p.state, p.learn && excitation_.excited(p.rule) &&
                                             (!p.sensor || (good_fixes && latency_std <= p.max_latency_std)));
  // Cornering shows the car's mass (m a_y = sum of Fy) but not where it sits: there the two
  // loads learn only together, as a mass at the model's CG would load their points (lever
  // rule), so that the CG stays where the last braking or drive left it.
  const auto& v = *vehicle_;
  const int kf = input_index(v.in.payload_front), kr = input_index(v.in.payload_rear);
  if (kf >= 0 && kr >= 0) {
    const auto& L = obs_->filter().layout();
    const int a = L.input(kf), b = L.input(kr);
    const bool sum_only = cfg_.excitation.on && !excitation_.excited(Excitation::longitudinal) &&
                          excitation_.excited(Excitation::lateral) && learns_input(kf) && learns_input(kr);
    if (sum_only) {
      const double xf = v.params.payload_front().x(), xr = v.params.payload_rear().x(), xc = v.params.cg_m.x();
      const double front = (xc - xr) / (xf - xr);
      obs_->filter().set_learning(a, true);
      obs_->filter().set_learning(b, true);
      obs_->filter().set_learning_along(a, b, front, 1 - front);
    } else {
      obs_->filter().set_learning_along(-1, -1, 0, 0);
    }
  }
  // the GNSS latency: considered, never learned by the rows; its estimate and sigma are the
  // latency estimator's (gnss_latency.hpp)
  if (const int k = gnss_.latency_param(); k >= 0) {
    obs_->filter().set_learning(obs_->filter().layout().sensor(k), false);
    obs_->track_sensor_parameter(k, gnss_.latency(), gnss_.latency_std() * gnss_.latency_std());
  }
}

void VehicleObserver::physical_kinematics(mb::State& out, Eigen::MatrixXd& P) const {
  const auto& s = obs_->state();
  const auto& L = obs_->filter().layout();
  const auto& full = obs_->filter().covariance();
  const int K = L.kinematic().size;
  out.q = s.q;
  out.qd = s.qd;
  P = full.topLeftCorner(K, K);
  // each kinematic entry i = c1 e[i] + c2 e[sensor k] (c2 = 0 but for scaled wheels)
  kin_scale_.assign(static_cast<std::size_t>(K), 1.0);
  kin_param_.assign(static_cast<std::size_t>(K), -1);
  kin_coef_.assign(static_cast<std::size_t>(K), 0.0);
  const auto& v = *vehicle_;
  for (int w = 0; w < 4; ++w) {
    const int k = wheels_.scale_param(w), j = obs_->observed_index(v.wheels[w].spin);
    if (k < 0) continue;
    const int slot = v.wheels[w].spin;
    const double sc = obs_->sensor_parameters()[k], turned = s.q[slot] - wheels_.anchor(w).model;
    out.q[slot] = wheels_.anchor(w).counts + sc * turned;
    out.qd[slot] = sc * s.qd[slot];
    if (j < 0) continue;
    for (auto [i, c] : {std::pair{L.z(j), turned}, std::pair{L.zd(j), s.qd[slot]}}) {
      kin_scale_[i] = sc;
      kin_param_[i] = L.sensor(k);
      kin_coef_[i] = c;
    }
  }
  for (int i = 0; i < K; ++i)
    for (int l = 0; l < K; ++l) {
      const int a = kin_param_[i], b = kin_param_[l];
      double p = kin_scale_[i] * kin_scale_[l] * full(i, l);
      if (a >= 0) p += kin_coef_[i] * kin_scale_[l] * full(a, l);
      if (b >= 0) p += kin_scale_[i] * kin_coef_[l] * full(i, b);
      if (a >= 0 && b >= 0) p += kin_coef_[i] * kin_coef_[l] * full(a, b);
      P(i, l) = p;
    }
}

bool VehicleObserver::restore_parameter(std::string_view name, double value, double std, double age_s) {
  auto& in = inputs_.inputs();
  for (auto [slot, key, field] : model_parameters()) {
    const int k = input_index(slot);
    if (name != key || k < 0) continue;
    // The model runs on it as on a configured value; the filter's error is about it.
    const auto K = static_cast<std::size_t>(k);
    in.*field = std::clamp(value, cfg_.settings.input_min[K], cfg_.settings.input_max[K]);
    const double s0 = cfg_.settings.filter.initial_std_p[K];
    restored_input_var_[K] = std::min(std * std + cfg_.settings.filter.input_rate_noise[K] * age_s, s0 * s0);
    if (started_) obs_->set_input_variance(k, restored_input_var_[K]);
    return true;
  }
  // the latency's estimate is its lags' evidence, which the filter's parameter follows
  if (name == "gnss_latency") return gnss_.restore_latency(value, std);
  for (std::size_t k = 0; k < parameters_.size(); ++k) {
    const auto& p = parameters_[k];
    if (p.name != name) continue;
    const double var = std::min(std * std + p.rate_noise * age_s, p.initial_std * p.initial_std);
    if (p.name.starts_with("wheel_scale_") && wheel_scales_held()) {
      if (!(std < p.initial_std)) return true;  // held on the drive that saved it: still held
      scale_release_.release();  // learned on an earlier drive: nothing to hold
      wheels_.hold_scales(false);
    }
    obs_->set_sensor_parameter(static_cast<int>(k), value, var);
    return true;
  }
  return false;
}

std::array<VehicleObserver::ModelParameter, 5> VehicleObserver::model_parameters() const {
  const auto& in = vehicle_->in;
  using I = models::VehicleInputs;
  return {{{in.payload_front, "payload_front", &I::payload_front},
           {in.payload_rear, "payload_rear", &I::payload_rear},
           {in.slip_stiffness, "slip_stiffness", &I::slip_stiffness},
           {in.cornering_front, "cornering_front", &I::cornering_front},
           {in.cornering_rear, "cornering_rear", &I::cornering_rear}}};
}

bool VehicleObserver::learns_input(int k) const {
  const auto K = static_cast<std::size_t>(k);
  return K >= cfg_.input_learned.size() || cfg_.input_learned[K] != 0;
}

int VehicleObserver::input_index(int slot) const {
  const auto& est = cfg_.settings.estimated_inputs;
  if (!cfg_.settings.filter.force_error) return -1;  // errorEKF estimates no input
  const auto it = std::find(est.begin(), est.end(), slot);
  return it == est.end() ? -1 : static_cast<int>(it - est.begin());
}

double VehicleObserver::parameter_std(int k) const { return state_std(obs_->filter().layout().sensor(k)); }

double VehicleObserver::input_std(int k) const { return state_std(obs_->filter().layout().input(k)); }

double VehicleObserver::state_std(int i) const {
  // the filter's, and what the unmodelled sensor errors have made of it: a gyro's scale error,
  // learned as bias in turns of one sense, and as cornering stiffness in every turn (the car
  // drawn from its prior with gyros 0.5 % off, 180 s, 10 runs: the rear scale 0.19 off with a
  // filter sigma of 0.016, NEES 124)
  const auto& f = obs_->filter();
  const double extra = f.unmodelled_biases() > 0 ? f.unmodelled_covariance(i, i) : 0.0;
  return std::sqrt(std::max(0.0, f.covariance()(i, i) + extra));
}

void VehicleObserver::keep_learned_model() {
  const auto& P = obs_->filter().covariance();
  for (auto [slot, name, field] : model_parameters()) {
    const int k = input_index(slot);
    if (k < 0) continue;
    const int i = obs_->filter().layout().input(k);
    const double value = obs_->state().u[slot], var = P(i, i);
    if (std::isfinite(value) && std::isfinite(var) && var >= 0) restore_parameter(name, value, std::sqrt(var), 0);
  }
}

void VehicleObserver::start(const models::VehicleStart& s, double t0) {
  // A reset or a new time base says nothing of the car's load or tyres: what the filter learned
  // of them is kept, as the sensors' parameters are (MbObserver::initialize).
  if (ran_) keep_learned_model();
  ran_ = true;
  mb::Workspace ws(vehicle_->model);
  mb::State st = models::start_vehicle(*vehicle_, ws, s, inputs_.inputs());
  abs_limiting_ = false;
  wheels_.forget_counts();
  wheels_.align_start(st);
  mb::solve_position(vehicle_->model, st.q, st.u, ws);
  obs_->initialize(st);
  for (std::size_t k = 0; k < restored_input_var_.size(); ++k)
    if (restored_input_var_[k] > 0) obs_->set_input_variance(static_cast<int>(k), restored_input_var_[k]);
  sigma_->restart();
  adaptation_.restart();
  apply_adaptation();
  excitation_.restart();
  started_ = true;
  t_ = t0;
  // what the sources said of the model before says nothing of this one
  gnss_.restart();
  imu_.restart_monitor();
  wheels_.restart_monitor();
  wheel_speeds_.restart_monitor();
  standstill_.restart_monitor();
}

void VehicleObserver::push(const Measurement& m) {
  if (m.channel >= Channel::count || !std::isfinite(m.value) || !std::isfinite(m.t)) {
    ++counters_.samples_invalid;
    return;
  }
  standstill_.observe(m);
  // an older sample than the one held (out of order) is stale
  bool held = true;
  if (aiding::ModelInputs::owns(m.channel))
    held = inputs_.hold(m);
  else if (aiding::GnssAiding::owns(m.channel))
    held = gnss_.hold(m);
  else if (aiding::ImuAiding::owns(m.channel))
    held = imu_.hold(m);
  else if (aiding::WheelHallAiding::owns(m.channel))
    held = wheels_.hold(m);
  else if (aiding::WheelSpeedAiding::owns(m.channel))
    held = wheel_speeds_.hold(m);
  else if (aiding::BusInputs::owns(m.channel))
    held = bus_inputs_.hold(m);
  if (!held) ++counters_.samples_stale;
}

models::VehicleInputs VehicleObserver::torques_on_model_radius(const models::VehicleInputs& in) const {
  // A learned wheel scale k = R_model / R_car (WheelHallAiding) says the car's wheel rolls on
  // R_model / k. The torque on it is Fx R_car; the model's wheel, whose force acts at R_model,
  // makes the same Fx from k times it (steady state; the wheel's inertia is off by k^2, a few
  // per mil of a term that is small itself). Without it a 1 % smaller tyre reads as a car 1 %
  // lighter: issue 18's drive learned its +200 kg as +186 (the same drive with the file's
  // tyres: +204).
  models::VehicleInputs out = in;
  for (int w = 0; w < 4; ++w)
    if (const int k = wheels_.scale_param(w); k >= 0) {
      const double scale = obs_->sensor_parameters()[k];
      out.drive_torque[static_cast<std::size_t>(w)] *= scale;
      out.brake_pressure[static_cast<std::size_t>(w)] *= scale;
    }
  return out;
}

void VehicleObserver::gather(double t) {
  rows_.clear();
  // first: they act on this step (a production bus's signals converted into the model's)
  bus_inputs_.convert(t, out_.velocity_body.x(), inputs_);
  inputs_.gather(t);
  bus_inputs_.apply_rate(inputs_.inputs());
  const bool limiting = bus_inputs_.apply_abs(out_, obs_->state().u[vehicle_->in.mu], inputs_.inputs());
  if (abs_force_error_ >= 0) {
    // While the car's ABS, modelled, sets a brake torque, the chassis's longitudinal force is a
    // guess: its acceleration error may wander (abs_force_error) and the accelerometers, which
    // measure it, are fused. When the ABS lets go, the estimate of that guess is dropped.
    imu_.set_accelerometers_open(limiting);
    obs_->filter().set_accel_noise_boost(abs_force_error_, limiting ? cfg_.bus_inputs.brakes.abs_force_error : 0.0);
    if (abs_limiting_ && !limiting) obs_->forget_force_error(abs_force_error_);
    abs_limiting_ = limiting;
  }
  gnss_.gather(t, rows_);
  // at rest the gyro reads its bias only: it is fused where the bias is learned
  imu_.set_standing(standstill_.decide(t, out_.velocity_body.head<2>().norm()));
  imu_.gather(t, rows_);
  standstill_.gather(rows_);
  wheels_.gather(t, obs_->state(), inputs_.inputs(), obs_->sensor_parameters(), rows_);
  for (int w = 0; w < 4; ++w)
    if (wheels_.anchored()[w]) {
      // counts unwrapped anew where the model's angle agrees: that angle owes nothing to the radius
      const int j = obs_->observed_index(vehicle_->wheels[w].spin);
      if (j >= 0) obs_->filter().forget_unmodelled(obs_->filter().layout().z(j));
    }
  const bool hall = cfg_.wheels.use;
  wheel_speeds_.gather(t, dt_, obs_->state(), {hall, hall, hall, hall}, rows_);
}

void VehicleObserver::account(double t) {
  const auto& rows = rows_.rows();
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const SensorKind kind = kind_of(rows[i]);
    switch (kind) {
      case SensorKind::gnss_position:
      case SensorKind::gnss_velocity:
      case SensorKind::gnss_course:
        gnss_.account(rows[i], results_[i], t);
        break;
      case SensorKind::accelerometer:
      case SensorKind::gyroscope:
        imu_.account(rows[i], results_[i], t);
        break;
      case SensorKind::wheel_hall:
        wheels_.account(rows[i], results_[i], t, *obs_);
        break;
      case SensorKind::wheel_speed:
      case SensorKind::vehicle_speed: {
        const auto before = wheel_speeds_.resets();
        wheel_speeds_.account(rows[i], results_[i], t, *obs_);
        // its spin's sensitivities restarted (restart_coordinate): so does the Hall row's radius
        if (wheel_speeds_.resets() != before) wheels_.restart_radius(rows[i].row, obs_->state());
        break;
      }
      case SensorKind::standstill:
        standstill_.account(rows[i], results_[i], t);
        break;
      case SensorKind::count:
        break;
    }
  }
  counters_.wheel_resets = wheels_.resets() + wheel_speeds_.resets();
}

void VehicleObserver::check_bias_walk(double t) {
  const auto& P = obs_->filter().covariance();
  const auto& L = obs_->filter().layout();
  for (int k = 0; k < 3; ++k) {
    const int p = imu_.gyro_bias_param(k);
    if (p < 0) continue;
    const int s = L.sensor(p);
    const double scale = bias_walk_[static_cast<std::size_t>(k)].update(t, standstill_.standing(),
                                                                        obs_->sensor_parameters()[p], P(s, s));
    obs_->filter().set_sensor_noise_scale(p, scale);
  }
}

void VehicleObserver::adapt_plant_noise(double t, double dt) {
  if (!cfg_.adaptation.on) return;
  const auto& rows = rows_.rows();
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const SensorKind kind = kind_of(rows[i]);
    const auto& u = results_[i];
    if (kind == SensorKind::gyroscope && rows[i].row == 2)
      adaptation_.observe(PlantNoiseAdaptation::kGyroRow, u.innovation, u.variance, t);
    if (kind != SensorKind::gnss_position && kind != SensorKind::gnss_velocity) continue;
    const int row = (kind == SensorKind::gnss_velocity ? 2 : 0) + rows[i].row;
    if (rows[i].row < 2) adaptation_.observe(row, u.innovation, u.variance, t);
  }
  // the tyres' force utilisation of the last record (the model's load and friction)
  const auto& v = *vehicle_;
  const double mu_in = obs_->state().u[v.in.mu];
  double utilisation = 0;
  for (int w = 0; w < 4; ++w) {
    const auto& o = out_.wheel[w];
    const double mu = mu_in > 0 ? mu_in : v.params.axles[w / 2].tyre.mu;
    if (o.Fz > 0 && mu > 0) utilisation = std::max(utilisation, std::hypot(o.Fx, o.Fy) / (mu * o.Fz));
  }
  // Nor while an input is guessed (held or timed out): the model then runs on a value no
  // innovation has checked, and inputs.guess_noise_scale must multiply the configured noise,
  // not one adapted to the inputs that were right (a steering signal lost for 1 s left the
  // velocity flagged valid while 4 sigma off on 34 % of the steps).
  adaptation_.advance(t, dt, utilisation > cfg_.adaptation.limit_utilisation || inputs_.guessing(t));
  apply_adaptation();
}

void VehicleObserver::apply_adaptation() {
  const auto& A = cfg_.adaptation;
  if (!A.on) return;
  const double k = adaptation_.scale();
  if (A.x >= 0)
    obs_->filter().set_planar_noise_scale(A.x, A.y, obs_->state().q[vehicle_->yaw], A.longitudinal ? k : 1.0,
                                          A.lateral ? k : 1.0);
  if (A.yaw_index >= 0) obs_->filter().set_accel_noise_scale(A.yaw_index, std::max(k, A.yaw_min_scale));
}

void VehicleObserver::reinitialise(double t, std::uint32_t why) {
  ++counters_.resets;
  faults_ |= kFaultReset | why;
  // One forced reset is a recovery (an outage's drift, a receiver's jump that lasted); a second
  // soon after says the model does not hold its sources. The combined robustness drive as
  // shipped (gyro biases not learned) reset every 3.5 s and in between published a position
  // 1-3 m off with a sigma of 0.1 m as valid (the fixes' rejection read as the receiver's
  // fault) and a heading 0.7 deg off with a sigma of 0.03 deg.
  const double window = cfg_.validity.reset_window_s;
  if (window > 0 && t - forced_reset_t_ < window) repeated_reset_until_ = t + window;
  forced_reset_t_ = t;
  for (auto& b : bias_walk_) b.restart();
  // From the model where it is finite, from the last fix where it is recent. After a failed
  // step the model's state is the failed Newton's, finite but not the car (the mixed drive's
  // reversing in the car park: heading 107 deg off, moving forward): the last step's outputs.
  models::VehicleOutputs o;
  if (why & kFaultDiverged)
    o = out_;
  else
    models::vehicle_outputs(*vehicle_, obs_->state(), o);
  models::VehicleStart st;
  const bool pos_ok = std::isfinite(o.position.x()) && std::isfinite(o.position.y());
  st.x = pos_ok ? o.position.x() : 0;
  st.y = pos_ok ? o.position.y() : 0;
  st.yaw = std::isfinite(o.yaw) ? o.yaw : 0;
  st.speed = std::isfinite(o.velocity_body.x()) ? o.velocity_body.x() : 0;
  // the model's sideslip at the antenna, where it is a plausible one (its velocity there,
  // against the direction the car moves in)
  double antenna_sideslip = 0;
  bool turning = false;  // the model's sideslip and yaw rate carried into the start
  const Eigen::Vector3d antenna = vehicle_->chassis_local(cfg_.gnss.antenna);
  {
    const Eigen::Vector3d va = o.velocity_body + o.angular_velocity_body.cross(antenna);
    const double along = st.speed < 0 ? -va.x() : va.x(), across = st.speed < 0 ? -va.y() : va.y();
    const double beta = std::atan2(across, along);
    if (std::isfinite(beta) && along > cfg_.gnss.course_min_speed && std::abs(beta) < kMaxResetSideslip_rad &&
        std::isfinite(o.yaw_rate) && std::isfinite(o.velocity_body.y())) {
      antenna_sideslip = beta;
      turning = true;
    }
  }
  const bool from_fix = gnss_.pose_from_recent_fix(t, st, antenna_sideslip);
  // A start in a turn turns, and sideslips: started with neither (a rigid motion straight ahead)
  // the car drawn from the prior, reset 7 deg into a roundabout at 4.5 m/s, published a
  // sideslip 4.9 deg off that took 0.5 s to settle. The model's yaw rate (the gyro's, fused), and
  // its sideslip at the antenna applied to the receiver's speed there: P0 moves at
  // v_antenna - omega x r_antenna.
  if (turning) {
    st.yaw_rate = o.yaw_rate;
    if (from_fix) {
      const double s = st.speed;  // signed: the antenna's velocity is s (cos beta, sin beta)
      st.speed = s * std::cos(antenna_sideslip) + o.yaw_rate * antenna.y();
      st.lateral_speed = s * std::sin(antenna_sideslip) - o.yaw_rate * antenna.x();
    } else {
      st.lateral_speed = o.velocity_body.y();
    }
  }
  try {
    start(st, t);
    // The pose from a fix owes nothing to an unmodelled bias (the speed and course too, at
    // speed); one from the model carries what it did to the model (ErrorEkf::reset_covariance).
    if (from_fix) obs_->filter().forget_unmodelled_motion();
    if (why == kFaultNone && !learns_car_) reopen_wheel_scales();
    if (from_fix) {
      correlate_start_with_receiver_error();
      correlate_start_with_latency(st);
    }
  } catch (const std::exception&) {
    started_ = false;  // wait for the next fix
  }
  wheels_.forget_counts();
}

void VehicleObserver::reopen_wheel_scales() {
  // The fixes disagreed with the model for gnss.reset_after_rejection_s: the scales they taught
  // are suspect. A receiver 0.1 s late and not told taught them its lag at the first pull-away
  // (a speed 5 % low, sure to 0.01 %) and then rejected every fix that would have corrected
  // them: a reset every 5 s, the scales as wrong and as sure after each. Each keeps its value
  // and is as uncertain as its prior again, and the fixes after the reset teach it anew. Only
  // the scales: a gyro bias reopened so cost the heading 3x on that drive (yaw 0.0056 -> 0.018
  // rad), its error being the receiver's along the track, not across. Not where the car is
  // learned as well: its loads and stiffness scales, learned beside the wrong scales, stay wrong
  // (cornering scales at their 0.5 bound), and with fewer resets the outputs were valid more
  // often while off (that drive over 300 s: sideslip 2.1 %, velocity 1.6 %, heading 1.0 % of
  // its steps flagged valid while 4 sigma off, against none).
  if (wheel_scales_held()) return;  // they taught nothing: they stay held
  for (int w = 0; w < 4; ++w) {
    const int k = wheels_.scale_param(w);
    if (k < 0) continue;
    const double s0 = parameters_[static_cast<std::size_t>(k)].initial_std;
    // the filter's own variance, which its gains use: the published sigma also holds what the
    // considered biases did to the scale, and a scale sure to 0.01 % in the filter and 2 % in
    // that sigma was left as sure
    const int i = obs_->filter().layout().sensor(k);
    if (obs_->filter().covariance()(i, i) < s0 * s0)
      obs_->set_sensor_parameter(k, obs_->sensor_parameters()[k], s0 * s0);
  }
}

void VehicleObserver::set_wheel_scales_std(double std) {
  for (int w = 0; w < 4; ++w)
    if (const int k = wheels_.scale_param(w); k >= 0)
      obs_->set_sensor_parameter(k, obs_->sensor_parameters()[k], std * std);
}

void VehicleObserver::watch_wheel_scales(double t) {
  const auto& R = cfg_.wheels.release;
  if (!wheel_scales_held()) return;
  if (std::abs(excitation_.speed()) >= R.min_speed && std::abs(excitation_.a_long()) <= R.max_accel) {
    // this step's fix: its east and north velocity innovations, normalised, along the track
    double east = std::nan(""), north = std::nan("");
    const auto& rows = rows_.rows();
    for (std::size_t i = 0; i < rows.size(); ++i) {
      const auto& u = results_[i];
      if (kind_of(rows[i]) != SensorKind::gnss_velocity || !u.accepted || !(u.variance > 0)) continue;
      if (rows[i].row == 0) east = u.innovation / std::sqrt(u.variance);
      if (rows[i].row == 1) north = u.innovation / std::sqrt(u.variance);
    }
    const auto& s = obs_->state();
    const double ve = s.qd[vehicle_->x], vn = s.qd[vehicle_->y], v = std::hypot(ve, vn);
    if (std::isfinite(east) && std::isfinite(north) && v > 0) scale_release_.observe((ve * east + vn * north) / v, t);
  }
  if (scale_release_.released()) {
    wheels_.hold_scales(false);
    estimate_held_radius(t);
    ++counters_.wheel_scale_releases;
  }
}

void VehicleObserver::estimate_held_radius(double t) {
  // The scales as uncertain as their prior, and the error the held radius made while the Hall
  // rows considered it (the model rolled by the file's radius) correlated with them: released
  // with no correlation (the scales merely reopened) the lane change on tyres 1 % small kept
  // its position and speed, sure to centimetres and wrong by 0.4 m and 0.19 m/s, rejected the
  // fixes that said so and learned nothing until a forced reset 1.4 s later. The prior's
  // variance is split: the common radius's (validity.rolling_radius_rel_std, the one the Hall
  // rows considered: the sensitivity is to it) and each wheel's own for the rest (their
  // differences: pressure, wear). With 3/4 of the prior common instead the figures were the
  // same (the smaller tyres, the heavier car, the car from the prior, the combined drive).
  std::array<int, 4> states{};
  std::size_t n = 0;
  double s0 = 0;
  for (int w = 0; w < 4; ++w) {
    const int k = wheels_.scale_param(w);
    if (k < 0) continue;
    states[n++] = obs_->filter().layout().sensor(k);
    s0 = std::max(s0, parameters_[static_cast<std::size_t>(k)].initial_std);
  }
  // Not within scale_release.after_reset_s of a forced reset: the fixes then disagreed with the
  // model for what it does not describe (a gyro bias, a receiver's latency not configured), and
  // the released scales took that for the radius (the car drawn from the prior, its gyro bias
  // not learned: sideslip 0.036 -> 0.080 deg; the combined drive: heading 0.020 -> 0.032 rad).
  const int bias = wheels_.considered_radius();
  if (bias < 0 || t - forced_reset_t_ < cfg_.wheels.release.after_reset_s) {
    reopen_wheel_scales();
    return;
  }
  // Not the spin angles': the considered radius moves them by d times the angle turned since
  // their counts were unwrapped (hundreds of radians), the scales' rows by d times the angle
  // turned since their anchor, which restarts here. Left to their old anchors (up to 10 s, 700
  // rad back), the next counts took that angle as known and taught the scales their held value
  // (1-sigma 0.0002 in one step, at 1.0001 where the truth was 1.0103).
  wheels_.restart_scale_anchors();
  for (int w = 0; w < 4; ++w)
    if (const int j = obs_->observed_index(vehicle_->wheels[w].spin); j >= 0)
      obs_->filter().set_unmodelled(obs_->filter().layout().z(j), bias, 0.0);
  const double common = std::min(s0, cfg_.validity.rolling_radius_rel_std);
  obs_->filter().estimate_unmodelled(bias, std::span<const int>(states.data(), n), common * common,
                                     s0 * s0 - common * common);
}

void VehicleObserver::resynchronise() {
  ++counters_.time_jumps;
  pending_faults_ |= kFaultTimeJump;
  forced_reset_t_ = repeated_reset_until_ = -kNever;  // times of the old base
  started_ = false;
  inputs_.forget_time();
  gnss_.forget_time();
  imu_.forget_time();
  wheels_.forget_time();
  wheel_speeds_.forget_time();
  standstill_.forget_time();
  bus_inputs_.forget_time();
}

const EstimateRecord& VehicleObserver::step(double t) {
  faults_ = pending_faults_;
  pending_faults_ = 0;
  ++counters_.steps;
  if (!started_) {
    // The first fix places the model at this step's time: nothing to integrate yet.
    if (auto pose = gnss_.first_fix_pose(t)) {
      try {
        start(*pose, t);
        obs_->filter().forget_unmodelled_motion();  // a pose from the fixes
        correlate_start_with_receiver_error();
        correlate_start_with_latency(*pose);
      } catch (const std::exception&) {
        // no static equilibrium found: try again with the next fix
      }
    }
    t_ = t;
    fill_record(t);
    return rec_;
  }
  gather(t);
  models::set_inputs(*vehicle_, torques_on_model_radius(inputs_.inputs()), obs_->state());
  obs_->filter().set_plant_noise_scale(inputs_.guessing(t) ? cfg_.inputs.guess_noise_scale : 1.0);
  choose_learning(t - t_);
  auto r = obs_->step(rows_.rows(), &results_);
  gnss_.record_model(t, obs_->state());
  counters_.newton_iterations += static_cast<std::uint64_t>(r.model_step.iterations);
  account(t);
  watch_wheel_scales(t);
  adapt_plant_noise(t, t - t_);
  check_bias_walk(t);
  t_ = t;
  if (!r.model_step.converged) ++counters_.model_step_failures, faults_ |= kFaultModelStepFailed;
  if (!r.correction_converged) ++counters_.correction_failures, faults_ |= kFaultCorrectionFailed;
  if (!r.model_step.converged || !r.correction_converged || !r.healthy)
    reinitialise(t, kFaultDiverged);
  else if (gnss_.rejected_too_long(t))
    reinitialise(t, kFaultNone);  // the fixes have disagreed with the model for too long: trust the receiver
  fill_record(t);
  return rec_;
}

void VehicleObserver::fill_record(double t) {
  ++rec_.seq;
  rec_.t = t;
  rec_.faults = faults_;
  rec_.resets = counters_.resets;
  gnss_.update_health(t);
  imu_.update_health(t);
  wheels_.update_health(t);
  wheel_speeds_.update_health(t);
  standstill_.update_health(t);
  for (auto kind : {SensorKind::gnss_position, SensorKind::gnss_velocity, SensorKind::gnss_course})
    rec_.sensors[aiding::index_of(kind)] = gnss_.health(kind).published();
  for (auto kind : {SensorKind::accelerometer, SensorKind::gyroscope})
    rec_.sensors[aiding::index_of(kind)] = imu_.health(kind).published();
  rec_.sensors[aiding::index_of(SensorKind::wheel_hall)] = wheels_.health().published();
  for (auto kind : {SensorKind::wheel_speed, SensorKind::vehicle_speed})
    rec_.sensors[aiding::index_of(kind)] = wheel_speeds_.health(kind).published();
  rec_.sensors[aiding::index_of(SensorKind::standstill)] = standstill_.health().published();
  if (gnss_.position_timed_out()) rec_.faults |= kFaultGnssTimeout;
  if (imu_.timed_out()) rec_.faults |= kFaultImuTimeout;
  // the Hall counters whether or not fused (as the others), the wheel speeds when the bus has them
  if ((wheels_.timed_out() && (cfg_.wheels.use || !wheel_speeds_.active())) || wheel_speeds_.timed_out())
    rec_.faults |= kFaultWheelTimeout;
  if (inputs_.timed_out(t)) rec_.faults |= kFaultInputTimeout;
  if (inputs_.implausible()) rec_.faults |= kFaultInputImplausible;

  for (std::size_t k = 0; k < parameters_.size(); ++k) {  // what it has learned so far
    if (!parameters_[k].published) continue;
    auto& c = rec_.calibration[calibration_index_[k]];
    c.estimated = true;
    c.value = obs_->sensor_parameters()[static_cast<Eigen::Index>(k)];
    c.std = std::hypot(parameter_std(static_cast<int>(k)), parameters_[k].model_std);
    c.converged = c.std < parameters_[k].converged_std;
    if (wheel_scales_held() && parameters_[k].name.starts_with("wheel_scale_")) {
      // held, not learned: as uncertain as its prior (what a calibration file then keeps)
      c.std = parameters_[k].initial_std;
      c.converged = false;
    }
  }
  if (t < repeated_reset_until_) rec_.faults |= kFaultRepeatedReset;
  if (!started_) {
    rec_.valid = false;
    rec_.validity = {};
    return;
  }
  const auto& v = *vehicle_;
  const auto& s = obs_->state();
  models::vehicle_outputs(v, s, out_);
  // With estimated wheel scales the model spins its wheels as its own radius asks; what is
  // published is the physical wheel, as its Hall sensor counts it.
  ScaledWheels scaled;
  for (int w = 0; w < 4; ++w) {
    const int k = wheels_.scale_param(w);
    if (k < 0) continue;
    const double sc = obs_->sensor_parameters()[k], turned = s.q[v.wheels[w].spin] - wheels_.anchor(w).model;
    scaled[static_cast<std::size_t>(w)] = {obs_->layout().sensor(k), sc, turned};
    out_.wheel[w].spin_rate *= sc;
    out_.wheel[w].spin_angle = wheels_.anchor(w).counts + sc * turned;
    // counts turn sc times the model's spin, v / R_model: the wheel rolls on R_model / sc
    out_.wheel[w].effective_radius /= sc;
  }
  record_outputs(out_, rec_);
  const double mu_in = s.u[v.in.mu];
  rec_.friction = mu_in > 0 ? mu_in : v.params.axles[0].tyre.mu;
  rec_.mass = v.params.total_mass() + s.u[v.in.payload_front] + s.u[v.in.payload_rear];
  // the loads it estimates, with the calibration, and the tyres' stiffness scales; converged: 1 % of the car's mass,
  // 0.02 of a scale
  const Eigen::Matrix2d loads = sigma_->payload_covariance(obs_->filter());
  for (auto [slot, name, field] : model_parameters()) {
    const int k = input_index(slot);
    if (k < 0) continue;
    auto& c = rec_.calibration[calibration_index(name)];
    c.estimated = true;
    c.value = s.u[slot];
    const bool load = slot == v.in.payload_front || slot == v.in.payload_rear;
    // a load's, with its split's model error (output_sigma.hpp), as the tyre loads take it
    const int point = slot == v.in.payload_front ? 0 : 1;
    c.std = load ? std::sqrt(loads(point, point)) : input_std(k);
    c.converged = c.std < (load ? 0.01 * v.params.total_mass() : 0.02);
  }
  const ObservedChassis chassis{obs_->observed_index(v.x), obs_->observed_index(v.y), obs_->observed_index(v.yaw)};
  const Eigen::Vector2d lever_arm =
      cfg_.gnss.chassis_only ? Eigen::Vector2d(v.chassis_local(cfg_.gnss.antenna).head<2>()) : Eigen::Vector2d::Zero();
  record_uncertainty(obs_->filter(), chassis, input_index(v.in.mu), cfg_.validity.min_speed_for_sideslip, lever_arm,
                     rec_);
  sigma_->update(*obs_, out_, rec_, loads, scaled);
  {
    const int k = input_index(v.in.cornering_rear);
    const double rel = k < 0 ? cfg_.validity.rear_slip_angle_rel_std : input_std(k);
    // below the sideslip's speed a slip angle is a ratio of small numbers, and the course no row
    if (std::abs(rec_.v_long) > cfg_.validity.min_speed_for_sideslip)
      add_rear_slip_error(0.5 * (out_.wheel[2].slip_angle + out_.wheel[3].slip_angle), rel, rec_);
  }
  // the reference point's acceleration in the chassis frame, and the yaw acceleration
  const Eigen::Vector3d a = models::chassis_rotation(v, s.q).transpose() * s.qdd.segment<3>(v.P0);
  rec_.a_long = a.x(), rec_.a_lat = a.y(), rec_.yaw_accel = s.qdd[v.yaw];
  // WGS84 of the reference point, and the origin of the frame it is given in
  const auto& geo = gnss_.geodesy();
  geo.Reverse(rec_.x, rec_.y, rec_.z, rec_.lat, rec_.lon, rec_.alt);
  rec_.origin_lat = geo.LatitudeOrigin(), rec_.origin_lon = geo.LongitudeOrigin(), rec_.origin_alt = geo.HeightOrigin();
  auto source = [](bool fused, const aiding::SourceHealth& h) {
    return SourceState{fused, h.timed_out(), h.consistent(), h.nis(), {h.bias(0), h.bias(1)}};
  };
  SourcesState src;
  src.gnss_position = source(cfg_.gnss.use_position, gnss_.health(SensorKind::gnss_position));
  src.gnss_velocity = source(cfg_.gnss.use_velocity, gnss_.health(SensorKind::gnss_velocity));
  src.gnss_course = source(cfg_.gnss.use_course, gnss_.health(SensorKind::gnss_course));
  src.gnss_course.lost = false;  // the course is only fused above a speed: its silence is no loss
  src.gyro = source(cfg_.imu.use_gyro, imu_.health(SensorKind::gyroscope));
  src.accelerometers = source(imu_.accelerometers_fused(), imu_.health(SensorKind::accelerometer));
  src.wheels = source(cfg_.wheels.use, wheels_.health());
  if (!cfg_.wheels.use && wheel_speeds_.active()) {
    // without Hall counts the wheel speeds are what the virtual sensors' wheels rest on
    const auto& ws = wheel_speeds_.health(SensorKind::wheel_speed);
    src.wheels = SourceState{true, wheel_speeds_.timed_out(), ws.consistent(), ws.nis()};
  }
  src.settled = !cfg_.gnss.use_position || gnss_.fixes_since_start() >= cfg_.gnss.start_fixes;
  src.repeated_reset = t < repeated_reset_until_;
  src.car_suspect = learns_car_ && t < forced_reset_t_ + cfg_.validity.reset_window_s;
  src.inputs_plausible = !inputs_.implausible();
  src.guessing = inputs_.guessing(t);
  src.fix_position_std = gnss_.position_std();
  if (cfg_.gnss.use_position) src.correlated_std = cfg_.gnss.correlated_std;
  src.fix_velocity_std = cfg_.gnss.velocity_std;
  if (gnss_.latency_param() >= 0) src.latency_std = gnss_.latency_std(), src.vx = rec_.vx, src.vy = rec_.vy;
  for (const auto* s :
       {&src.gnss_position, &src.gnss_velocity, &src.gnss_course, &src.gyro, &src.accelerometers, &src.wheels})
    if (s->fused && !s->consistent) rec_.faults |= kFaultInconsistent;
  inflate_uncertainty(src, rec_);
  record_validity(cfg_.validity, src, rec_);
}

}  // namespace mbo::est
