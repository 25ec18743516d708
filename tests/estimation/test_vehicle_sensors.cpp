// GNSS, IMU and Hall sensors of a vehicle: analytic gradients against finite differences on a
// 3-D model with a chassis triad (tests/mb/test_models.hpp), the IMU against a rigid-body
// formula, and the Hall counter's unwrapping.
#include <gtest/gtest.h>

#include "mbobserver/estimation/sensors/gnss.hpp"
#include "mbobserver/estimation/sensors/imu.hpp"
#include "mbobserver/estimation/sensors/wheel_hall.hpp"
#include "test_models.hpp"

using namespace mbo;
using namespace mbo::est;

namespace {

struct ChassisSetup {
  mb::Model m = test::kitchen_sink_model();
  ChassisFrame f;
  mb::LinearVec origin;
  ChassisSetup() {
    f.u = m.entities[m.entity("u")].slot;
    f.v = m.entities[m.entity("v")].slot;
    f.w = m.entities[m.entity("w")].slot;
    origin.terms.push_back({m.entities[m.entity("P0")].slot, 1, 0});
  }
};

Eigen::Matrix3d mounting() {
  return (Eigen::AngleAxisd(0.1, Eigen::Vector3d::UnitZ()) * Eigen::AngleAxisd(-0.05, Eigen::Vector3d::UnitY()))
      .toRotationMatrix();
}

// `lag`: the sample's age the context gives (the GNSS models add their latency to it);
// `params`: the estimated sensor parameters' values, whose gradient dp is checked too.
void check_gradients(const mb::Model& m, const Sensor& s, double lag = -1, const VectorXd* params = nullptr) {
  std::srand(5);
  VectorXd x = m.x0, xd = VectorXd::Zero(x.size()), xdd = VectorXd::Zero(x.size());
  x.head(m.nq) += 0.1 * VectorXd::Random(m.nq);
  xd.head(m.nq).setRandom();
  xdd.head(m.nq).setRandom();
  for (int row = 0; row < s.rows(); ++row) {
    Gradients g;
    g.clear(m.nq);
    s.measure({m, x, xd, xdd, params, lag}, row, &g);
    auto dense = [&](const SparseGradient& sg) {
      VectorXd v = VectorXd::Zero(m.nq);
      for (int i = 0; i < sg.n; ++i) v[sg.slot[i]] += sg.value[i];
      return v;
    };
    VectorXd a[3] = {dense(g.dq), dense(g.dqd), dense(g.dqdd)};
    VectorXd* vars[3] = {&x, &xd, &xdd};
    for (int w = 0; w < 3; ++w)
      for (int i = 0; i < m.nq; ++i) {
        const double h = 1e-6;
        VectorXd save = *vars[w];
        (*vars[w])[i] += h;
        double p = s.measure({m, x, xd, xdd, params, lag}, row, nullptr);
        (*vars[w])[i] -= 2 * h;
        double q = s.measure({m, x, xd, xdd, params, lag}, row, nullptr);
        *vars[w] = save;
        double fd = (s.is_angle(row) ? wrap_angle(p - q) : p - q) / (2 * h);
        EXPECT_NEAR(a[w][i], fd, 1e-6 * (1 + std::abs(fd)))
            << "row " << row << " wrt " << w << " coordinate " << m.coordinate_names[i];
      }
    if (!params) continue;
    VectorXd dp = VectorXd::Zero(params->size());
    for (int i = 0; i < g.dp.n; ++i) dp[g.dp.slot[i]] += g.dp.value[i];
    for (Eigen::Index k = 0; k < params->size(); ++k) {
      const double h = 1e-6;
      VectorXd pp = *params, pq = *params;
      pp[k] += h, pq[k] -= h;
      const double fd =
          (s.measure({m, x, xd, xdd, &pp, lag}, row, nullptr) - s.measure({m, x, xd, xdd, &pq, lag}, row, nullptr)) /
          (2 * h);
      EXPECT_NEAR(dp[k], fd, 1e-6 * (1 + std::abs(fd))) << "row " << row << " wrt parameter " << k;
    }
  }
}

}  // namespace

TEST(VehicleSensors, GnssGradientsMatchFiniteDifferences) {
  ChassisSetup s;
  auto antenna = s.f.point(s.origin, {-0.5, 0.3, 1.2});
  check_gradients(s.m, GnssPositionSensor(antenna, false, s.origin));
  check_gradients(s.m, GnssVelocitySensor(antenna));
  check_gradients(s.m, GnssCourseSensor(antenna));
}

