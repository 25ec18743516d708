// Vehicle files: the shipped ones load and agree with their sources; files with missing or
// inconsistent data are rejected with the file and the JSON pointer of the culprit.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "mbobserver/core/json_reader.hpp"
#include "mbobserver/models/manoeuvres.hpp"
#include "mbobserver/models/vehicle.hpp"
#include "mbobserver/models/vehicle_params.hpp"
#include "vehicle_sim.hpp"

using namespace mbo;
using namespace mbo::models;
using ::testing::HasSubstr;

namespace {

nlohmann::json sedan_doc() { return load_json_file(test::vehicle_path("sedan")); }

std::string error_of(const nlohmann::json& doc) {
  try {
    vehicle_params_from_json(doc, "v.json");
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "<no error>";
}

}  // namespace

TEST(VehicleParams, ShippedVehiclesLoad) {
  for (auto name : {"sedan", "van"}) {
    VehicleParams p = load_vehicle_params(test::vehicle_path(name));
    EXPECT_EQ(p.name, name);
    EXPECT_FALSE(p.sources.empty()) << name;
    Vehicle v = build_vehicle(p);
    // 14 degrees of freedom: 73 coordinates, 59 constraints (Sinigaglia 2016 4.1.1).
    EXPECT_EQ(v.model.nq, 73) << name;
    EXPECT_EQ(v.model.nc, 59) << name;
    EXPECT_EQ(v.model.z.size(), 14u) << name;
    const std::vector<int> z{v.x,
                             v.y,
                             v.z,
                             v.yaw,
                             v.pitch,
                             v.roll,
                             v.wheels[0].travel,
                             v.wheels[1].travel,
                             v.wheels[2].travel,
                             v.wheels[3].travel,
                             v.wheels[0].spin,
                             v.wheels[1].spin,
                             v.wheels[2].spin,
                             v.wheels[3].spin};
    EXPECT_EQ(v.model.z, z) << name;
  }
}

TEST(VehicleParams, VanMatchesSeed000) {
  VehicleParams p = load_vehicle_params(test::vehicle_path("van"));
  // Macchi 2010 ch. 3.1 and Table 4.1 (unladen, no driver): 4.100 m, 1500 / 1365 kg per axle.
  EXPECT_DOUBLE_EQ(p.wheelbase(), 4.100);
  EXPECT_NEAR(p.total_mass(), 2865, 0.01);
  EXPECT_NEAR(p.static_axle_load(0) / p.gravity_mps2, 1500, 0.5);
  EXPECT_NEAR(p.static_axle_load(1) / p.gravity_mps2, 1365, 0.5);
  // Table 4.3 wheel rates.
  EXPECT_DOUBLE_EQ(p.axles[0].suspension.spring_N_per_m, 51471.54);
  EXPECT_DOUBLE_EQ(p.axles[1].suspension.spring_N_per_m, 94856.32);
  EXPECT_NEAR(*p.axles[0].suspension.preload_N, 51471.54 * 0.1406, 1e-6);
}

TEST(VehicleParams, NegativeMass) {
  auto d = sedan_doc();
  d["chassis"]["mass_kg"] = -1400;
  EXPECT_EQ(error_of(d), "v.json: /chassis/mass_kg: must be in (0, 100000], got -1400");
}

TEST(VehicleParams, NumbersBeyondAnyRoadVehicle) {
  // Every number has a physical range (docs/vehicle-format.md): finite is not enough.
  auto d = sedan_doc();
  d["chassis"]["mass_kg"] = 1e308;
  EXPECT_EQ(error_of(d), "v.json: /chassis/mass_kg: must be in (0, 100000], got 1e+308");
  d = sedan_doc();
  d["chassis"]["cg_m"][2] = 1e6;
  EXPECT_EQ(error_of(d), "v.json: /chassis/cg_m/2: must be in [-50, 50], got 1e+06");
  d = sedan_doc();
  d["axles"]["front"]["tyre"]["radius_m"] = 30;
  EXPECT_EQ(error_of(d), "v.json: /axles/front/tyre/radius_m: must be in (0, 2], got 30");
}

TEST(VehicleParams, SolverBlock) {
  auto d = sedan_doc();
  d["solver"] = {{"newton_refresh_contraction", 0.0}};
  EXPECT_EQ(vehicle_params_from_json(d, "v.json").newton_refresh_contraction, 0.0);
  EXPECT_EQ(build_vehicle(vehicle_params_from_json(d, "v.json")).model.solver.refresh_contraction, 0.0);
  EXPECT_EQ(build_vehicle(vehicle_params_from_json(sedan_doc(), "v.json")).model.solver.refresh_contraction, 0.25);
  d["solver"]["newton_refresh_contraction"] = 1.0;  // a kept tangent that need not contract
  EXPECT_EQ(error_of(d), "v.json: /solver/newton_refresh_contraction: must be in [0, 0.9], got 1");
}

TEST(VehicleParams, MissingKey) {
  auto d = sedan_doc();
  d["axles"]["rear"]["tyre"].erase("radius_m");
  EXPECT_EQ(error_of(d), "v.json: /axles/rear/tyre: missing required key \"radius_m\"");
}

TEST(VehicleParams, UnknownTyreKey) {
  auto d = sedan_doc();
  d["axles"]["front"]["tyre"]["grip"] = 1.1;
  EXPECT_EQ(error_of(d), "v.json: /axles/front/tyre/grip: unknown key \"grip\"");
  d = sedan_doc();
  d["axles"]["front"]["tyre"]["lateral"]["B"] = 10;
  EXPECT_EQ(error_of(d), "v.json: /axles/front/tyre/lateral/B: unknown key \"B\"");
}

TEST(VehicleParams, WheelInsideTheChassis) {
  auto d = sedan_doc();
  d["axles"]["rear"]["track_m"] = 0.3;
  EXPECT_THAT(error_of(d), HasSubstr("v.json: /axles/rear/track_m: the wheels are inside the chassis"));
}

TEST(VehicleParams, InconsistentGeometry) {
  auto d = sedan_doc();
  d["chassis"]["cg_m"] = {3.1, 0, 0.58};
  EXPECT_THAT(error_of(d), HasSubstr("v.json: /chassis/cg_m: the centre of gravity must lie between the axles"));
  d = sedan_doc();
  d["axles"]["front"]["x_m"] = -1.0;
  EXPECT_THAT(error_of(d), HasSubstr("v.json: /axles/front/x_m: the front axle must lie ahead of the rear axle"));
  d = sedan_doc();
  d["axles"]["front"]["x_m"] = 0.5;
  d["chassis"]["cg_m"] = {0.3, 0, 0.58};
  EXPECT_THAT(error_of(d), HasSubstr("the wheels overlap"));
}

TEST(VehicleParams, ImpossibleInertia) {
  // Macchi 2010's own chassis inertia: 2500 + 8000 < 13600.
  auto d = sedan_doc();
  d["chassis"]["inertia_kgm2"] = {2500, 8000, 13600};
  EXPECT_EQ(error_of(d),
            "v.json: /chassis/inertia_kgm2: violates the triangle inequality (no rigid body has these moments)");
}

TEST(VehicleParams, BadDamperAndTyre) {
  auto d = sedan_doc();
  d["axles"]["front"]["suspension"]["damper"]["force_N"] = {-1540, -280, 0, -120, 660};
  EXPECT_THAT(error_of(d),
              HasSubstr("v.json: /axles/front/suspension/damper/force_N: point 3 (0.1 m/s, -120 N) pushes"));
  d = sedan_doc();
  d["axles"]["front"]["suspension"]["damper"]["velocity_mps"] = {-1.0, -0.1, 0.0, 1.0};
  EXPECT_THAT(error_of(d), HasSubstr("v.json: /axles/front/suspension/damper/force_N: has 5 values for 4 points"));
  d = sedan_doc();
  d["axles"]["front"]["tyre"]["longitudinal"]["C"] = 2.4;
  EXPECT_THAT(error_of(d), HasSubstr("v.json: /axles/front/tyre/longitudinal/C: must be in (1, 2)"));
  d = sedan_doc();
  d["axles"]["front"]["tyre"]["mu"] = 0;
  EXPECT_THAT(error_of(d), HasSubstr("v.json: /axles/front/tyre/mu: must be in [0.01, 3]"));
  d = sedan_doc();
  d["axles"]["rear"]["tyre"]["radial_stiffness_N_per_m"] = 20000;
  EXPECT_THAT(error_of(d), HasSubstr("v.json: /axles/rear/tyre/radial_stiffness_N_per_m: static deflection"));
}

TEST(VehicleParams, BadRoad) {
  auto d = sedan_doc();
  d["road"] = {
      {"bumps",
       {{{"x_m", 10}, {"height_m", 0.05}, {"length_m", 0.5}}, {{"x_m", 10.3}, {"height_m", 0.05}, {"length_m", 0.5}}}}};
  EXPECT_EQ(error_of(d), "v.json: /road/bumps: bumps overlap");
  d = sedan_doc();
  d["road"] = {{"bumps", {{{"x_m", 10}, {"height_m", 0.4}, {"length_m", 0.5}}}}};
  EXPECT_THAT(error_of(d), HasSubstr("v.json: /road/bumps/0: height_m must not exceed half of length_m"));
  d = sedan_doc();
  d["road"] = nlohmann::json::parse(
      R"({"grade": 0.05, "grid": {"origin_m": [0, 0], "spacing_m": [1, 1], "nx": 2, "ny": 2, "heights_m": [0, 0, 0]}})");
  EXPECT_EQ(error_of(d), "v.json: /road/grid/heights_m: expected nx * ny = 4 heights, got 3");
}

TEST(VehicleParams, Manoeuvres) {
  Vehicle v = build_vehicle(load_vehicle_params(test::vehicle_path("sedan")));
  auto load = [&](const nlohmann::json& j) { return load_manoeuvre(JsonReader(j, "s.json", "/manoeuvre"), v); };
  ManoeuvreSpec m = load({{"type", "double_lane_change"}});
  EXPECT_NEAR(m.start.speed, 80 / 3.6, 1e-12);
  m = load({{"type", "seed003_circle"}});
  EXPECT_EQ(m.duration_s, 20);
  try {
    load({{"type", "slalom"}});
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_THAT(std::string(e.what()), HasSubstr("s.json: /manoeuvre/type: unknown value \"slalom\""));
  }
  try {
    load({{"type", "braking"}, {"speed_kmh", 100}, {"speed_mps", 20}});
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_THAT(std::string(e.what()), HasSubstr("give speed_kmh or speed_mps"));
  }
}
