// The estimator thread: one VehicleObserver step per step of its StepSource, on the
// measurements received up to the step's time, each record handed to the I/O thread.
#pragma once

#include "daemon_shared.hpp"
#include "measurement_inbox.hpp"
#include "step_source.hpp"

namespace mbo::runtime {

struct EstimatorOptions {
  double step_s = 0.002;
  int realtime_priority = 0;  // SCHED_FIFO priority, 0: none (apply_realtime)
  bool lock_memory = false;
  double stop_after_s = 0;  // > 0: stop after this much estimator time
  bool progress = false;  // a progress line with ETA on stderr, where the source knows its progress
};

// Runs until the step source ends or `shared.stop`; returns on the estimator thread.
void run_estimator(StepSource& steps, MeasurementInbox& inbox, est::VehicleObserver& observer, DaemonShared& shared,
                   const EstimatorOptions& options);

}  // namespace mbo::runtime
