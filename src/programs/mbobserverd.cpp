// mbobserverd --config FILE [--replay LOG [--rate realtime|max|<factor>]] [--record OUT.jsonl]
//             [--summary-json OUT.json] [--check-config]
// The daemon (docs/interfaces.md): live from SocketCAN (+ NMEA serial), or replaying a candump /
// Vector ASC log through the same pipeline.
#include <iostream>

#include "mbobserver/core/log.hpp"
#include "mbobserver/core/program.hpp"
#include "mbobserver/runtime/daemon.hpp"

int main(int argc, char** argv) {
  CLI::App app{"mbobserver daemon: multibody vehicle observer publishing virtual sensors over UDP/JSON", "mbobserverd"};
  mbo::CommonOptions common;
  mbo::add_common_options(app, common);
  std::string config, replay, rate = "realtime", record, summary, calibration;
  bool check = false, no_progress = false;
  double stop_after = 0;
  app.add_option("--config", config,
                 "configuration file (the repository ships config/mbobserver.json, the bundled drive's car)")
      ->required();
  app.add_option("--replay", replay, "replay a candump -l or Vector ASC log instead of the live bus");
  app.add_option("--rate", rate, "replay pace: realtime, max or a factor (2 = twice real time)")->capture_default_str();
  app.add_option("--record", record, "write every estimate as a JSON line (byte-identical for the same log)");
  app.add_option("--summary-json", summary, "also write the final summary to this file");
  app.add_flag("--check-config", check, "validate the configuration and exit");
  app.add_flag("--no-progress", no_progress, "no progress line on stderr during a replay");
  app.add_option("--stop-after", stop_after, "stop after this many seconds of estimator time");
  app.add_option("--calibration", calibration,
                 "the calibration state file: read at start, written periodically and at exit (default: the "
                 "configuration's calibration.file, or $STATE_DIRECTORY/calibration.json under systemd)");
  return mbo::run_program(app, argc, argv, common, [&] {
    auto cfg = mbo::runtime::load_daemon_config(config);
    // --log-level wins over the file's "log_level"
    if (app.count("--log-level") == 0) mbo::setup_logging("mbobserverd", cfg.log_level);
    if (check) {
      std::cout << config << ": configuration OK (vehicle " << cfg.vehicle->params.name << ", " << cfg.vehicle->model.nq
                << " coordinates, " << cfg.signals->mappings().size() << " mapped signals, "
                << cfg.observer.settings.observed.size() << " observed coordinates, " << cfg.observer.filter_type
                << ")\n";
      return 0;
    }
    mbo::runtime::DaemonOptions opt;
    if (!replay.empty()) opt.replay = replay;
    if (!record.empty()) opt.record = record;
    if (!summary.empty()) opt.summary_json = summary;
    opt.rate = mbo::runtime::parse_replay_rate(rate);
    opt.progress = !no_progress;
    opt.stop_after_s = stop_after;
    if (!calibration.empty()) opt.calibration = calibration;
    return mbo::runtime::run_daemon(cfg, opt);
  });
}
