// The simulated sensors' error models against their definitions (docs/simulation.md): a gyro's
// mean and Allan deviation, the IMU's static errors and saturation, the GNSS latency recovered by
// cross-correlating fix and truth, the Gauss-Markov error's autocorrelation time, the tone
// wheel, the bus's timing, and the perturb block's draws against their distributions. Each
// statistic is compared with its expected value within a stated multiple of its own sampling
// error, so a model that is off by its own size fails.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <fstream>
#include <numeric>
#include <vector>

#include "mbobserver/experiment/perturbation.hpp"
#include "mbobserver/experiment/sensor_errors.hpp"
#include "mbobserver/experiment/sensor_sim.hpp"
#include "mbobserver/experiment/vehicle_experiment.hpp"

namespace {

using namespace mbo;
using exp::SensorSim;
using exp::SensorSimConfig;

const std::string kScenarios = std::string(MBO_SOURCE_DIR) + "/scenarios/";

// The sedan standing still, and a sensor configuration in which only `keep` samples (the
// others at one sample per 1000 s).
struct AtRest {
  exp::VehicleScenario sc = exp::load_vehicle_scenario(kScenarios + "vehicle_straight.json");
  mb::Workspace ws{sc.truth->model};
  mb::State s = models::start_vehicle(*sc.truth, ws, models::VehicleStart{});
};

SensorSimConfig only(const SensorSimConfig& base, const char* keep, double rate) {
  SensorSimConfig c = base;
  c.imu_rate_hz = c.wheel_rate_hz = c.gnss_rate_hz = c.inputs_rate_hz = 1e-3;
  if (std::string(keep) == "imu") c.imu_rate_hz = rate;
  if (std::string(keep) == "gnss") c.gnss_rate_hz = rate;
  if (std::string(keep) == "wheels") c.wheel_rate_hz = rate;
  return c;
}

// Overlapping Allan deviation of samples y for averaging time m samples (IEEE Std 952-1997,
// annex C: AVAR = 1/(2 (N - 2m + 1)) sum (ybar_{k+m} - ybar_k)^2 over the m-averages); `clusters`
// is the number of disjoint m-averages, which sets its sampling error.
double allan_deviation(const std::vector<double>& y, std::size_t m, std::size_t& clusters) {
  std::vector<double> c(y.size() + 1, 0.0);
  for (std::size_t i = 0; i < y.size(); ++i) c[i + 1] = c[i] + y[i];
  double sum = 0;
  std::size_t n = 0;
  for (std::size_t k = 0; k + 2 * m <= y.size(); ++k, ++n) {
    const double a = (c[k + m] - c[k]) / m, b = (c[k + 2 * m] - c[k + m]) / m;
    sum += (b - a) * (b - a);
  }
  clusters = y.size() / m;
  return std::sqrt(sum / (2.0 * n));
}

TEST(SensorErrors, GyroMeanAndAllanDeviationMatchBiasWhiteNoiseAndInstability) {
  AtRest r;
  // 20 Hz for 20000 s: a datasheet-like gyro (bias 0.01 rad/s on z, white noise 2e-3 rad/s per
  // sample, bias instability 1e-4 rad/s over 100 s), standing still so that it reads its errors.
  const double rate = 20, T = 20000, sw = 2e-3, B = 1e-4, tau = 100;
  SensorSimConfig c = only(r.sc.sensors, "imu", rate);
  c.gyro_std = sw;
  c.gyro_errors.bias = {0.002, -0.003, 0.01};
  c.gyro_errors.instability = {B, B, B};
  c.gyro_errors.correlation_s = tau;
  SensorSim sim(*r.sc.truth, c, 7);
  sim.start(r.s, {});
  std::array<std::vector<double>, 3> g;
  std::vector<Measurement> out;
  const auto n = static_cast<long>(T * rate);
  for (auto& v : g) v.reserve(n);
  for (long k = 1; k <= n; ++k) {
    out.clear();
    sim.sample(k / rate, r.s, {}, out);
    for (const auto& m : out)
      if (m.channel >= Channel::gyro_x && m.channel <= Channel::gyro_z)
        g[static_cast<int>(m.channel) - static_cast<int>(Channel::gyro_x)].push_back(m.value);
  }
  ASSERT_EQ(static_cast<long>(g[2].size()), n);
  const double sigma_gm = B / exp::kGaussMarkovAllanPeak;
  for (int axis = 0; axis < 3; ++axis) {
    const auto& y = g[axis];
    const double mean = std::accumulate(y.begin(), y.end(), 0.0) / y.size();
    // The truth at rest reads |omega| < 1e-9; the mean's sampling error: the Gauss-Markov
    // part's sigma sqrt(2 tau / T) and the white part's sw / sqrt(N).
    const double se_mean = std::hypot(sigma_gm * std::sqrt(2 * tau / T), sw / std::sqrt(double(n)));
    EXPECT_NEAR(mean, c.gyro_errors.bias[axis], 4 * se_mean) << "axis " << axis;
    for (double T_avg : {1.0, 100.0}) {
      std::size_t clusters = 0;
      const auto m = static_cast<std::size_t>(T_avg * rate);
      const double adev = allan_deviation(y, m, clusters);
      // white: sw^2 dt / T; Gauss-Markov: IEEE Std 952-1997, annex C
      const double expected =
          std::sqrt(sw * sw / rate / T_avg + exp::gauss_markov_allan_variance(sigma_gm, tau, T_avg));
      // relative sampling error of an Allan deviation from K clusters: 1 / sqrt(2 (K - 1))
      const double rel = 1 / std::sqrt(2.0 * (clusters - 1));
      EXPECT_NEAR(adev / expected, 1.0, 4 * rel) << "axis " << axis << " at " << T_avg << " s";
    }
  }
  // At the Gauss-Markov peak (1.89 tau) the instability alone is the datasheet's B.
  EXPECT_NEAR(std::sqrt(exp::gauss_markov_allan_variance(sigma_gm, tau, exp::kGaussMarkovAllanPeakTime * tau)), B,
              1e-4 * B);
}

TEST(SensorErrors, ImuScaleFactorCrossAxisBiasAndSaturationAreTheirEquation) {
  // A turn (10 m/s, yaw rate 0.3 rad/s): the IMU with errors against the same IMU without, on the
  // same state with the same seed: the white noise is the same draw, so the difference is the
  // error model's (I + S + M) x + b, then the range.
  auto sc = exp::load_vehicle_scenario(kScenarios + "vehicle_circle.json");
  mb::Workspace ws(sc.truth->model);
  models::VehicleStart st;
  st.speed = 10, st.yaw_rate = 0.3;
  const mb::State s = models::start_vehicle(*sc.truth, ws, st);
  SensorSimConfig ideal = only(sc.sensors, "imu", 500), err = ideal;
  err.gyro_errors.scale = {0.01, -0.02, 0.03};
  err.gyro_errors.cross_axis = {0.001, 0.02, 0.003, -0.01, 0.005, 0.006};
  err.gyro_errors.bias = {0.001, 0.002, -0.003};
  err.accel_errors.scale = {0.05, 0, 0};
  err.accel_errors.range = 5;  // m/s^2: the vertical 9.81 saturates
  SensorSim a(*sc.truth, ideal, 3), b(*sc.truth, err, 3);
  std::vector<Measurement> ya, yb;
  a.sample(0.002, s, {}, ya);
  b.sample(0.002, s, {}, yb);
  ASSERT_EQ(ya.size(), yb.size());
  // the ideal sample is truth + noise; the noise is the same draw in both
  Eigen::Vector3d w_ideal, a_ideal, w_err, a_err;
  int seen = 0;
  for (std::size_t k = 0; k < ya.size(); ++k) {
    ASSERT_EQ(ya[k].channel, yb[k].channel);
    const int c = static_cast<int>(ya[k].channel);
    if (c >= static_cast<int>(Channel::accel_x) && c <= static_cast<int>(Channel::accel_z))
      a_ideal[c] = ya[k].value, a_err[c] = yb[k].value, ++seen;
    if (c >= static_cast<int>(Channel::gyro_x) && c <= static_cast<int>(Channel::gyro_z)) {
      const int i = c - static_cast<int>(Channel::gyro_x);
      w_ideal[i] = ya[k].value, w_err[i] = yb[k].value, ++seen;
    }
  }
  ASSERT_EQ(seen, 6);
  EXPECT_GT(std::abs(w_ideal[2]), 0.25);
  // the model applies to the truth; the white noise n adds after it: y_err = K (y - n) + b + n
  // with n = y_ideal - truth. With gyro noise 2e-4, K's off-identity part times n is < 1e-5.
  const Eigen::Vector3d expected = err.gyro_errors.apply_static(w_ideal);
  for (int i = 0; i < 3; ++i) EXPECT_NEAR(w_err[i], expected[i], 1e-5) << "gyro " << i;
  EXPECT_NEAR(w_err[2] - w_ideal[2], 0.03 * w_ideal[2] + 0.02 * w_ideal[0] + 0.006 * w_ideal[1] - 0.003, 1e-5);
  EXPECT_EQ(a_err[2], 5.0);  // saturated at the range
  EXPECT_NEAR(a_err[0], 1.05 * a_ideal[0], 0.05 * sc.sensors.accel_std * 5);
  EXPECT_EQ(a_err[1], a_ideal[1]);
}

TEST(SensorErrors, GnssLatencyIsRecoveredByCrossCorrelatingFixAndTruth) {
  // The double lane change: the fixes' north coordinate against the truth antenna's, shifted by
  // every lag from 0 to 0.3 s; the correlation peaks at the configured latency.
  for (double latency : {0.0, 0.12}) {
    auto sc = exp::load_vehicle_scenario(kScenarios + "vehicle_double_lane_change.json");
    sc.sensors.gnss_timing.latency_s = latency;
    sc.sensors.position_std = 0.005;
    exp::TruthDrive drive(sc, 5);
    std::vector<double> t_truth, n_truth, t_fix, n_fix;
    std::vector<Measurement> meas;
    double lat = NAN;
    while (!drive.done()) {
      meas.clear();
      drive.advance(meas);
      auto k = models::chassis_point_kinematics(*sc.truth, drive.state(), sc.sensors.antenna);
      t_truth.push_back(drive.t());
      n_truth.push_back(k.position.y());
      for (const auto& m : meas) {
        if (m.channel == Channel::gnss_lat) lat = m.value;
        if (m.channel == Channel::gnss_lon) {
          double e, n, u;
          drive.sensors().geodesy().Forward(lat, m.value, sc.sensors.alt0, e, n, u);
          t_fix.push_back(m.t);
          n_fix.push_back(n);
        }
      }
    }
    ASSERT_GT(t_fix.size(), 300u);
    auto truth_at = [&](double t) {
      auto it = std::lower_bound(t_truth.begin(), t_truth.end(), t);
      if (it == t_truth.begin()) return n_truth.front();
      const std::size_t i = it - t_truth.begin();
      const double a = (t - t_truth[i - 1]) / (t_truth[i] - t_truth[i - 1]);
      return n_truth[i - 1] + a * (n_truth[i] - n_truth[i - 1]);
    };
    double best_lag = -1, best = -2;
    for (int k = 0; k <= 150; ++k) {
      const double lag = 0.002 * k;
      // Pearson correlation of fix(t) and truth(t - lag) over the fixes after 0.5 s
      double sx = 0, sy = 0, sxx = 0, syy = 0, sxy = 0;
      long n = 0;
      for (std::size_t i = 0; i < t_fix.size(); ++i) {
        if (t_fix[i] < 0.5) continue;
        const double x = n_fix[i], y = truth_at(t_fix[i] - lag);
        sx += x, sy += y, sxx += x * x, syy += y * y, sxy += x * y, ++n;
      }
      const double r = (sxy - sx * sy / n) / std::sqrt((sxx - sx * sx / n) * (syy - sy * sy / n));
      if (r > best) best = r, best_lag = lag;
    }
    EXPECT_NEAR(best_lag, latency, 0.0041) << "configured " << latency;
    EXPECT_GT(best, 0.999);
  }
}

TEST(SensorErrors, GaussMarkovPositionErrorHasTheConfiguredAutocorrelationTimeAndSigma) {
  AtRest r;
  const double rate = 10, T = 20000, tau = 20, sigma = 1.5;
  SensorSimConfig c = only(r.sc.sensors, "gnss", rate);
  c.position_std = sigma;
  c.position_correlation_s = tau;
  SensorSim sim(*r.sc.truth, c, 11);
  sim.start(r.s, {});
  const auto k0 = models::chassis_point_kinematics(*r.sc.truth, r.s, c.antenna);
  std::vector<double> e;
  std::vector<Measurement> out;
  double lat = NAN;
  for (long k = 1; k <= static_cast<long>(T * rate); ++k) {
    out.clear();
    sim.sample(k / rate, r.s, {}, out);
    for (const auto& m : out) {
      if (m.channel == Channel::gnss_lat) lat = m.value;
      if (m.channel == Channel::gnss_lon) {
        double x, y, z;
        sim.geodesy().Forward(lat, m.value, c.alt0, x, y, z);
        e.push_back(x - k0.position.x());
      }
    }
  }
  const double N = e.size();
  ASSERT_EQ(N, T * rate);
  const double mean = std::accumulate(e.begin(), e.end(), 0.0) / N;
  double var = 0;
  for (double x : e) var += (x - mean) * (x - mean);
  var /= N;
  // An AR(1) with phi = exp(-dt/tau): var(r_k) ~ (1/N) [(1 + phi^2)(1 - phi^2k)/(1 - phi^2) - 2k
  // phi^2k] (Bartlett 1946); the variance's relative error ~ sqrt(2 (1 + phi^2)/(1 - phi^2) / N).
  const double phi = std::exp(-1 / (rate * tau));
  const double var_rel = std::sqrt(2 * (1 + phi * phi) / (1 - phi * phi) / N);
  EXPECT_NEAR(var / (sigma * sigma), 1.0, 4 * var_rel);
  const auto lag = static_cast<std::size_t>(tau * rate);
  double cov = 0;
  for (std::size_t i = 0; i + lag < e.size(); ++i) cov += (e[i] - mean) * (e[i + lag] - mean);
  const double rho = cov / N / var;
  const double p2k = std::pow(phi, 2.0 * lag);
  const double se_rho = std::sqrt(((1 + phi * phi) * (1 - p2k) / (1 - phi * phi) - 2.0 * lag * p2k) / N);
  EXPECT_NEAR(rho, std::exp(-1.0), 4 * se_rho);
  // the autocorrelation time: the lag over -ln(rho)
  const double tau_hat = tau / -std::log(rho);
  EXPECT_NEAR(tau_hat / tau, 1.0, 4 * se_rho / (std::exp(-1.0)));
}

TEST(SensorErrors, ToothWheelCountsEdgesAtTheirSpacedAngles) {
  std::mt19937_64 rng(1);
  exp::ToothWheel even(40, 0, rng), uneven(40, 0.05, rng);
  const double pitch = 2 * M_PI / 40;
  EXPECT_EQ(even.count(0.0), 0);
  EXPECT_EQ(even.count(pitch * 2.5), 2);
  EXPECT_EQ(even.count(-pitch * 0.5), -1);
  EXPECT_EQ(even.count(2 * M_PI * 3 + pitch * 0.1), 120);
  // uneven: the same counts over whole turns, edges where they were drawn, monotone
  const auto& edges = uneven.edges();
  ASSERT_EQ(edges.size(), 40u);
  double spread = 0;
  for (int i = 1; i < 40; ++i) {
    EXPECT_GT(edges[i], edges[i - 1]);
    EXPECT_EQ(uneven.count(edges[i] + 1e-9), i);
    EXPECT_EQ(uneven.count(edges[i] - 1e-9), i - 1);
    EXPECT_EQ(uneven.count(2 * M_PI * 5 + edges[i] + 1e-9), 200 + i);
    spread += std::pow(edges[i] / pitch - i, 2);
  }
  const double std_drawn = std::sqrt(spread / 39);
  EXPECT_NEAR(std_drawn, 0.05, 0.05 * 4 / std::sqrt(2 * 39.0));
}

TEST(SensorErrors, BusJitterDropsClocksAndLatencyShapeTheStamps) {
  AtRest r;
  SensorSimConfig c = r.sc.sensors;
  c.can_jitter_s = 5e-4;
  c.can_drop_probability = 0.1;
  c.imu_timing.clock_ppm = 1000;  // 0.1 % fast: 500.5 samples per second
  c.wheel_timing.latency_s = 0.01;
  SensorSim sim(*r.sc.truth, c, 9);
  sim.start(r.s, {});
  std::vector<Measurement> out, all;
  const int steps = 5000;  // 10 s
  double last_t = -1;
  for (int k = 1; k <= steps; ++k) {
    out.clear();
    const double t = 0.002 * k;
    sim.sample(t, r.s, {}, out);
    for (const auto& m : out) {
      EXPECT_LE(m.t, t + 1e-9);  // released once it has arrived
      EXPECT_GE(m.t, last_t);  // receive stamps in arrival order
      last_t = m.t;
      all.push_back(m);
    }
  }
  long gyro = 0, wheel = 0;
  double first_wheel = 1e9;
  for (const auto& m : all) {
    gyro += m.channel == Channel::gyro_z;
    if (m.channel == Channel::wheel_count_fl) ++wheel, first_wheel = std::min(first_wheel, m.t);
  }
  // 10 s of a 500.5 Hz IMU less 10 % dropped frames: 4504.5 expected, binomial sd 30
  EXPECT_NEAR(gyro, 5005 * 0.9, 4 * std::sqrt(5005 * 0.1 * 0.9));
  EXPECT_NEAR(wheel, 5000 * 0.9, 4 * std::sqrt(5000 * 0.1 * 0.9));
  EXPECT_GE(first_wheel, 0.002 + 0.01 - 1e-9);  // the first count reaches the bus 10 ms late
  // frames made in 10 s: IMU 2 x 5005, wheels 5000, inputs 3 x 1000, GNSS 4 x 500 (no course
  // at rest); a tenth lost
  const double frames = 2 * 5005 + 5000 + 3 * 1000 + 4 * 500;
  EXPECT_NEAR(static_cast<double>(sim.dropped_frames()), 0.1 * frames, 4 * std::sqrt(frames * 0.1 * 0.9));
}

// The perturb block: 200 draws against the distributions they were drawn from.
TEST(Perturbation, DrawsFollowTheStatedDistributions) {
  auto doc = load_json_file(kScenarios + "vehicle_double_lane_change.json");
  for (auto k : {"truth", "model"}) doc[k]["vehicle"] = std::string(MBO_SOURCE_DIR) + "/config/vehicles/sedan.json";
  doc["sensors"]["imu"]["gyro"] = {{"bias", {0.0, 0.0, 0.001}}};
  doc["perturb"] = {{"mass_kg", {{"normal", {150.0, 40.0}}}},
                    {"cornering_stiffness", {{"uniform", {0.85, 1.05}}}},
                    {"rolling_radius", 0.99},
                    {"pitch_inertia", 1.1},
                    {"sensors/imu/gyro/bias", {{"normal", {0.0, 0.01}}}}};
  const auto path = std::filesystem::temp_directory_path() / ("mbo_perturb_test_" + std::to_string(getpid()) + ".json");
  std::ofstream(path) << doc.dump(2);
  const auto sc = exp::load_vehicle_scenario(path);
  const double mass0 = sc.truth->params.mass_kg, cs0 = sc.truth->params.axles[0].tyre.lateral.stiffness;
  const int n = 200;
  std::vector<double> mass, cs, bias_z;
  for (int seed = 1; seed <= n; ++seed) {
    const auto run = exp::realise_scenario(sc, seed);
    const auto& p = run.truth->params;
    mass.push_back(p.mass_kg - mass0);
    cs.push_back(p.axles[1].tyre.lateral.stiffness / sc.truth->params.axles[1].tyre.lateral.stiffness);
    EXPECT_NEAR(p.axles[0].tyre.lateral.stiffness, cs0 * cs.back(), 1e-12 * cs0);
    EXPECT_DOUBLE_EQ(p.axles[0].tyre.radius_m, 0.99 * sc.truth->params.axles[0].tyre.radius_m);
    EXPECT_DOUBLE_EQ(p.inertia_kgm2(1, 1), 1.1 * sc.truth->params.inertia_kgm2(1, 1));
    EXPECT_DOUBLE_EQ(p.inertia_kgm2(2, 2), sc.truth->params.inertia_kgm2(2, 2));
    bias_z.push_back(run.sensors.gyro_errors.bias[2] - 0.001);
    // what the report says was drawn is what the truth got
    EXPECT_NEAR(run.drawn["mass_kg"].get<double>(), mass.back(), 1e-9);
    EXPECT_NEAR(run.drawn["sensors/imu/gyro/bias/2"].get<double>(), bias_z.back(), 1e-15);
    // the model is the nominal car
    EXPECT_EQ(run.model->params.mass_kg, mass0);
  }
  auto stats = [](const std::vector<double>& v, double& mean, double& sd) {
    mean = std::accumulate(v.begin(), v.end(), 0.0) / v.size();
    double s = 0;
    for (double x : v) s += (x - mean) * (x - mean);
    sd = std::sqrt(s / (v.size() - 1));
  };
  double m, s;
  // mean within 4 standard errors (sd / sqrt(n)), sd within 4 of its own (sd / sqrt(2 (n - 1)))
  stats(mass, m, s);
  EXPECT_NEAR(m, 150, 4 * 40 / std::sqrt(n));
  EXPECT_NEAR(s, 40, 4 * 40 / std::sqrt(2.0 * (n - 1)));
  stats(bias_z, m, s);
  EXPECT_NEAR(m, 0, 4 * 0.01 / std::sqrt(n));
  EXPECT_NEAR(s, 0.01, 4 * 0.01 / std::sqrt(2.0 * (n - 1)));
  stats(cs, m, s);
  const double usd = 0.2 / std::sqrt(12.0);
  EXPECT_NEAR(m, 0.95, 4 * usd / std::sqrt(n));
  // a sample sd's error: sigma sqrt((kurtosis - 1) / n) / 2, a uniform's kurtosis 1.8
  EXPECT_NEAR(s, usd, 4 * usd * std::sqrt(0.8 / n) / 2);
  EXPECT_GE(*std::min_element(cs.begin(), cs.end()), 0.85);
  EXPECT_LE(*std::max_element(cs.begin(), cs.end()), 1.05);
  // one seed, one car
  EXPECT_EQ(exp::realise_scenario(sc, 17).drawn, exp::realise_scenario(sc, 17).drawn);
  EXPECT_NE(exp::realise_scenario(sc, 17).drawn, exp::realise_scenario(sc, 18).drawn);
  std::filesystem::remove(path);
}

// A payload drawn is a point load at the observer's payload point: the truth's static wheel
// loads are the file's plus the load's share on each wheel (VehicleParams::wheel_load_per_kg,
// the observer's sensitivity to its payload input), its yaw inertia the parallel axes'; the
// per-axle cornering scales touch their axle only.
TEST(Perturbation, APayloadIsAPointLoadWhereTheObserverPutsIt) {
  auto doc = load_json_file(kScenarios + "vehicle_double_lane_change.json");
  for (auto k : {"truth", "model"}) doc[k]["vehicle"] = std::string(MBO_SOURCE_DIR) + "/config/vehicles/sedan.json";
  doc["perturb"] = {{"payload_front_kg", 80.0}, {"payload_rear_kg", -30.0}, {"cornering_rear", 0.9}};
  const auto path = std::filesystem::temp_directory_path() / ("mbo_payload_test_" + std::to_string(getpid()) + ".json");
  std::ofstream(path) << doc.dump(2);
  const auto sc = exp::load_vehicle_scenario(path);
  std::filesystem::remove(path);
  const auto& m = sc.model->params;
  const auto run = exp::realise_scenario(sc, 1);
  const auto& t = run.truth->params;
  const double xf = m.payload_front().x(), xr = m.payload_rear().x();
  EXPECT_NEAR(t.total_mass(), m.total_mass() + 50, 1e-9);
  for (int w = 0; w < 4; ++w)
    EXPECT_NEAR(t.static_wheel_load(w),
                m.static_wheel_load(w) + 80 * m.wheel_load_per_kg(w, xf) - 30 * m.wheel_load_per_kg(w, xr),
                1e-6 * m.static_wheel_load(w))
        << w;
  // about the new CG: the chassis's Izz moved by its offset, the point loads' at theirs
  const double c = t.cg_m.x(), dx0 = m.cg_m.x() - c;
  const double izz = m.inertia_kgm2(2, 2) + m.mass_kg * dx0 * dx0 + 80 * (xf - c) * (xf - c) - 30 * (xr - c) * (xr - c);
  EXPECT_NEAR(t.inertia_kgm2(2, 2), izz, 1e-9 * izz);
  EXPECT_DOUBLE_EQ(t.cg_m.z(), m.cg_m.z());  // the payload points are at the CG's height
  EXPECT_DOUBLE_EQ(t.axles[0].tyre.lateral.stiffness, m.axles[0].tyre.lateral.stiffness);
  EXPECT_DOUBLE_EQ(t.axles[1].tyre.lateral.stiffness, 0.9 * m.axles[1].tyre.lateral.stiffness);
  EXPECT_NEAR(run.drawn["payload_front_kg"].get<double>(), 80, 1e-12);
}

TEST(Perturbation, ABadBlockIsOneErrorNamingItsPlace) {
  auto doc = load_json_file(kScenarios + "vehicle_double_lane_change.json");
  for (auto k : {"truth", "model"}) doc[k]["vehicle"] = std::string(MBO_SOURCE_DIR) + "/config/vehicles/sedan.json";
  const auto path = std::filesystem::temp_directory_path() / ("mbo_perturb_bad_" + std::to_string(getpid()) + ".json");
  auto expect_error = [&](const nlohmann::json& perturb, const std::string& what) {
    doc["perturb"] = perturb;
    std::ofstream(path) << doc.dump(2);
    try {
      exp::load_vehicle_scenario(path);
      ADD_FAILURE() << "no error for " << perturb.dump();
    } catch (const ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
    }
  };
  expect_error({{"mass", 100}}, "/perturb/mass: unknown parameter \"mass\"");
  expect_error({{"mass_kg", {{"normal", {0, -1}}}}}, "/perturb/mass_kg/normal: the standard deviation must be >= 0");
  expect_error({{"mass_kg", {{"uniform", {2, 1}}}}}, "needs low <= high");
  expect_error({{"sensors/imu/gyro/bias", 0.1}},
               "the sensors block has no number or array of numbers at /imu/gyro/bias");
  expect_error({{"mass_kg", {{"normal", {0, 1}}, {"uniform", {0, 1}}}}}, "give one of");
  std::filesystem::remove(path);
}

}  // namespace

