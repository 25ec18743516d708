#include "mbobserver/runtime/daemon.hpp"

#include <chrono>
#include <system_error>

#include <sys/resource.h>

#include <iostream>
#include <thread>

#include <spdlog/spdlog.h>
#include <nlohmann/json.hpp>

#include "daemon_shared.hpp"
#include "estimator_loop.hpp"
#include "live_inputs.hpp"
#include "mbobserver/io/log_reader.hpp"
#include "mbobserver/runtime/estimate_json.hpp"
#include "mbobserver/runtime/signals.hpp"
#include "output_file.hpp"
#include "record_sink.hpp"
#include "replay_reader.hpp"
#include "step_source.hpp"

namespace mbo::runtime {
namespace {

double unix_now() { return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count(); }

// Keeps the calibration file up to date from the I/O thread: every `period_s` of wall time and
// at exit; a write that fails is logged with the path and errno, counted in the status's
// outputs.write_errors, and the next one tries again.
class CalibrationKeeper {
 public:
  CalibrationKeeper(std::optional<std::filesystem::path> path, double period_s, std::string vehicle_sha256)
      : path_(period_s > 0 ? std::move(path) : std::nullopt), period_s_(period_s), sha_(std::move(vehicle_sha256)) {}
  void tick(const std::array<Calibration, kCalibrationCount>& cal) {
    if (path_ && unix_now() - last_ >= period_s_) save(cal);
  }
  // False when the file could not be written. Nothing is written while no parameter of the
  // file's kinds is estimated (the GNSS error's Gauss-Markov states are the trip's): an empty
  // file would replace what an earlier configuration learned.
  bool save(const std::array<Calibration, kCalibrationCount>& cal) {
    if (!path_) return true;
    last_ = unix_now();
    const CalibrationFile file = calibration_of(cal, sha_, last_);
    if (file.parameters.empty()) return true;
    try {
      write_calibration_file(*path_, file);
      return true;
    } catch (const std::system_error& e) {
      ++failures_;
      last_errno_ = e.code().value();
      spdlog::error("{}", e.what());
      return false;
    }
  }
  std::uint64_t failures() const { return failures_; }
  int last_errno() const { return last_errno_; }

 private:
  std::optional<std::filesystem::path> path_;
  double period_s_;
  std::string sha_;
  double last_ = 0;
  std::uint64_t failures_ = 0;
  int last_errno_ = 0;
};

double max_rss_mb() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_maxrss / 1024.0;
}

// The parts of a status record that the publisher cannot know, from what the threads share.
void fill_status(StatusRecord& s, const DaemonShared& sh, bool replay, const LiveInputs* live, const RecordSink& sink,
                 const OutputFile* summary, std::uint64_t summary_errors, const CalibrationKeeper& keeper) {
  s.frames = sh.frames.snapshot();
  if (replay) {
    s.frames.bad_log_lines = sh.feed.bad_lines.load(std::memory_order_relaxed);
    s.frames.timestamp_backwards = sh.feed.backwards.load(std::memory_order_relaxed);
    s.frames.time_jumps = sh.feed.time_jumps.load(std::memory_order_relaxed);
    s.frames.time_shifts = sh.feed.time_shifts.load(std::memory_order_relaxed);
  }
  s.add_queue("measurements", sh.measurements.counters());
  s.add_queue("estimates", sh.estimates.counters());
  s.steps = sh.steps.load(std::memory_order_relaxed);
  s.deadline_misses = sh.misses.steps();
  s.deadline_miss_episodes.total = sh.misses.episodes();
  for (std::size_t c = 0; c < kMissCauseNames.size(); ++c)
    s.deadline_miss_episodes.by_cause[c] = sh.misses.episodes(static_cast<MissCause>(c));
  s.skipped_steps = sh.skipped_steps.load(std::memory_order_relaxed);
  s.resets = sh.observer.resets.load(std::memory_order_relaxed);
  s.observer = sh.observer.snapshot();
  if (live) live->add_can_status(s), live->add_gnss_status(s);
  s.outputs.record_bytes = sink.bytes();
  s.outputs.records_lost = sink.records_lost();
  s.outputs.write_errors = sink.write_errors() + summary_errors + keeper.failures();
  // the summary's, else the record's, else the calibration file's
  s.outputs.last_write_errno = summary && summary->error() ? summary->error()
                               : sink.last_errno()         ? sink.last_errno()
                                                           : keeper.last_errno();
  s.outputs.reopens = sink.reopens();
}

// What only the run as a whole has (after every thread has stopped).
RunSummary summarise_run(const StatusRecord& s, const DaemonShared& sh, const DaemonOptions& opt,
                         const io::LogReader* log, const RecordSink& sink, double step_s, double wall_s) {
  RunSummary r;
  r.replay = log != nullptr;
  if (log) {
    r.log = opt.replay->string();
    r.rate = rate_name(opt.rate);
    r.log_lines = log->stats().lines;
    for (std::size_t i = 0; i < log->problems().size() && i < 10; ++i)
      r.log_problems_first.push_back(log->problems()[i].message + " (line " + std::to_string(log->problems()[i].line) +
                                     ")");
  }
  r.wall_time_s = wall_s;
  r.estimator_time_s = s.steps * step_s;
  r.steps_per_s = wall_s > 0 ? s.steps / wall_s : 0;
  r.frames_per_s = wall_s > 0 ? s.frames.received / wall_s : 0;
  r.real_time_factor = wall_s > 0 ? s.steps * step_s / wall_s : 0;
  r.frame_to_step_clock = log && opt.rate.max ? "log" : "wall";
  for (std::size_t i = 0; i < std::min<std::uint64_t>(sh.misses.episodes(), DeadlineMisses::kKeptStarts); ++i)
    r.deadline_miss_episodes_first_at_monotonic_s.push_back(sh.misses.episode_start_ns(i) * 1e-9);
  r.valid_fraction = s.steps ? double(s.valid_steps) / s.steps : 0;
  r.records_written = sink.records_written();
  r.max_rss_mb = max_rss_mb();
  return r;
}

}  // namespace

