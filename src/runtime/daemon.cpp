#include "mbobserver/runtime/daemon.hpp"

#include <sys/resource.h>

#include <atomic>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <limits>
#include <thread>

#include <spdlog/spdlog.h>
#include <nlohmann/json.hpp>

#include "mbobserver/io/log_reader.hpp"
#include "mbobserver/io/socketcan_source.hpp"
#include "mbobserver/runtime/asio.hpp"
#include "mbobserver/runtime/estimate_json.hpp"
#include "mbobserver/runtime/event_wakeup.hpp"
#include "mbobserver/runtime/latency_histogram.hpp"
#include "mbobserver/runtime/notify.hpp"
#include "mbobserver/runtime/realtime.hpp"
#include "mbobserver/runtime/signals.hpp"
#include "mbobserver/runtime/spsc_queue.hpp"
#include "mbobserver/runtime/udp_publisher.hpp"

namespace mbo::runtime {
namespace {

using nlohmann::json;

// A measurement with the monotonic time at which the I/O side handed it over, and the time
// that decides which step takes it: its own, except in a replay whose log time goes backwards,
// where it is the latest log time read so far (the queue's order times never decrease, so a
// step never depends on how far ahead the reader is; the observer still sees the sample's own
// time and counts it stale).
struct TimedMeasurement {
  Measurement m;
  std::int64_t rx_ns = 0;
  double order_t = 0;
};

// Frame counters written by the I/O side, read by the status and the summary.
struct AtomicFrameCounters {
  std::atomic<std::uint64_t> received{0}, decoded{0}, unknown{0}, unmapped{0}, rejected{0}, error_frames{0};
  FrameCounters snapshot() const {
    FrameCounters f;
    f.received = received.load(std::memory_order_relaxed);
    f.decoded = decoded.load(std::memory_order_relaxed);
    f.unknown = unknown.load(std::memory_order_relaxed);
    f.rejected = rejected.load(std::memory_order_relaxed);
    return f;
  }
};

// Wakes the replay's estimator when it sleeps on the reader (a counter, so that a wake-up is
// never lost between its check and its wait; notify costs no system call without a waiter).
void signal_reader_event(std::atomic<std::uint64_t>& events) {
  events.fetch_add(1, std::memory_order_release);
  events.notify_one();
}

// What the I/O side does with one frame: decode it with the DBC signal map and queue the
// measurements. Unknown ids, error frames and non-finite values are counted, never fatal.
class FrameDecoder {
 public:
  // `full_events`: replay only, signalled when the reader finds the queue full and waits.
  FrameDecoder(const io::SignalMap& map, SpscQueue<TimedMeasurement>& q, AtomicFrameCounters& c,
               std::atomic<std::uint64_t>* full_events)
      : map_(map), q_(q), c_(c), full_events_(full_events), buf_(std::max<std::size_t>(1, map.max_per_frame())) {}

  void on_frame(const io::CanFrame& f, std::int64_t rx_ns, const std::atomic<bool>* stop = nullptr,
                double order_t = std::numeric_limits<double>::quiet_NaN()) {
    c_.received.fetch_add(1, std::memory_order_relaxed);
    if (f.error) {
      c_.error_frames.fetch_add(1, std::memory_order_relaxed);
      return;
    }
    const std::size_t n = map_.decode(f, buf_);
    if (n == 0) {
      if (!map_.codec().find(f.id, f.extended))
        c_.unknown.fetch_add(1, std::memory_order_relaxed);
      else
        c_.unmapped.fetch_add(1, std::memory_order_relaxed);
      return;
    }
    c_.decoded.fetch_add(1, std::memory_order_relaxed);
    for (std::size_t i = 0; i < n; ++i) push(buf_[i], rx_ns, stop, order_t);
  }

