# SPDX-License-Identifier: Apache-2.0
# Sourced by the build scripts (scripts/build.sh, sanitize.sh, fuzz.sh) and
# tests/package/package_test.sh. When ccache is installed (install-deps.sh
# --tests installs it), `dw_ccache SOURCE_DIR` sets DW_CCACHE_ARGS to the
# CMake arguments that put it in front of the compiler, and keeps a build
# tree's own location out of the cache key:
#   CCACHE_BASEDIR=SOURCE_DIR  absolute paths under it (the sources, a
#                              tree's generated headers) become relative to
#                              the compiler's working directory, so they
#                              read the same from any tree at the same depth
#                              below the sources: build/ and build-package/;
#   CCACHE_NOHASHDIR=1         the working directory is not hashed (with -g
#                              it otherwise is; the debug info's comp_dir
#                              may then name the other tree).
#   CCACHE_SLOPPINESS          pch_defines,time_macros (and the include
#                              files' times): what ccache needs to cache a
#                              compile that uses a precompiled header (the
#                              test binaries', tests/CMakeLists.txt) rather
#                              than run it every time.
# So the package test's tree (build-package/: prefix /usr, no tests)
# compiles nothing the main build already compiled. They override a user's
# ccache.conf. Without ccache DW_CCACHE_ARGS is empty and nothing changes;
# DW_CCACHE=0 turns it off.
dw_ccache() {
  DW_CCACHE_ARGS=()
  if [[ ${DW_CCACHE:-1} != 0 ]] && command -v ccache >/dev/null; then
    DW_CCACHE_ARGS=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
    CCACHE_BASEDIR=$(realpath "$1")
    export CCACHE_BASEDIR CCACHE_NOHASHDIR=1
    export CCACHE_SLOPPINESS=pch_defines,time_macros,include_file_mtime,include_file_ctime
  fi
}