int run_daemon(const DaemonConfig& cfg, const DaemonOptions& opt) {
  const double dt = cfg.runtime.step_s;
  boost::asio::io_context io;
  DaemonShared shared(cfg.runtime);
  Notifier notifier;

  // Inputs: a log read by the reader thread (replay), or the live sources on the I/O thread.
  std::unique_ptr<io::LogReader> log;
  std::unique_ptr<LogTimeline> timeline;
  if (opt.replay) {
    log = std::make_unique<io::LogReader>(*opt.replay);  // ConfigError if unreadable
    timeline = std::make_unique<LogTimeline>(*log, TimelineOptions{.max_gap_s = cfg.runtime.max_time_gap_s,
                                                                   .max_disorder_s = cfg.runtime.max_time_disorder_s});
  }
  FrameDecoder decoder(*cfg.signals, shared.measurements, shared.frames, log ? &shared.feed : nullptr);
  std::unique_ptr<LiveInputs> live;
  if (!log) live = std::make_unique<LiveInputs>(io, cfg, decoder);

  // Outputs, on the I/O thread: the --record file, UDP/JSON datagrams and status, and the
  // summary file, opened now so that a path that cannot be written stops the daemon before it
  // runs (exit 2). A write that fails later is an error: a replay stops and exits 1, a live
  // daemon shows it in its status (outputs) and exits 1 when it stops.
  std::unique_ptr<OutputFile> summary;
  if (opt.summary_json) summary = std::make_unique<OutputFile>(*opt.summary_json, "summary");
  UdpPublisher publisher(io, cfg.publish, dt, JsonOptions{});
  bool write_failed = false;
  RecordSink sink(publisher, opt.record, opt.record_max_bytes, log != nullptr, [&](const std::string& message) {
    write_failed = true;
    if (log)
      shared.stop.store(true);
    else
      notifier.status("output failure: " + message);
  });
  std::uint64_t summary_errors = 0;
  auto summary_failed = [&] {
    ++summary_errors;
    write_failed = true;
    spdlog::error("{}; counted (exit code 1)", summary->error_message());
  };

  // The estimator and its steps, started from what it learned before (the calibration file).
  est::VehicleObserver observer(cfg.vehicle, cfg.observer, dt);
  for (const auto& line : cfg.notices) spdlog::info("{}", line);  // once every input and output is open
  const auto calibration_path = opt.calibration ? opt.calibration : cfg.calibration.file;
  if (calibration_path && !observer.sensor_parameters().empty())
    spdlog::info("{}: {}", calibration_path->string(),
                 restore_calibration(read_calibration_file(*calibration_path), cfg.vehicle_sha256, unix_now(),
                                     cfg.calibration, observer));
  CalibrationKeeper keeper(calibration_path, observer.sensor_parameters().empty() ? 0.0 : cfg.calibration.save_period_s,
                           cfg.vehicle_sha256);
  MeasurementInbox inbox(shared.measurements, observer);
  std::unique_ptr<StepSource> steps;
  std::optional<io::CanFrame> first_frame;
  ReplayPacer pacer(opt.rate);
  if (log) {
    io::CanFrame f;
    bool jumped = false;
    if (timeline->next(f, jumped)) first_frame = f;  // the first frame fixes the estimator's time origin
    const double t_first = first_frame ? first_frame->t : 0;
    pacer.start(t_first);
    steps = std::make_unique<ReplayStepSource>(dt, t_first, pacer, shared.feed, inbox, shared.stop);
  } else {
    steps = std::make_unique<LiveStepSource>(dt);
  }

  StopSignals signals(
      io, [&](int) { shared.stop.store(true); },
      [&] {
        // logrotate: the files it moved away are closed, new ones opened at the same paths
        sink.reopen();
        if (summary && !summary->reopen()) summary_failed();
      });
  std::unique_ptr<WatchdogFeeder> feeder;
  if (cfg.runtime.watchdog && Notifier::watchdog_interval().count() > 0) {
    feeder = std::make_unique<WatchdogFeeder>(io, notifier, shared.progress, Notifier::watchdog_interval());
    feeder->start();
  }
  if (live) live->start();
  // The I/O thread drains the estimate queue itself, so every record reaches the --record
  // file before the publisher decimates; the publisher runs its status timer.
  publisher.start_status([&](StatusRecord& s) {
    fill_status(s, shared, log != nullptr, live.get(), sink, summary.get(), summary_errors, keeper);
    keeper.tick(s.calibration);  // on the I/O thread, once a status period at most
  });
  shared.estimates_ready.async_watch(io, [&] { sink.drain(shared.estimates); });
  notifier.ready();
  notifier.status(log ? "replaying " + opt.replay->string() : "running");

  std::thread reader;
  if (log)
    reader = std::thread(run_reader, std::ref(*timeline), std::cref(*log), first_frame, pacer, std::ref(decoder),
                         std::ref(shared.feed), std::cref(shared.stop),
                         ReaderOptions{.lead_s = dt, .realtime_priority = cfg.runtime.realtime_priority});

  const EstimatorOptions est_opt{.step_s = dt,
                                 .realtime_priority = cfg.runtime.realtime_priority,
                                 .lock_memory = cfg.runtime.lock_memory,
                                 .stop_after_s = opt.stop_after_s,
                                 .progress = opt.progress};
  std::thread estimator([&] {
    run_estimator(*steps, inbox, observer, shared, est_opt);
    // The I/O thread finishes: the last records, the final status, then it returns.
    boost::asio::post(io, [&] {
      sink.drain(shared.estimates);
      sink.close();  // before the final status, which gives its size
      publisher.stop();
      shared.estimates_ready.cancel();
      signals.request_stop(0);
      if (feeder) feeder->stop();
      if (live) live->stop();
      io.stop();
    });
  });

  const std::int64_t wall_start = monotonic_ns();
  io.run();
  shared.stop.store(true);
  estimator.join();
  if (reader.joinable()) reader.join();
  notifier.stopping();
  const double wall_s = (monotonic_ns() - wall_start) * 1e-9;

  // The summary: the final status record, written as the status datagrams are, and the run.
  StatusRecord status = publisher.make_status();
  const bool calibration_saved = keeper.save(status.calibration);
  if (!calibration_saved) {  // after make_status: the summary counts it, as the most recent failure
    ++status.outputs.write_errors;
    status.outputs.last_write_errno = keeper.last_errno();
  }
  const RunSummary run = summarise_run(status, shared, opt, log.get(), sink, dt, wall_s);
  const std::string text = nlohmann::ordered_json::parse(summary_json(status, run)).dump(2);
  if (summary && !(summary->replace(text + "\n") && summary->close())) summary_failed();
  std::cout << text << std::endl;
  if (!std::cout) {
    spdlog::error("stdout: writing the summary failed; exit code 1");
    write_failed = true;
  }
  // A calibration that could not be written is lost learning: a replay says so by its exit code.
  if (!calibration_saved && log) write_failed = true;
  return write_failed ? 1 : 0;
}

}  // namespace mbo::runtime
