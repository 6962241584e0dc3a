#!/usr/bin/env bash
# Installs every build and test dependency of drivewatch on Debian 12, from
# Debian's own archive. Run as root. Idempotent: when everything is present
# it changes nothing and does not touch the network.
set -euo pipefail

packages=(
  # build
  cmake g++ make ninja-build pkg-config git
  # fuzzing: clang with libFuzzer and the sanitizer runtimes
  clang libclang-rt-14-dev
  # packaging: dpkg-shlibdeps, lintian
  dpkg-dev fakeroot lintian
  prometheus-cpp-dev libnvme-dev libjson-c-dev libssl-dev liburing-dev
  libtomlplusplus-dev libcpp-httplib-dev libgtest-dev libgmock-dev
  libblkid-dev libbenchmark-dev
  # the HTTP server (issue 16): Boost.Beast/Asio headers and zlib for gzip
  libboost1.81-dev zlib1g-dev
  # tests: a real Prometheus (and promtool), real curl, systemd-analyze,
  # headless Chromium for the retention report
  prometheus prometheus-alertmanager curl systemd python3 chromium
  # tests/integration and tests/bench: loop devices, fio for the comparison
  util-linux e2fsprogs fio
  # tests/load: the scrape load test (wrk; ss reads the listen backlog)
  wrk iproute2
  # tests/vm: QEMU's emulated NVMe under a real kernel driver
  qemu-system-x86 busybox-static nvme-cli cpio xz-utils zstd kmod
)

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
