// mbobserver-sim SCENARIO.json --candump OUT.log --truth OUT.csv [--config FILE] [--seed N]
// Drives the truth vehicle of a vehicle scenario through its manoeuvre and writes what the
// car's sensors would put on the bus (encoded with the DBC and signal map of the daemon's
// configuration, so the daemon decodes them back), plus the ground truth.
#include <cstdio>
#include <fstream>
#include <iostream>

#include "mbobserver/core/program.hpp"
#include "mbobserver/experiment/vehicle_experiment.hpp"
#include "mbobserver/experiment/vehicle_quantities.hpp"
#include "mbobserver/io/candump.hpp"
#include "mbobserver/io/signal_map.hpp"

int main(int argc, char** argv) {
  CLI::App app{"Simulate a drive: CAN log of the sensors and the ground truth", "mbobserver-sim"};
  mbo::CommonOptions common;
  mbo::add_common_options(app, common);
  std::string scenario, candump, truth, config = std::string(MBO_DEFAULT_CONFIG), interface = "can0";
  std::uint64_t seed = 0;
  double epoch = 1700000000.0;
  app.add_option("scenario", scenario, "vehicle scenario (JSON, \"kind\": \"vehicle\")")->required();
  app.add_option("--candump", candump, "write the bus as a candump -l log")->required();
  app.add_option("--truth", truth, "write the ground truth as CSV")->required();
  app.add_option("--config", config, "daemon configuration whose \"can\" section (DBC, signals) encodes the frames")
      ->capture_default_str();
  app.add_option("--seed", seed, "noise seed (default: the scenario's)");
  app.add_option("--epoch", epoch, "UNIX time of the scenario's t = 0 in the log")->capture_default_str();
  app.add_option("--interface", interface, "interface name written in the log")->capture_default_str();
  return mbo::run_program(app, argc, argv, common, [&] {
    const auto nominal = mbo::exp::load_vehicle_scenario(scenario);
    if (nominal.sensors.gnss_stamp_fix_time)
      throw mbo::ConfigError(scenario +
                             ": /sensors/gnss/stamp: \"fix_time\" cannot go into a CAN log, whose stamps are the "
                             "frames' arrivals (it is for mbobserver-experiment)");
    auto root = mbo::JsonReader::from_file(config);
    auto map = mbo::io::SignalMap::from_config(root.at("can"));
    if (seed == 0) seed = nominal.seed;
    // the car and sensors this seed draws (the scenario's "perturb" block)
    const auto sc = mbo::exp::realise_scenario(nominal, seed);
    std::FILE* log = std::fopen(candump.c_str(), "wb");
    if (!log) throw mbo::ConfigError(candump + ": cannot write");
    std::ofstream csv(truth);
    if (!csv) throw mbo::ConfigError(truth + ": cannot write");
    csv.precision(10);
    // The truth CSV's columns: t, then the vehicle quantities (vehicle_quantities.hpp).
    std::vector<const mbo::exp::VehicleQuantity*> columns;
    for (const auto& q : mbo::exp::vehicle_quantities())
      if (q.in_truth_csv) columns.push_back(&q);
    csv << "t";
    for (const auto* q : columns) csv << "," << q->name;
    csv << "\n";

    mbo::io::CandumpWriter writer(log);
    mbo::exp::TruthDrive drive(sc, seed);
    std::array<double, mbo::kChannelCount> values{};
    std::array<bool, mbo::kChannelCount> fresh{};
    std::vector<mbo::Measurement> meas;
    std::uint64_t frames = 0, clamped = 0;
    const auto& tx = map.tx_frames();
    mbo::io::CanFrame frame;
    while (!drive.done()) {
      meas.clear();
      drive.advance(meas);
      // The samples arrive in the order of their receive stamps; those with one stamp left the
      // sensors together. A message goes on the bus, stamped so, when one of its signals has a
      // new sample.
      for (std::size_t first = 0; first < meas.size();) {
        std::size_t last = first;
        fresh.fill(false);
        for (; last < meas.size() && meas[last].t == meas[first].t; ++last) {
          values[static_cast<std::size_t>(meas[last].channel)] = meas[last].value;
          fresh[static_cast<std::size_t>(meas[last].channel)] = true;
        }
        const double t = epoch + meas[first].t;
        for (const auto& f : tx) {
          bool any = false;
          for (auto mi : f.mappings) any = any || fresh[static_cast<std::size_t>(map.mappings()[mi].channel)];
          if (!any) continue;
          if (!map.encode(f, values, t, frame)) ++clamped;
          writer.write(frame, f.bus >= 0 ? std::string_view(map.interfaces()[static_cast<std::size_t>(f.bus)].name)
                                         : std::string_view(interface));
          ++frames;
        }
        first = last;
      }
      char tbuf[32];
      std::snprintf(tbuf, sizeof tbuf, "%.6f", epoch + drive.t());  // log time: microseconds, as candump
      csv << tbuf;
      for (const auto* q : columns) csv << "," << q->value(*sc.truth, drive.state(), drive.outputs());
      csv << "\n";
    }
    std::fclose(log);
    std::cerr << "mbobserver-sim: " << frames << " frames over " << sc.duration << " s to " << candump
              << (clamped ? " (" + std::to_string(clamped) + " frames with a value clamped to its signal's range)" : "")
              << ", truth to " << truth << "\n";
    return 0;
  });
}
