// mbobserver-listen's pure parts: the --watch screen's lines from crafted datagrams (the real
// serialiser's output of the shared sample records) and the --csv flattening.
#include <sstream>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "mbobserver/runtime/estimate_json.hpp"
#include "mbobserver/runtime/listen_csv.hpp"
#include "mbobserver/runtime/listen_view.hpp"
#include "sample_records.hpp"

using namespace mbo::runtime;
using json = nlohmann::ordered_json;
using ::testing::ContainsRegex;
using ::testing::HasSubstr;
using ::testing::Not;

namespace {

std::string screen(const std::vector<std::string>& lines) {
  std::string s;
  for (const auto& l : lines) s += l + "\n";
  return s;
}

// The first line holding `label` (the label is the row's start after its indentation).
std::string row(const std::vector<std::string>& lines, const std::string& label) {
  for (const auto& l : lines)
    if (l.rfind(" " + label, 0) == 0) return l;
  return "(no row " + label + ")";
}

struct Datagrams {
  json estimate, status;
  Datagrams() {
    mbo::EstimateRecord r = mbo::test::sample_estimate();
    r.std_tyre_fy = {12.5, 13.25, 9.125, 8};
    r.std_tyre_fz = {-1, -1, -1, -1};  // not available
    r.calibration[2] = {.estimated = true, .converged = true, .value = 0.0012, .std = 0.0002};
    r.validity.heading = false;
    estimate = json::parse(estimate_json(r));
    auto& vel = estimate["health"]["sensors"]["gnss_vel"];
    vel["age_ms"] = 612.5;
    vel["timed_out"] = true;
    auto& course = estimate["health"]["sensors"]["gnss_course"];
    course["age_ms"] = 2.5;
    course["timed_out"] = false;
    course["consistent"] = false;
    status = json::parse(status_json(mbo::test::sample_status()));
  }
};

}  // namespace

TEST(ListenView, WaitsForTheFirstDatagram) {
  WatchInput in;
  in.port = 47800;
  const auto lines = render_watch(in);
  EXPECT_THAT(screen(lines), HasSubstr("\nwaiting for datagrams on port 47800\n"));
  EXPECT_THAT(screen(lines), Not(HasSubstr("STATE")));
}

TEST(ListenView, ShowsValuesWithTheirSigmaAndMarksInvalidOutputs) {
  const Datagrams d;
  WatchInput in;
  in.port = 5;
  in.estimate = &d.estimate;
  in.status = &d.status;
  in.estimate_age_s = 0.25;
  in.status_age_s = 0.5;
  in.estimates = 7;
  in.statuses = 1;
  const auto lines = render_watch(in);
  const std::string s = screen(lines);
  EXPECT_THAT(s, HasSubstr("\nlive\n"));
  EXPECT_THAT(s, Not(HasSubstr("STALE")));
  EXPECT_THAT(s, HasSubstr("estimates 7   status 1"));
  EXPECT_THAT(s, HasSubstr("ESTIMATE  seq 1234   t 12.345 s   received 0.2 s ago   mbobserver.estimate/2"));
  // sample: valid false, every group valid but the virtual sensors; heading made invalid here.
  EXPECT_THAT(s, HasSubstr("valid NO    position ok  heading INVALID!  velocity ok  attitude ok  "
                           "virtual_sensors INVALID!"));
  EXPECT_THAT(s, HasSubstr("faults reset gnss_timeout   resets 2"));
  // value, "+-", 1-sigma; '!' only where the group is not valid.
  EXPECT_THAT(row(lines, "x "), ContainsRegex("^ x +m +101\\.250 \\+- +0\\.500 +vx +m/s +19\\.900 \\+- +0\\.050  $"));
  EXPECT_THAT(row(lines, "yaw "), ContainsRegex("^ yaw +deg +5\\.730 \\+- +0\\.573 !"));  // 0.1 rad, 0.01 rad
  // The forces on their own flag, set in the sample; the loads' not.
  EXPECT_THAT(row(lines, "tyre Fy"), ContainsRegex("^ tyre Fy +N +1500\\.0 \\+- +12\\.5 +1600\\.0 \\+- +13\\.2 "
                                                   "+1200\\.0 \\+- +9\\.1 +1100\\.0 \\+- +8\\.0  $"));
  EXPECT_THAT(s, HasSubstr("tyre_forces ok"));
  // No sigma published (-1 by default): the value alone.
  EXPECT_THAT(row(lines, "tyre Fz"), ContainsRegex("^ tyre Fz +N +4100\\.0 +! +3900\\.0 +!"));
  EXPECT_THAT(row(lines, "slip ratio"), HasSubstr("!"));  // on virtual_sensors, not set
  EXPECT_THAT(row(lines, "sideslip"), ContainsRegex("sideslip +deg +-0\\.860 \\+- +0\\.200 !  friction +1 +0\\.930 "
                                                    "\\+- +0\\.010 !"));
  EXPECT_THAT(row(lines, "gnss_pos"), ContainsRegex("^ gnss_pos +20\\.5 +100 +3 +0\\.30 .* ok$"));
  EXPECT_THAT(row(lines, "wheels"), ContainsRegex("^ wheels +never +0 +0 .* never received$"));
  EXPECT_THAT(row(lines, "gnss_vel"), ContainsRegex("^ gnss_vel +612\\.5 .* TIMED OUT$"));
  EXPECT_THAT(row(lines, "gnss_course"), ContainsRegex("^ gnss_course +2\\.5 .* INCONSISTENT$"));
  EXPECT_THAT(row(lines, "gyro_bias_z"), ContainsRegex("^ gyro_bias_z +0\\.0012 +0\\.0002 +yes$"));
  EXPECT_THAT(s, HasSubstr("DAEMON  status seq 9   received 0.5 s ago   uptime 12.2 s   steps 5000"));
  EXPECT_THAT(s, HasSubstr(" deadline misses 1   skipped steps 0"));
  EXPECT_THAT(s, HasSubstr(" frames received 8000  decoded 7990  decode errors 4  unknown 3"));
  EXPECT_THAT(s, HasSubstr("measurements 12/8192 (high 40, overflows 5)"));
  EXPECT_THAT(row(lines, " frame_to_step"),
              ContainsRegex("frame_to_step +5000 +700\\.0 +1900\\.0 +2100\\.0 +2500\\.0$"));
  for (const auto& l : lines) EXPECT_LE(l.size(), 104u) << l;
}

