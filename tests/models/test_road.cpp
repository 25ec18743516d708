// Road contacts: the plane with grade and crossfall, the cylindrical bumps of Macchi 2010 ch. 8
// (cap and edge), the height grid; and a vehicle driving over a grid road.
#include <cmath>
#include <cstdio>

#include <gtest/gtest.h>

#include "mbobserver/models/road.hpp"
#include "mbobserver/models/vehicle_params.hpp"
#include "vehicle_sim.hpp"

using namespace mbo;
using namespace mbo::models;
using Eigen::Vector3d;

TEST(Road, PlaneWithGradeAndCrossfall) {
  Road r;
  r.z0_m = 0.2;
  r.grade = 0.05;
  r.crossfall = -0.02;
  const Vector3d n = r.normal();
  // A wheel whose axle lies in the plane (perpendicular to the normal) at height rho along n.
  const Vector3d a = n.cross(Vector3d::UnitX()).normalized();
  const Vector3d on_plane(10, 2, r.height(10, 2));
  const Vector3d C = on_plane + 0.29 * n;
  std::array<Contact, kMaxContacts> c;
  ASSERT_EQ(road_contacts(r, C, a, 0.3, c), 1);
  EXPECT_NEAR(c[0].penetration, 0.01, 1e-12);
  EXPECT_NEAR(c[0].rho, 0.29, 1e-12);
  EXPECT_LT((c[0].point - on_plane).norm(), 1e-12);
  EXPECT_LT((c[0].normal - n).norm(), 1e-15);
}

TEST(Road, CylindricalBumpCapAndEdge) {
  Road r;
  r.bumps.push_back({5.0, 0.05, 0.5});
  const double rb = r.bumps[0].radius();
  EXPECT_NEAR(rb, (0.0625 + 0.0025) / 0.1, 1e-12);  // (L^2/4 + h^2) / (2h) = 0.65 m
  const Vector3d a = Vector3d::UnitY();
  std::array<Contact, kMaxContacts> c;
  // On the crest: the bump contact is 2 cm deep, the plane is not touched.
  int n = road_contacts(r, Vector3d(5.0, 0, 0.05 + 0.3 - 0.02), a, 0.3, c);
  ASSERT_EQ(n, 2);
  EXPECT_LT(c[0].penetration, 0);
  EXPECT_NEAR(c[1].penetration, 0.02, 1e-12);
  EXPECT_LT((c[1].normal - Vector3d::UnitZ()).norm(), 1e-12);
  // On the flank, circle against circle: the contact normal points from the cylinder axis.
  const Vector3d axis(5.0, 0, 0.05 - rb);
  const Vector3d dir = Vector3d(0.3, 0, 1).normalized();
  n = road_contacts(r, axis + (rb + 0.3 - 0.004) * dir, a, 0.3, c);
  ASSERT_EQ(n, 2);
  EXPECT_NEAR(c[1].penetration, 0.004, 1e-12);
  EXPECT_LT((c[1].normal - dir).norm(), 1e-12);
  // Beside the bump, against its edge at (5 -+ 0.25, 0): the wheel meets the corner first.
  const Vector3d edge(5.0 - 0.25, 0, 0);
  const Vector3d C = edge + (0.3 - 0.003) * Vector3d(-0.6, 0, 0.8);
  n = road_contacts(r, C, a, 0.3, c);
  ASSERT_EQ(n, 2);
  EXPECT_NEAR(c[1].penetration, 0.003, 1e-12);
  EXPECT_LT((c[1].normal - Vector3d(-0.6, 0, 0.8)).norm(), 1e-12);
  // Continuity across the cap's rim: the contact from both sides of it.
  const double zr = rb - 0.05, xe = std::sqrt(rb * rb - zr * zr);
  const Vector3d rim_dir = Vector3d(-xe, 0, zr).normalized();
  for (double e : {-1e-7, 1e-7}) {
    const Vector3d d = Eigen::AngleAxisd(e, Vector3d::UnitY()) * rim_dir;
    n = road_contacts(r, axis + (rb + 0.29) * d, a, 0.3, c);
    ASSERT_EQ(n, 2);
    EXPECT_NEAR(c[1].penetration, 0.01, 1e-6);
  }
}

TEST(Road, HeightGridBilinear) {
  Road r;
  r.grid = {0, 0, 1, 2, 3, 2, {0, 0.1, 0.3, 0.2, 0.2, 0.2}};
  double h, hx, hy;
  r.grid.sample(0.5, 1.0, h, hx, hy);
  EXPECT_NEAR(h, 0.25 * (0 + 0.1 + 0.2 + 0.2), 1e-15);
  EXPECT_NEAR(hx, 0.5 * (0.1 - 0 + 0.2 - 0.2), 1e-15);
  EXPECT_NEAR(hy, 0.5 * (0.2 - 0 + 0.2 - 0.1) / 2, 1e-15);
  r.grid.sample(-1, 1, h, hx, hy);  // outside: flat
  EXPECT_EQ(h, 0);
  EXPECT_NEAR(r.height(2, 2), 0.2, 1e-15);
}

// A vehicle rolls over a grid road with a 3 cm ramp up and down under its left wheels.
TEST(Road, VehicleOnAHeightGrid) {
  const auto p = load_vehicle_params(test::vehicle_path("sedan"));
  Road road;
  const int nx = 41, ny = 9;
  road.grid = {10, -4, 0.5, 1.0, nx, ny, std::vector<double>(nx * ny, 0.0)};
  for (int j = 0; j < ny; ++j)
    for (int i = 0; i < nx; ++i) {
      const double x = 0.5 * i, y = -4 + j;
      road.grid.z_m[j * nx + i] = (y > 0 && y < 2) ? 0.03 * std::sin(M_PI * x / 20) * std::sin(M_PI * x / 20) : 0.0;
    }
  ManoeuvreSpec m;
  m.kind = ManoeuvreKind::bump_crossing;
  m.start.speed = 8;
  test::VehicleSim sim(build_vehicle(p, road), m.start);
  sim.check_residuals = true;
  DriverState d;
  double max_roll = 0;
  for (int k = 0; k < 2500; ++k) {
    ASSERT_TRUE(sim.step(manoeuvre_inputs(m, sim.v, sim.out, d, (k + 1) * 0.002, 0.002))) << k;
    max_roll = std::max(max_roll, std::abs(sim.out.roll));
  }
  std::printf("grid road: max roll %.4f rad, Newton mean %.2f max %d, max |Phi| %.1e\n", max_roll,
              sim.stats.mean_iterations(), sim.stats.max_iterations, sim.stats.max_phi);
  EXPECT_GT(max_roll, 0.003);  // 3 cm under one side over 1.58 m of track: ~0.01 rad at the wheels
  EXPECT_LT(sim.stats.max_phi, 1e-7);
  EXPECT_GT(sim.out.position.x(), 30);
}