  void push(const Measurement& m, std::int64_t rx_ns, const std::atomic<bool>* stop = nullptr,
            double order_t = std::numeric_limits<double>::quiet_NaN()) {
    if (!std::isfinite(m.value)) {
      c_.rejected.fetch_add(1, std::memory_order_relaxed);
      return;
    }
    TimedMeasurement tm{m, rx_ns, std::isnan(order_t) ? m.t : order_t};
    if (!full_events_) {
      q_.push(tm);  // live: a full queue is counted by the queue
      return;
    }
    // replay: the reader waits for the estimator instead of dropping (nothing is lost)
    if (q_.depth() >= q_.capacity()) signal_reader_event(*full_events_);
    while (q_.depth() >= q_.capacity()) {
      if (stop && stop->load(std::memory_order_relaxed)) return;
      std::this_thread::yield();
    }
    q_.push(tm);
  }

 private:
  const io::SignalMap& map_;
  SpscQueue<TimedMeasurement>& q_;
  AtomicFrameCounters& c_;
  std::atomic<std::uint64_t>* full_events_;
  std::vector<Measurement> buf_;
};

double max_rss_mb() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_maxrss / 1024.0;
}

json summary_json(const LatencySummary& s) {
  return {{"count", s.count}, {"p50", s.p50_us}, {"p99", s.p99_us}, {"p999", s.p999_us}, {"max", s.max_us}};
}

}  // namespace