TEST(ListenView, SaysStaleAfterASecondWithoutDatagrams) {
  const Datagrams d;
  WatchInput in;
  in.estimate = &d.estimate;
  in.estimate_age_s = 2.5;
  const std::string s = screen(render_watch(in));
  EXPECT_THAT(s, HasSubstr("STALE: no datagram for 2.5 s"));
  EXPECT_THAT(s, HasSubstr("DAEMON  no status datagram yet"));
  in.status = &d.status;
  in.status_age_s = 0.3;  // the newest datagram decides
  EXPECT_THAT(screen(render_watch(in)), Not(HasSubstr("STALE")));
}

TEST(ListenView, NullIsShownAsNotANumberAndEstimate1IsRead) {
  json e = Datagrams().estimate;
  e["schema"] = "mbobserver.estimate/1";
  e["state"]["x"] = nullptr;
  e["virtual"]["wheel_angle"] = e["virtual"]["wheel_spin_angle"];
  e["virtual"].erase("wheel_spin_angle");
  e["virtual"]["wheel_angle"][0] = 3.25;
  WatchInput in;
  in.estimate = &e;
  const auto lines = render_watch(in);
  EXPECT_THAT(row(lines, "x "), ContainsRegex("^ x +m +-- \\+- +0\\.500"));
  EXPECT_THAT(row(lines, "spin angle"), ContainsRegex("^ spin angle +rad +3\\.25 "));
}

TEST(ListenCsv, FlattensKeysAndWritesRoundTripCells) {
  const json doc = json::parse(R"({"schema":"s","seq":3,"t":0.1,"a":{"w":[1.5,null,-2,1e-300],"b":true},
      "f":["reset","gnss_timeout"],"e":[],"n":[1,2],"q":"x,\"y\""})");
  const CsvCells cells = flatten_for_csv(doc);
  const CsvCells expected = {{"schema", "s"},
                             {"seq", "3"},
                             {"t", "0.1"},
                             {"a.w.fl", "1.5"},
                             {"a.w.fr", ""},
                             {"a.w.rl", "-2"},
                             {"a.w.rr", "1e-300"},
                             {"a.b", "true"},
                             {"f", "reset gnss_timeout"},
                             {"e", ""},
                             {"n.0", "1"},
                             {"n.1", "2"},
                             {"q", "\"x,\"\"y\"\"\""}};
  EXPECT_EQ(cells, expected);
}

TEST(ListenCsv, KeepsTheFirstHeaderAndCountsOtherKeySets) {
  std::ostringstream out;
  CsvWriter w(out);
  w.write(json::parse(R"({"t":1,"x":0.30000000000000004})"));
  w.write(json::parse(R"({"t":2,"y":5,"x":3})"));  // y is not a column
  w.write(json::parse(R"({"x":4})"));  // t missing: empty
  w.write(json::parse(R"({"x":5,"t":6})"));  // other order, same keys
  EXPECT_EQ(out.str(), "t,x\n1,0.30000000000000004\n2,3\n,4\n6,5\n");
  EXPECT_EQ(w.rows(), 4u);
  EXPECT_EQ(w.mismatched(), 2u);
}