// A fix fused at its own time: a latency and the sample's age at the step, r - L v + L^2/2 a
// (the second-order term: 4.5 cm for 0.1 s in a 9 m/s^2 stop).
TEST(VehicleSensors, GnssGradientsWithALagMatchFiniteDifferences) {
  ChassisSetup s;
  auto antenna = s.f.point(s.origin, {-0.5, 0.3, 1.2});
  for (double age : {0.0, 0.0013}) {
    check_gradients(s.m, GnssPositionSensor(antenna, false, s.origin, 0.1), age);
    check_gradients(s.m, GnssVelocitySensor(antenna, 0.1), age);
    check_gradients(s.m, GnssCourseSensor(antenna, -1, 0.1), age);
  }
  // the prediction is the trajectory's second-order Taylor step back over the whole lag
  VectorXd x = s.m.x0, xd = VectorXd::Zero(x.size()), xdd = VectorXd::Zero(x.size());
  xd.head(s.m.nq).setRandom();
  xdd.head(s.m.nq).setRandom();
  const GnssPositionSensor p(antenna, false, s.origin, 0.1);
  const double L = 0.1 + 0.0013;
  const Eigen::Vector3d r = mb::evaluate(antenna, x, 3), v = mb::evaluate(antenna, xd, 3),
                        a = mb::evaluate(antenna, xdd, 3);
  for (int row = 0; row < 3; ++row)
    EXPECT_NEAR(p.measure({s.m, x, xd, xdd, nullptr, 0.0013}, row, nullptr), r[row] - L * v[row] + 0.5 * L * L * a[row],
                1e-12);
}

// Counts that come late (wheels.latency_s) are the wheel's angle that long ago (a first-order
// step back), with its gradients, with and without a learned scale.
TEST(VehicleSensors, HallCountsWithALatencyAreTheAngleThatLongAgo) {
  ChassisSetup s;
  const std::array<int, 4> spins{0, 1, 2, 3};
  WheelHallSensor hall(spins);
  hall.set_latency(0.01);
  check_gradients(s.m, hall);
  check_gradients(s.m, hall, 0.0013);
  VectorXd x = s.m.x0, xd = VectorXd::Zero(x.size()), xdd = VectorXd::Zero(x.size());
  xd.head(s.m.nq).setRandom();
  xdd.head(s.m.nq).setRandom();
  const double L = 0.01 + 0.0013;
  for (int row = 0; row < 4; ++row)
    EXPECT_NEAR(hall.measure({s.m, x, xd, xdd, nullptr, 0.0013}, row, nullptr), x[row] - L * xd[row], 1e-12);
  // with scales: counts = anchor + s (angle L ago - anchor's model angle)
  const std::array<int, 4> params{0, 1, 2, 3};
  const std::array<HallAnchor, 4> anchors{HallAnchor{10.0, 0.2}, HallAnchor{-3.0, 0.1}, HallAnchor{0.0, 0.0},
                                          HallAnchor{1.0, -0.4}};
  hall.estimate_scale(params, &anchors);
  VectorXd p(4);
  p << 1.01, 0.99, 1.0, 1.02;
  for (int row = 0; row < 4; ++row) {
    Gradients g;
    g.clear(s.m.nq);
    const double angle = x[row] - L * xd[row];
    EXPECT_NEAR(hall.measure({s.m, x, xd, xdd, &p, 0.0013}, row, &g),
                anchors[row].counts + p[row] * (angle - anchors[row].model), 1e-12);
    ASSERT_EQ(g.dqd.n, 1);
    EXPECT_NEAR(g.dqd.value[0], -L * p[row], 1e-15);
    ASSERT_EQ(g.dp.n, 1);
    EXPECT_NEAR(g.dp.value[0], angle - anchors[row].model, 1e-12);
  }
}

// A latency nobody told the filter (gnss.latency_std) enters each row as dh/dlatency times its
// error: the sensors' dlag against the difference of their rows over the lag.
TEST(VehicleSensors, GnssLagDerivativesMatchFiniteDifferences) {
  ChassisSetup s;
  auto antenna = s.f.point(s.origin, {-0.5, 0.3, 1.2});
  std::srand(7);
  VectorXd x = s.m.x0, xd = VectorXd::Zero(x.size()), xdd = VectorXd::Zero(x.size());
  x.head(s.m.nq) += 0.1 * VectorXd::Random(s.m.nq);
  xd.head(s.m.nq).setRandom();
  xdd.head(s.m.nq).setRandom();
  for (double latency : {0.0, 0.1}) {
    const GnssPositionSensor position(antenna, false, s.origin, latency);
    const GnssVelocitySensor velocity(antenna, latency);
    const GnssCourseSensor course(antenna, -1, latency);
    for (const Sensor* sensor : std::initializer_list<const Sensor*>{&position, &velocity, &course})
      for (double age : {0.001, 0.0413})
        for (int row = 0; row < sensor->rows(); ++row) {
          Gradients g;
          g.clear(s.m.nq);
          sensor->measure({s.m, x, xd, xdd, nullptr, age}, row, &g);
          const double h = 1e-4;
          const double p = sensor->measure({s.m, x, xd, xdd, nullptr, age + h}, row, nullptr);
          const double q = sensor->measure({s.m, x, xd, xdd, nullptr, age - h}, row, nullptr);
          const double fd = (sensor->is_angle(row) ? wrap_angle(p - q) : p - q) / (2 * h);
          EXPECT_NEAR(g.dlag, fd, 1e-7 * (1 + std::abs(fd))) << "latency " << latency << " row " << row;
          EXPECT_GT(std::abs(g.dlag), 1e-3) << "a moving antenna's rows change with the lag";
        }
  }
}

