# SPDX-License-Identifier: Apache-2.0
# Sourced by scripts/test.sh and tests/tools/repeat.sh: the tests run
# Debian's python3 (/usr/bin/python3, which install-deps.sh installs; they
# use its standard library only), put first in PATH on its own. A python3
# found earlier in PATH may be a wrapper that is slow to start (a pyenv shim
# took 0.8 s a start on the CI machine, where Debian's takes 0.05 s), and
# the QEMU scenarios' polls and the shell tests start python3 hundreds of
# times. Sets DW_PYTHON_DIR (remove it when done) when it changed PATH.
DW_PYTHON_DIR=
if [[ -x /usr/bin/python3 && $(command -v python3) != /usr/bin/python3 ]]; then
  DW_PYTHON_DIR=$(mktemp -d)
  ln -s /usr/bin/python3 "$DW_PYTHON_DIR/python3"
  export PATH=$DW_PYTHON_DIR:$PATH
fi
