# SPDX-License-Identifier: Apache-2.0
# Sourced by the build scripts (scripts/build.sh, sanitize.sh, fuzz.sh) and
# tests/package/package_test.sh. When ccache is installed (install-deps.sh
# --tests installs it), `dw_ccache BUILD_DIR` sets DW_CCACHE_ARGS to the
# CMake argument that puts it in front of the compiler, and makes a build
# tree's own directory drop out of the cache key:
#   CCACHE_BASEDIR=BUILD_DIR  paths inside the tree (its generated headers'
#                             include directory) become relative to it;
#   CCACHE_NOHASHDIR=1        the working directory is not hashed (with -g
#                             it otherwise is).
# So two trees of the same sources and flags share their objects: the
# package test's tree (prefix /usr, no tests) compiles nothing the main
# build already compiled, and a rebuild after a small change compiles
# only what changed. Without ccache DW_CCACHE_ARGS is empty and nothing
# changes. DW_CCACHE=0 turns it off.
dw_ccache() {
  DW_CCACHE_ARGS=()
  if [[ ${DW_CCACHE:-1} != 0 ]] && command -v ccache >/dev/null; then
    mkdir -p "$1"
    DW_CCACHE_ARGS=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
    CCACHE_BASEDIR=$(realpath "$1")
    export CCACHE_BASEDIR CCACHE_NOHASHDIR=1
  fi
}
