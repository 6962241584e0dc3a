#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Installs drivewatch's dependencies on Debian 12, from Debian's own archive.
#   scripts/install-deps.sh          what building and running the daemon need
#                                    (README command 1, the Debian package)
#   scripts/install-deps.sh --tests  that plus everything the tests, the
#                                    fuzzers and the benchmarks need (command 2)
# Run as root. Idempotent: when everything is present it changes nothing and
# does not touch the network.
set -euo pipefail

# Building and running: compiler, CMake, the libraries the binary links,
# python3 for the man page generator, git for the version string, curl to
# look at /metrics, dpkg-dev for cpack's dpkg-shlibdeps.
packages=(
  cmake g++ make pkg-config git python3 curl dpkg-dev
  prometheus-cpp-dev libnvme-dev libjson-c-dev libssl-dev liburing-dev
  libtomlplusplus-dev libcpp-httplib-dev libblkid-dev
  # JSON (config/util/json*.cc): nlohmann-json, header-only, compiled in
  nlohmann-json3-dev
  # the command line: CLI11, header-only, compiled in
  libcli11-dev
  # the HTTP server: Boost.Beast/Asio (headers) and zlib for gzip
  libboost1.81-dev zlib1g-dev
  # the web config's YAML
  libyaml-dev
  # the sqlite phase (aging/phases/sqlite_phase.cc)
  libsqlite3-dev
)

# Tests only (scripts/test.sh).
test_packages=(
  ninja-build
  # every build script puts it in front of the compiler (scripts/ccache.sh):
  # the package test's tree then reuses the main build's objects
  ccache
  libgtest-dev libgmock-dev libbenchmark-dev
  # fuzzing: clang with libFuzzer and the sanitizer runtimes
  clang libclang-rt-14-dev
  # packaging tests: lintian, man
  fakeroot lintian man-db bsdextrautils
  # tests/tools/size_check.py: functions and where they end
  universal-ctags
  # a real Prometheus (and promtool), systemd-analyze, headless Chromium for
  # the retention report
  prometheus prometheus-alertmanager systemd chromium
  # tests/integration and tests/bench: loop devices, fio for the comparison
  util-linux e2fsprogs fio
  # tests/run/systemd_service_test.sh: the unit under a real systemd
  systemd-container
  # tests/bench/sqlite_vs_cli.sh: the same inserts through the sqlite3 CLI
  sqlite3
  # the pgbench phase's server and client (aging/phases/pgbench_phase.cc;
  # not linked: the phase runs Debian's binaries)
  postgresql-15
  # tests/load: the scrape load test (wrk; ss reads the listen backlog)
  wrk iproute2
  # tests/vm: QEMU's emulated NVMe under a real kernel driver; smartmontools
  # for tests/bench/collect_once_vs_smartctl.sh
  qemu-system-x86 busybox-static nvme-cli smartmontools cpio xz-utils zstd kmod
)

case ${1:-} in
  "") ;;
  --tests) packages+=("${test_packages[@]}") ;;
  *) echo "install-deps.sh: unknown argument '$1' (expected nothing or --tests)" >&2; exit 2 ;;
esac

if [[ $(id -u) -ne 0 ]]; then
  echo "install-deps.sh: must run as root (it calls apt-get)" >&2
  exit 1
fi

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed"; then
    missing+=("$p")
  fi
done

if [[ ${#missing[@]} -eq 0 ]]; then
  echo "install-deps.sh: all ${#packages[@]} packages present"
  exit 0
fi

echo "install-deps.sh: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}"