// A receiver's latency that varies fix to fix, and its fixes stamped at their epoch (the
// daemon's "stamp": "fix_time"): arrival stamps 0.1-0.14 s after the epoch, spread over the
// jitter; fix-time stamps on the epoch, released only once the fix has arrived.
TEST(SensorErrors, GnssLatencyJitterAndFixTimeStamps) {
  AtRest r;
  auto run = [&](bool fix_time, std::vector<std::pair<double, double>>& got) {  // (stamp, released at)
    SensorSimConfig c = r.sc.sensors;
    c.gnss_rate_hz = 10;
    c.gnss_timing.latency_s = 0.1;
    c.gnss_timing.latency_jitter_s = 0.04;
    c.gnss_stamp_fix_time = fix_time;
    SensorSim sim(*r.sc.truth, c, 3);
    sim.start(r.s, {});
    std::vector<Measurement> out;
    for (int k = 1; k <= 5000; ++k) {  // 10 s
      out.clear();
      const double t = 0.002 * k;
      sim.sample(t, r.s, {}, out);
      for (const auto& m : out)
        if (m.channel == Channel::gnss_lat) got.emplace_back(m.t, t);
    }
  };
  std::vector<std::pair<double, double>> arrival, fix;
  run(false, arrival);
  run(true, fix);
  ASSERT_GE(arrival.size(), 95u);
  ASSERT_EQ(fix.size(), arrival.size());
  double lo = 1, hi = 0;
  for (std::size_t i = 0; i < fix.size(); ++i) {
    const double epoch = fix[i].first;
    if (i >= 2) {
      EXPECT_NEAR(epoch - fix[i - 1].first, 0.1, 1e-6) << "a fix-time stamp is its 10 Hz epoch";
    }
    EXPECT_GE(fix[i].second, epoch + 0.1 - 1e-9) << "released before it arrived";
    const double age = arrival[i].first - epoch;  // the same seed: the same epochs and draws
    EXPECT_GE(age, 0.1 - 1e-9);
    EXPECT_LE(age, 0.14 + 1e-9);
    lo = std::min(lo, age), hi = std::max(hi, age);
  }
  EXPECT_GT(hi - lo, 0.03) << "the latency does not vary";

  // and an observer told a latency besides would take the fixes back twice
  auto doc = load_json_file(kScenarios + "vehicle_double_lane_change.json");
  for (auto k : {"truth", "model"}) doc[k]["vehicle"] = std::string(MBO_SOURCE_DIR) + "/config/vehicles/sedan.json";
  doc["sensors"]["gnss"]["stamp"] = "fix_time";
  doc["observer"]["gnss"]["latency_s"] = 0.1;
  const auto path = std::filesystem::temp_directory_path() / ("mbo_fix_time_" + std::to_string(getpid()) + ".json");
  std::ofstream(path) << doc.dump(2);
  try {
    exp::load_vehicle_scenario(path);
    ADD_FAILURE() << "a latency besides fix-time stamps was accepted";
  } catch (const ConfigError& e) {
    EXPECT_THAT(e.what(), ::testing::HasSubstr("/observer/gnss/latency_s: the fixes are stamped at their own time"));
  }
  std::filesystem::remove(path);
}