TEST(VehicleSensors, ImuGradientsMatchFiniteDifferences) {
  ChassisSetup s;
  check_gradients(s.m, GyroSensor(s.f, mounting(), Eigen::Vector3d(0.01, 0, -0.02)));
  check_gradients(s.m, AccelerometerSensor(s.f, s.f.point(s.origin, {0.2, -0.1, 0.4}), mounting(), s.m.gravity,
                                           Eigen::Vector3d::Zero()));
}

// A learned scale-factor error s and bias b per axis: the axis reads r + s r^3 / (r^2 + r0^2)
// + b for r = T' omega ((1 + s) r + b well above r0), and its gradients over the coordinates
// and over s and b match finite differences.
TEST(VehicleSensors, GyroWithALearnedScaleReadsTheScaledRate) {
  ChassisSetup s;
  GyroSensor gyro(s.f, mounting(), Eigen::Vector3d::Zero());
  gyro.estimate_bias({0, -1, 2});
  gyro.estimate_scale({1, 3, 4});  // the y axis's bias is not estimated
  VectorXd p(5);
  p << 0.01, 0.004, -0.02, -0.007, 0.012;  // b_x, s_x, b_z, s_y, s_z
  check_gradients(s.m, gyro, -1, &p);
  std::srand(3);
  VectorXd x = s.m.x0, xd = VectorXd::Zero(x.size()), xdd = VectorXd::Zero(x.size());
  x.head(s.m.nq) += 0.1 * VectorXd::Random(s.m.nq);
  xd.head(s.m.nq).setRandom();
  const GyroSensor exact(s.f, mounting(), Eigen::Vector3d::Zero());
  const double scale[3] = {p[1], p[3], p[4]}, bias[3] = {p[0], 0, p[2]};
  for (int r = 0; r < 3; ++r) {
    const double rate = exact.measure({s.m, x, xd, xdd}, r, nullptr);
    ASSERT_GT(std::abs(rate), 0.1);
    const double k2 = GyroSensor::kScaleKnee * GyroSensor::kScaleKnee;
    const double read = gyro.measure({s.m, x, xd, xdd, &p}, r, nullptr);
    EXPECT_NEAR(read, rate + scale[r] * rate * rate * rate / (rate * rate + k2) + bias[r], 1e-14);
    EXPECT_NEAR(read, (1 + scale[r]) * rate + bias[r], 0.01 * std::abs(scale[r] * rate));  // r0^2 / r^2 < 1 %
  }
  // near rest the scale reads nothing: its gradient is of third order in the rate
  VectorXd still = s.m.x0, zero = VectorXd::Zero(still.size());
  Gradients g;
  g.clear(s.m.nq);
  EXPECT_NEAR(gyro.measure({s.m, still, zero, zero, &p}, 2, &g), p[2], 1e-15);
  for (int i = 0; i < g.dp.n; ++i) EXPECT_TRUE(g.dp.slot[i] != 4 || g.dp.value[i] == 0.0);
}

TEST(VehicleSensors, ImuMatchesRigidBodyKinematics) {
  // For a rigid rotation e_dot = omega x e the gyro returns T' C' omega, and at rest with the
  // chassis rolled by phi the accelerometer returns T' C' (-g): pitch and roll from gravity.
  ChassisSetup s;
  const auto& m = s.m;
  Eigen::Matrix3d C =
      (Eigen::AngleAxisd(0.7, Eigen::Vector3d::UnitZ()) * Eigen::AngleAxisd(0.1, Eigen::Vector3d::UnitY()) *
       Eigen::AngleAxisd(0.2, Eigen::Vector3d::UnitX()))
          .toRotationMatrix();
  VectorXd x = m.x0, xd = VectorXd::Zero(x.size()), xdd = VectorXd::Zero(x.size());
  Eigen::Vector3d omega(0.3, -0.4, 1.1);
  const int sl[3] = {s.f.u, s.f.v, s.f.w};
  for (int k = 0; k < 3; ++k) {
    x.segment<3>(sl[k]) = C.col(k);
    xd.segment<3>(sl[k]) = omega.cross(C.col(k));
  }
  Eigen::Matrix3d T = mounting();
  GyroSensor gyro(s.f, T, Eigen::Vector3d::Zero());
  AccelerometerSensor acc(s.f, s.f.point(s.origin, {0.2, -0.1, 0.4}), T, m.gravity, Eigen::Vector3d::Zero());
  Eigen::Vector3d expect_w = T.transpose() * C.transpose() * omega;
  Eigen::Vector3d expect_a = T.transpose() * C.transpose() * (-m.gravity);
  for (int r = 0; r < 3; ++r) {
    EXPECT_NEAR(gyro.measure({m, x, xd, xdd}, r, nullptr), expect_w[r], 1e-14);
    EXPECT_NEAR(acc.measure({m, x, xd, xdd}, r, nullptr), expect_a[r], 1e-13);
  }
}

