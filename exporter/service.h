// SPDX-License-Identifier: Apache-2.0
// A part of the daemon that follows the config: started once with it, given
// every config a reload brings, stopped at exit. The daemon keeps its
// services in one list and runs each step as a loop over it
// (exporter/daemon.cc), so a new one is one class and one entry there.
#pragma once

#include "config/config.h"

namespace drivewatch {

class Service {
 public:
  virtual ~Service() = default;
  // Starts the service's threads or jobs with the first config.
  virtual void Start(const config::Config& config) = 0;
  // Applies a new, already validated config. Takes effect at once.
  virtual void Reconfigure(const config::Config& config) = 0;
  // Stops everything the service started; called once, at exit.
  virtual void Stop() = 0;
};

}  // namespace drivewatch
