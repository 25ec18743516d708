// Model files: bad files are rejected with a message naming the file, the place and the
// reason; overrides patch existing values only.
#include <fstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "mbobserver/core/json_reader.hpp"
#include "mbobserver/mb/model_json.hpp"
#include "test_models.hpp"

using namespace mbo::mb;
using ::testing::HasSubstr;

namespace {

nlohmann::json fourbar_doc() { return mbo::load_json_file(mbo::test::model_path("fourbar")); }

std::string error_of(const nlohmann::json& doc) {
  try {
    model_from_json(doc, "m.json");
  } catch (const mbo::ConfigError& e) {
    return e.what();
  }
  return "<no error>";
}

}  // namespace

TEST(ModelJson, ReferenceModelsLoad) {
  for (auto n : {"fourbar", "slider_crank", "double_pendulum", "spinning_top"}) {
    Model m = load_model(mbo::test::model_path(n));
    EXPECT_GT(m.nq, 0) << n;
    EXPECT_EQ(m.nq - m.nc, static_cast<int>(m.z.size())) << n;
  }
}

TEST(ModelJson, UnknownBodyInAForce) {
  auto d = fourbar_doc();
  d["forces"].push_back({{"type", "torque"}, {"body", "link9"}, {"torque", 1}});
  EXPECT_EQ(error_of(d), "m.json: /forces/1/body: unknown body \"link9\"");
}

TEST(ModelJson, UnknownPointInABasis) {
  auto d = fourbar_doc();
  d["bodies"]["link2"]["basis"] = {"P1->P7"};
  EXPECT_EQ(error_of(d), "m.json: /bodies/link2/basis/0: unknown point \"P7\"");
}

TEST(ModelJson, SingularGeometry) {
  auto d = fourbar_doc();
  d["bodies"]["link2"]["points"]["P2"] = {0, 0};  // zero-length basis vector
  EXPECT_THAT(error_of(d), HasSubstr("m.json: /bodies/link2: body \"link2\": singular geometry"));
}

TEST(ModelJson, VectorNotUnitLength) {
  auto d = fourbar_doc();
  d["vectors"]["X"]["at"] = {1, 0.1};
  EXPECT_THAT(error_of(d), HasSubstr("m.json: /vectors/X: unit vector \"X\" has length 1.004988, not 1"));
}

TEST(ModelJson, DegreeOfFreedomWithoutMass) {
  auto e = fourbar_doc();
  for (auto b : {"link1", "link2", "link3"}) e["bodies"][b]["mass"] = 0, e["bodies"][b]["inertia"] = 0;
  EXPECT_THAT(error_of(e), HasSubstr("independent coordinate \"theta\" moves no mass"));
}

TEST(ModelJson, UnknownKeyAndWrongType) {
  auto d = fourbar_doc();
  d["bodies"]["link1"]["masss"] = 2;
  EXPECT_EQ(error_of(d), "m.json: /bodies/link1/masss: unknown key \"masss\"");
  auto e = fourbar_doc();
  e["bodies"]["link1"]["mass"] = "two";
  EXPECT_EQ(error_of(e), "m.json: /bodies/link1/mass: expected a number, got string");
  auto f = fourbar_doc();
  f["bodies"]["link1"]["mass"] = -2;
  EXPECT_EQ(error_of(f), "m.json: /bodies/link1/mass: must be >= 0, got -2");
}

TEST(ModelJson, UnknownCoordinateAndInput) {
  auto d = fourbar_doc();
  d["independent"] = {"phi"};
  EXPECT_EQ(error_of(d), "m.json: /independent/0: unknown coordinate \"phi\"");
  auto e = fourbar_doc();
  e["forces"][0]["input"] = "motor";
  EXPECT_EQ(error_of(e), "m.json: /forces/0/input: unknown input \"motor\" (declare it in \"inputs\")");
}

TEST(ModelJson, IndependentCoordinatesMustDetermineTheMechanism) {
  auto d = fourbar_doc();
  d["independent"] = {"P1.y"};  // at theta = 90 deg, P1.y does not determine theta
  d["scalars"]["theta"]["at"] = 1.5707963267948966;
  d["points"]["P1"]["at"] = {0, 2};
  EXPECT_THAT(error_of(d), HasSubstr("singular geometry: the independent coordinates do not determine"));
  auto e = fourbar_doc();
  e["constraints"] = nlohmann::json::array();  // theta no longer tied to the crank
  EXPECT_THAT(error_of(e), HasSubstr("undetermined"));
}

TEST(ModelJson, Overrides) {
  Model m = load_model(mbo::test::model_path("fourbar"), {{"gravity", {0, -9.0}}, {"link2.mass", 5}});
  EXPECT_DOUBLE_EQ(m.gravity.y(), -9.0);
  EXPECT_DOUBLE_EQ(m.bodies[1].mass, 5);
  try {
    load_model(mbo::test::model_path("fourbar"), {{"link7.mass", 5}}, "scenario.json: /truth/overrides");
    FAIL();
  } catch (const mbo::ConfigError& e) {
    EXPECT_STREQ(e.what(),
                 "scenario.json: /truth/overrides/link7.mass: overrides \"/bodies/link7/mass\", which the "
                 "model does not have");
  }
  // Found by fuzz/fuzz_scenario: a key that is not a JSON pointer ("~" must be followed by 0
  // or 1) is a ConfigError too, not nlohmann's parse_error.
  try {
    load_model(mbo::test::model_path("fourbar"), {{"/gravity~x", 5}}, "scenario.json: /truth/overrides");
    FAIL();
  } catch (const mbo::ConfigError& e) {
    EXPECT_THAT(e.what(), ::testing::StartsWith("scenario.json: /truth/overrides//gravity~x: not a usable override ("));
  }
}