TEST(VehicleSensors, CourseIncludesTheSideslip) {
  // A chassis heading 30 deg with its velocity 5 deg to the left: the course sensor returns
  // 35 deg; the receiver's 55 deg clockwise from north is the same direction.
  ChassisSetup s;
  const auto& m = s.m;
  VectorXd x = m.x0, xd = VectorXd::Zero(x.size()), xdd = VectorXd::Zero(x.size());
  const double yaw = 30 * M_PI / 180, beta = 5 * M_PI / 180;
  Eigen::Matrix3d C = Eigen::AngleAxisd(yaw, Eigen::Vector3d::UnitZ()).toRotationMatrix();
  x.segment<3>(s.f.u) = C.col(0);
  x.segment<3>(s.f.v) = C.col(1);
  x.segment<3>(s.f.w) = C.col(2);
  xd.segment<3>(m.entities[m.entity("P0")].slot) = 20 * Eigen::Vector3d(std::cos(yaw + beta), std::sin(yaw + beta), 0);
  GnssCourseSensor course(s.origin);
  EXPECT_NEAR(course.measure({m, x, xd, xdd}, 0, nullptr), yaw + beta, 1e-12);
  EXPECT_NEAR(course_to_heading(55 * M_PI / 180), 35 * M_PI / 180, 1e-12);
}

TEST(VehicleSensors, HallUnwrapperFollowsCountsThroughWrapAround) {
  HallUnwrapper h(40, 256);
  const double step = 2 * M_PI / 40, range = 256 * step;
  // first count: the middle of its tooth, in the counter wrap nearest the model's angle
  EXPECT_NEAR(h.angle(250, 250.3 * step + 3 * range), 250.5 * step + 3 * range, 1e-12);
  const double base = 250.5 * step + 3 * range;
  EXPECT_NEAR(h.angle(255, 0), base + 5 * step, 1e-12);
  EXPECT_NEAR(h.angle(3, 0), base + 9 * step, 1e-12);  // wrapped 255 -> 3 = +4
  EXPECT_NEAR(h.angle(250, 0), base, 1e-12);  // backwards 3 -> 250 = -9
  EXPECT_NEAR(h.angle(120, 0), base + 126 * step, 1e-12);  // 250 -> 120: +126 is shorter than -130
  EXPECT_NEAR(h.quantisation_std(), step / std::sqrt(12.0), 1e-15);
}

TEST(VehicleSensors, HallUnwrapperHandlesAFull32BitCounter) {
  // modulus 2^32 does not fit the counter's own type: 0xFFFFFFFE -> 1 is +3 teeth, not -2^32+3
  HallUnwrapper h(40, std::uint64_t{1} << 32);
  const double step = 2 * M_PI / 40;
  const double a0 = h.angle(0xFFFFFFFEu, 0.0);
  EXPECT_NEAR(h.angle(1u, 0.0) - a0, 3 * step, 1e-9);
  EXPECT_NEAR(h.angle(0xFFFFFFF0u, 0.0) - a0, -14 * step, 1e-9);
}

TEST(VehicleSensors, HallMeasurementIsUnbiased) {
  // Counts of a wheel turning through many teeth: the error of the unwrapped angle is the
  // uniform quantisation of one tooth, mean ~0 and std ~ step / sqrt(12).
  HallUnwrapper h(40, 65536);
  const double step = 2 * M_PI / 40;
  double sum = 0, sum2 = 0;
  const int n = 20000;
  for (int k = 0; k < n; ++k) {
    const double theta = 0.37 + 0.0123 * k;
    const auto count = static_cast<std::uint32_t>(static_cast<long long>(std::floor(theta / step)) % 65536);
    const double e = h.angle(count, theta) - theta;
    sum += e, sum2 += e * e;
  }
  EXPECT_NEAR(sum / n, 0, 0.01 * step);
  EXPECT_NEAR(std::sqrt(sum2 / n), step / std::sqrt(12.0), 0.02 * step);
}