int run_daemon(const DaemonConfig& cfg, const DaemonOptions& opt) {
  const bool replay = opt.replay.has_value();
  const double dt = cfg.runtime.step_s;
  boost::asio::io_context io;
  SpscQueue<TimedMeasurement> meas_q(cfg.runtime.queue_capacity);
  EstimateQueue est_q(cfg.runtime.estimate_queue_capacity);
  EventWakeup est_wake;
  AtomicFrameCounters frames;
  std::atomic<bool> stop{false};
  Notifier notifier;
  ProgressWatchdog progress;

  // Inputs: a log (replay) or the live sources.
  std::unique_ptr<io::LogReader> log;
  if (replay) log = std::make_unique<io::LogReader>(*opt.replay);  // ConfigError if unreadable
  std::atomic<std::uint64_t> reader_events{0};  // replay: the reader's wake-ups of the estimator
  FrameDecoder decoder(*cfg.signals, meas_q, frames, replay ? &reader_events : nullptr);

  std::vector<std::unique_ptr<io::SocketCanSource>> can_sources;
  std::unique_ptr<io::SerialNmeaSource> nmea;
  if (!replay) {
    std::uint8_t ch = 0;
    for (const auto& ic : cfg.signals->interfaces()) {
      auto o = io::SocketCanOptions::from(ic, ch++, cfg.signals->filter_ids());
      auto src = std::make_unique<io::SocketCanSource>(
          io, o, [&](const io::CanFrame& f) { decoder.on_frame(f, monotonic_ns()); });
      src->on_fatal = [](const std::string& why) { spdlog::error("{}", why); };
      can_sources.push_back(std::move(src));
    }
    if (cfg.gnss_serial)
      nmea = std::make_unique<io::SerialNmeaSource>(io, *cfg.gnss_serial, [&](std::span<const Measurement> ms) {
        const auto now = monotonic_ns();
        for (const auto& m : ms) decoder.push(m, now);
      });
    if (can_sources.empty() && !nmea)
      throw ConfigError(cfg.file.string() +
                        ": /can/interfaces: live operation needs at least one CAN interface or a \"gnss\" serial port");
  }

  // Output: UDP/JSON and the --record file, on the I/O thread.
  UdpPublisher publisher(io, cfg.publish, dt, JsonOptions{});
  std::ofstream record;
  std::string line;
  line.reserve(4096);
  if (opt.record) {
    record.open(*opt.record, std::ios::binary | std::ios::trunc);
    if (!record) throw ConfigError(opt.record->string() + ": cannot write");
  }
  std::uint64_t records_written = 0, valid_records = 0;
  std::array<std::uint64_t, kFaultNames.size()> fault_counts{};
  auto on_record = [&](const EstimateRecord& r) {
    if (record.is_open()) {
      write_estimate_json(r, line, JsonOptions{false});  // no wall clock: byte-identical replays
      line += '\n';
      record.write(line.data(), static_cast<std::streamsize>(line.size()));
      ++records_written;
    }
    valid_records += r.valid;
    for (std::size_t b = 0; b < kFaultNames.size(); ++b) fault_counts[b] += (r.faults >> b) & 1u;
    publisher.on_record(r);
  };
  std::atomic<std::uint64_t> steps_done{0}, skipped{0};
  DeadlineMisses misses;
  std::atomic<double> last_t{0};
  est::VehicleObserver observer(cfg.vehicle, cfg.observer, dt);
  std::atomic<std::uint64_t> resets{0};

  auto fill_status = [&](StatusRecord& s) {
    s.frames = frames.snapshot();
    if (log) {
      s.frames.bad_log_lines = log->stats().bad_lines;
      s.frames.timestamp_backwards = log->stats().backwards;
    }
    s.add_queue("measurements", meas_q.counters());
    s.add_queue("estimates", est_q.counters());
    s.steps = steps_done.load();
    s.deadline_misses = misses.steps();
    s.skipped_steps = skipped.load();
    s.resets = resets.load();
    for (const auto& src : can_sources) {
      auto h = src->health();
      CanControllerStatus c;
      set_name(c.name, "can");
      c.state = h.controller_state >= 0 && h.controller_state <= 5 ? static_cast<CanState>(h.controller_state)
                                                                   : CanState::unknown;
      c.tx_errors = h.tx_errors;
      c.rx_errors = h.rx_errors;
      c.error_frames = h.error_frames;
      c.restarts = h.bus_off_restarts;
      s.add_can(c);
    }
  };

  StopSignals signals(io, [&](int signo) {
    spdlog::info("signal {}: stopping", signo);
    stop.store(true);
  });
  std::unique_ptr<WatchdogFeeder> feeder;
  if (cfg.runtime.watchdog && Notifier::watchdog_interval().count() > 0) {
    feeder = std::make_unique<WatchdogFeeder>(io, notifier, progress, Notifier::watchdog_interval());
    feeder->start();
  }
  for (auto& s : can_sources) s->start();
  if (nmea) nmea->start();
  // The I/O thread drains the estimate queue itself, so every record reaches the --record
  // file before the publisher decimates; the publisher runs its status timer.
  publisher.start_status(fill_status);
  est_wake.async_watch(io, [&] { est_q.drain(on_record); });
  notifier.ready();
  notifier.status(replay ? "replaying " + opt.replay->string() : "running");

  // Replay reader: frames in file order, decoded, with a watermark of the order time (the log
  // time, never decreasing: TimedMeasurement) below which every frame has been read (handed
  // over, or the one read ahead). Paced replays hand each frame over at most one step before
  // the wall moment of its log time, so queue depths and latencies are those a live bus would
  // give.
  ReplayPacer pacer(opt.rate);
  std::atomic<double> watermark{-1e300}, t_last_frame{0}, read_fraction{0};
  std::atomic<bool> reader_done{false};
  double t_first = 0;
  std::thread reader;
  if (replay) {
    io::CanFrame f;
    bool have_first = false;
    // The first frame fixes the estimator's time origin.
    if (log->next(f)) {
      have_first = true;
      t_first = f.t;
    }
    double t_order = t_first;  // the order time of the frame in hand (the reader's own, below)
    pacer.start(t_first);
    reader = std::thread([&, have_first, f, t_order, rp = pacer]() mutable {
      // A paced replay stands in for the kernel delivering frames: give the reader the
      // estimator's priority, or a late reader shows as the estimator's deadline miss.
      if (!opt.rate.max && cfg.runtime.realtime_priority > 0) apply_realtime(cfg.runtime.realtime_priority, false);
      // Only the reader writes the watermark. (Defined here: the thread outlives this block.)
      auto raise_watermark = [&](double t) {
        if (t > watermark.load(std::memory_order_relaxed)) {
          watermark.store(t, std::memory_order_release);
          signal_reader_event(reader_events);
        }
      };
      block_stop_signals_in_this_thread();
      // Paced, a frame is handed over up to one step before its moment on the bus, as a
      // kernel holds it in the socket's buffer: a reader late by less than a step does not
      // hold the estimator up. Its receive time stays its moment on the bus.
      const double lead = opt.rate.max ? 0.0 : dt;
      auto stopping = [&] { return stop.load(std::memory_order_relaxed); };
      bool more = have_first;
      for (std::uint64_t n = 0; more && !stopping(); ++n) {
        if (!rp.wait_until(f.t - lead, stopping)) break;
        const std::int64_t now = monotonic_ns();
        decoder.on_frame(f, opt.rate.max ? now : std::max(now, rp.target_ns(f.t)), &stop, t_order);
        t_last_frame.store(std::max(t_last_frame.load(std::memory_order_relaxed), f.t), std::memory_order_relaxed);
        raise_watermark(t_order);
        if ((n & 1023u) == 0) read_fraction.store(log->fraction_read(), std::memory_order_relaxed);
        more = log->next(f);
        if (more) {
          t_order = std::max(t_order, f.t);
          // Every frame before the one now in hand has been handed over: the steps before its
          // time need not wait for its moment.
          raise_watermark(std::nextafter(t_order, -std::numeric_limits<double>::infinity()));
        }
      }
      read_fraction.store(1.0, std::memory_order_relaxed);
      reader_done.store(true, std::memory_order_release);
      raise_watermark(std::numeric_limits<double>::infinity());  // end of the log (or stop)
      signal_reader_event(reader_events);
    });
  }

  // Estimator thread.
  std::thread estimator([&] {
    block_stop_signals_in_this_thread();
    apply_realtime(cfg.runtime.realtime_priority, cfg.runtime.lock_memory);
    prefault_stack();
    FixedStepClock clock(std::chrono::nanoseconds(static_cast<std::int64_t>(std::llround(dt * 1e9))));
    const double wall0 = wall_clock_s();
    const std::int64_t mono0 = monotonic_ns();
    if (!replay) clock.start();
    TimedMeasurement tm;
    bool have_pending = false;
    std::int64_t newest_rx = 0;
    double newest_t = 0;
    const double t0 = replay ? t_first : wall0;
    const auto progress_every = static_cast<std::uint64_t>(std::max(1.0, 2.0 / dt));
    double previous_compute_s = 0;
    // Hands the measurements received up to step time t to the observer (the latest of each
    // channel wins); stops at the first one of a later step.
    auto drain_until = [&](double t) {
      for (;;) {
        if (!have_pending) {
          if (!meas_q.pop(tm)) break;
          have_pending = true;
        }
        if (tm.order_t > t + kSameInstant_s) break;  // belongs to a later step
        observer.push(tm.m);
        newest_rx = std::max(newest_rx, tm.rx_ns);
        newest_t = std::max(newest_t, tm.m.t);
        have_pending = false;
      }
    };
    // Replay: the first step is at the first frame's time, so a sample is fused at the step
    // of its own timestamp (as the experiments do); live: the clock's first deadline.
    for (std::uint64_t k = replay ? 0 : 1;; ++k) {
      if (stop.load(std::memory_order_relaxed)) break;
      double t;
      std::int64_t step_start;
      newest_rx = 0;
      newest_t = -1e300;
      if (replay) {
        t = t0 + k * dt;
        if (!pacer.wait_until(t, [&] { return stop.load(std::memory_order_relaxed); })) break;
        const bool woke_in_time = pacer.behind_s(t) <= dt;
        // Every frame up to t must have been read before the step (deterministic replay); the
        // reader raises the watermark past t once it has read the first frame after t, which
        // it does up to a step before t's wall moment (paced) or long before (max).
        // The reader blocks on a full queue, so this step's measurements are drained while
        // waiting (a step may hold more measurements than the queue). The estimator sleeps on
        // the reader's event count (C++20 atomic wait): a new watermark or a full queue.
        for (;;) {
          drain_until(t);
          const auto seen = reader_events.load(std::memory_order_acquire);
          if (watermark.load(std::memory_order_acquire) > t + kSameInstant_s || stop.load(std::memory_order_relaxed))
            break;
          if (meas_q.depth() >= meas_q.capacity()) continue;  // the reader waits for room: make it
          reader_events.wait(seen, std::memory_order_acquire);
        }
        if (stop.load(std::memory_order_relaxed)) break;  // not a step with part of its samples
        if (reader_done.load(std::memory_order_acquire) && meas_q.depth() == 0 && !have_pending &&
            t > t_last_frame.load(std::memory_order_relaxed) + dt)
          break;
        if (opt.stop_after_s > 0 && t - t0 > opt.stop_after_s) break;
        step_start = monotonic_ns();
        if (!opt.rate.max)
          misses.on_step(pacer.behind_s(t) > dt, classify_miss(previous_compute_s, dt, woke_in_time), step_start);
      } else {
        StepTick tick = clock.wait();
        step_start = monotonic_ns();
        t = wall0 + (tick.deadline_ns - mono0) * 1e-9;
        misses.on_step(tick.missed, classify_miss(previous_compute_s, dt, false), step_start);
        skipped.store(clock.counters().skipped_steps, std::memory_order_relaxed);
        if (opt.stop_after_s > 0 && t - t0 > opt.stop_after_s) break;
      }
      drain_until(t);
      EstimateRecord rec = observer.step(t);
      const std::int64_t step_end = monotonic_ns();
      rec.step_compute_us = (step_end - step_start) * 1e-3;
      previous_compute_s = (step_end - step_start) * 1e-9;
      // At --rate max the reader runs ahead of the steps, so wall time says nothing: the
      // latency is then the log time from the newest sample to the step that used it.
      if (newest_rx == 0)
        rec.frame_to_step_us = 0;
      else if (replay && opt.rate.max)
        rec.frame_to_step_us = std::max(0.0, t - newest_t) * 1e6;
      else
        rec.frame_to_step_us = std::max<std::int64_t>(0, step_start - newest_rx) * 1e-3;
      rec.step_end_mono_ns = step_end;
      rec.t_wall = wall_clock_s();
      // Replay: wait for the I/O thread rather than drop a record (--record holds every step
      // at any speed); live never waits, a full queue is counted.
      if (replay)
        while (est_q.depth() >= est_q.capacity() && !stop.load(std::memory_order_relaxed)) std::this_thread::yield();
      hand_over(est_q, est_wake, rec);
      progress.kick();
      steps_done.fetch_add(1, std::memory_order_relaxed);
      last_t.store(t, std::memory_order_relaxed);
      resets.store(observer.counters().resets, std::memory_order_relaxed);
      if (replay && opt.progress && k % progress_every == 0) {
        // the reader is at most a queue ahead of the steps: its share of the file is the progress
        const double done = read_fraction.load(std::memory_order_relaxed);
        const double el = (monotonic_ns() - mono0) * 1e-9;
        if (done > 0)
          std::fprintf(stderr, "\rreplay %5.1f%%  log t=%.1f s  ETA %.0f s   ", 100 * done, t - t0,
                       el * (1 - done) / done);
      }
    }
    if (replay && opt.progress) std::fprintf(stderr, "\n");
    // let the I/O thread finish: drain, final status, exit
    boost::asio::post(io, [&] {
      est_q.drain(on_record);
      publisher.stop();
      est_wake.cancel();
      signals.request_stop(0);
      if (feeder) feeder->stop();
      for (auto& s : can_sources) s->stop();
      if (nmea) nmea->stop();
      io.stop();
    });
  });

  const std::int64_t wall_start = monotonic_ns();
  io.run();
  stop.store(true);
  estimator.join();
  if (reader.joinable()) reader.join();
  notifier.stopping();
  const double wall_s = (monotonic_ns() - wall_start) * 1e-9;

  // Summary
  json s;
  auto f = frames.snapshot();
  s["mode"] = replay ? "replay" : "live";
  if (replay) {
    s["log"] = opt.replay->string();
    s["rate"] = rate_name(opt.rate);
    s["log_lines"] = log->stats().lines;
    s["bad_log_lines"] = log->stats().bad_lines;
    s["timestamp_backwards"] = log->stats().backwards;
    json probs = json::array();
    for (std::size_t i = 0; i < log->problems().size() && i < 10; ++i)
      probs.push_back(log->problems()[i].message + " (line " + std::to_string(log->problems()[i].line) + ")");
    s["log_problems_first"] = probs;
  }
  s["frames"] = {{"received", f.received},        {"decoded", f.decoded},
                 {"unknown_id", f.unknown},       {"known_unmapped", frames.unmapped.load()},
                 {"rejected_values", f.rejected}, {"error_frames", frames.error_frames.load()}};
  const auto steps = steps_done.load();
  s["steps"] = steps;
  s["estimator_time_s"] = steps * dt;
  s["wall_time_s"] = wall_s;
  s["throughput"] = {{"steps_per_s", wall_s > 0 ? steps / wall_s : 0},
                     {"frames_per_s", wall_s > 0 ? f.received / wall_s : 0},
                     {"real_time_factor", wall_s > 0 ? steps * dt / wall_s : 0}};
  s["deadline_misses"] = misses.steps();
  s["deadline_miss_episodes"] = {{"total", misses.episodes()}};
  for (std::size_t c = 0; c < kMissCauseNames.size(); ++c)
    s["deadline_miss_episodes"][std::string(kMissCauseNames[c])] = misses.episodes(static_cast<MissCause>(c));
  s["deadline_miss_episodes"]["first_at_monotonic_s"] = json::array();
  for (std::size_t i = 0; i < std::min<std::uint64_t>(misses.episodes(), DeadlineMisses::kKeptStarts); ++i)
    s["deadline_miss_episodes"]["first_at_monotonic_s"].push_back(misses.episode_start_ns(i) * 1e-9);
  s["queues"] = {
      {"measurements",
       {{"overflows", meas_q.overflows()}, {"high_water", meas_q.high_water()}, {"capacity", meas_q.capacity()}}},
      {"estimates",
       {{"overflows", est_q.overflows()}, {"high_water", est_q.high_water()}, {"capacity", est_q.capacity()}}}};
  s["latency_us"]["frame_to_step_clock"] = replay && opt.rate.max ? "log" : "wall";
  s["latency_us"].update(json{{"frame_to_step", summary_json(publisher.frame_to_step().summary())},
                              {"step_compute", summary_json(publisher.step_compute().summary())},
                              {"step_to_send", summary_json(publisher.step_to_send().summary())}});
  const auto& oc = observer.counters();
  s["observer"] = {{"resets", oc.resets},
                   {"model_step_failures", oc.model_step_failures},
                   {"correction_failures", oc.correction_failures},
                   {"stale_samples", oc.samples_stale},
                   {"invalid_samples", oc.samples_invalid},
                   {"valid_fraction", steps ? double(valid_records) / steps : 0}};
  for (std::size_t b = 0; b < kFaultNames.size(); ++b) s["faults_steps"][std::string(kFaultNames[b])] = fault_counts[b];
  const auto& rec = observer.estimate();
  for (std::size_t k = 0; k < kSensorKindCount; ++k)
    s["sensors"][std::string(kSensorKindNames[k])] = {{"fused", rec.sensors[k].fused},
                                                      {"rejected", rec.sensors[k].rejected},
                                                      {"timed_out", rec.sensors[k].timed_out}};
  const auto& pc = publisher.counters();
  s["publisher"] = {{"estimates_sent", pc.estimates_sent},
                    {"status_sent", pc.status_sent},
                    {"send_errors", pc.send_errors},
                    {"decimated", pc.decimated}};
  s["records_written"] = records_written;
  s["max_rss_mb"] = max_rss_mb();
  if (opt.summary_json) {
    std::ofstream out(*opt.summary_json);
    out << s.dump(2) << "\n";
  }
  std::cout << s.dump(2) << std::endl;
  return 0;
}

}  // namespace mbo::runtime
