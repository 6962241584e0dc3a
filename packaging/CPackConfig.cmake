# SPDX-License-Identifier: Apache-2.0
# The Debian package, built by `cpack -G DEB` in a tree configured with
# -DCMAKE_INSTALL_PREFIX=/usr (see packaging/README.md). Included from the
# top-level CMakeLists.txt *before* include(GNUInstallDirs).

# With prefix /usr the config belongs in /etc, not /usr/etc. GNUInstallDirs
# only special-cases the FULL_ variables, while config/CMakeLists.txt and
# systemd/CMakeLists.txt use the relative CMAKE_INSTALL_SYSCONFDIR, so
# default it to /etc here, as Debian's debhelper does
# (-DCMAKE_INSTALL_SYSCONFDIR=/etc). Other prefixes are left alone.
if(CMAKE_INSTALL_PREFIX STREQUAL "/usr" AND NOT DEFINED CACHE{CMAKE_INSTALL_SYSCONFDIR})
  set(CMAKE_INSTALL_SYSCONFDIR "/etc" CACHE PATH "read-only single-machine data (DATAROOTDIR)")
elseif(CMAKE_INSTALL_PREFIX STREQUAL "/usr" AND CMAKE_INSTALL_SYSCONFDIR STREQUAL "etc")
  message(WARNING "CMAKE_INSTALL_PREFIX is /usr but CMAKE_INSTALL_SYSCONFDIR is "
    "\"etc\" (from an earlier configure): the config would go to /usr/etc. "
    "Reconfigure with -DCMAKE_INSTALL_SYSCONFDIR=/etc before cpack.")
endif()
include(GNUInstallDirs)

set(DRIVEWATCH_PACKAGE_VERSION "${PROJECT_VERSION}" CACHE STRING
  "Version of the .deb (default: the project version); the package tests build an older one")
set(DRIVEWATCH_PACKAGE_MAINTAINER "drivewatch <dev@drivewatch.invalid>" CACHE STRING
  "Maintainer field of the .deb")

set(CPACK_GENERATOR "DEB")
set(CPACK_PACKAGE_NAME "drivewatch")
set(CPACK_PACKAGE_VERSION "${DRIVEWATCH_PACKAGE_VERSION}")
set(CPACK_PACKAGE_CONTACT "${DRIVEWATCH_PACKAGE_MAINTAINER}")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
  "NVMe drive health, thermal and latency exporter for Prometheus")
# The extended description, as is (CPACK_PACKAGE_DESCRIPTION_FILE would
# XML-escape apostrophes).
file(READ "${CMAKE_CURRENT_LIST_DIR}/description.txt" CPACK_DEBIAN_PACKAGE_DESCRIPTION)
# Debian wants the binary stripped; the unit, not DESTDIR tricks, sets paths.
set(CPACK_STRIP_FILES ON)
# Install with DESTDIR=<staging> and CMAKE_INSTALL_PREFIX=/usr, so the unit
# that systemd/CMakeLists.txt configures at install time gets
# ExecStart=/usr/bin/drivewatch (not the staging path) and /etc lands in /etc.
set(CPACK_SET_DESTDIR ON)
set(CPACK_INSTALL_PREFIX "/usr")
set(CPACK_PACKAGING_INSTALL_PREFIX "/usr")

# The .deb: drivewatch_<version>_amd64.deb, a native package (no Debian
# revision). Dependencies come from dpkg-shlibdeps on the binary.
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION "admin")
set(CPACK_DEBIAN_PACKAGE_PRIORITY "optional")
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
# smartd/nvme-cli are useful next to it, Prometheus scrapes it.
set(CPACK_DEBIAN_PACKAGE_SUGGESTS "prometheus, nvme-cli")
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA
  "${CMAKE_CURRENT_LIST_DIR}/debian/conffiles"
  "${CMAKE_CURRENT_LIST_DIR}/debian/postinst"
  "${CMAKE_CURRENT_LIST_DIR}/debian/prerm"
  "${CMAKE_CURRENT_LIST_DIR}/debian/postrm")
set(CPACK_DEBIAN_COMPRESSION_TYPE "xz")

include(CPack)
