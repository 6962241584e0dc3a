#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Every source file carries `SPDX-License-Identifier: Apache-2.0` as its
# first line (after a shebang), so that a file added later without one is
# caught; LICENSE holds the licence's full text. Source files: C++, shell,
# Python, CMake, the templates and the package's maintainer scripts, as git
# tracks them (fixtures, seed corpora and data files are not source).
#   usage: license_test.sh SOURCE_DIR
set -euo pipefail
cd "${1:?usage: $0 SOURCE_DIR}"
fail=0
grep -q 'Apache License' LICENSE 2>/dev/null && grep -q 'Version 2.0, January 2004' LICENSE ||
  { echo "FAIL: LICENSE is missing or is not the Apache License 2.0"; fail=1; }

if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  mapfile -t files < <(git ls-files --cached --others --exclude-standard)
else  # an unpacked source tarball
  mapfile -t files < <(find . -path './build*' -prune -o -type f -print | sed 's|^\./||')
fi
checked=0
for f in "${files[@]}"; do
  [[ -f $f ]] || continue
  case $f in
    tests/fuzz/corpus/* | tests/fixtures/*) continue ;;
    *.cc | *.h | *.sh | *.py | *.cmake | */CMakeLists.txt | CMakeLists.txt | *.h.in | *.service.in) ;;
    .ci/run | tests/vm/guest/init | packaging/debian/postinst | packaging/debian/postrm | packaging/debian/prerm) ;;
    *) continue ;;
  esac
  checked=$((checked + 1))
  line=$(head -1 "$f")
  [[ $line == '#!'* ]] && line=$(sed -n 2p "$f")
  case $f in
    *.cc | *.h | *.h.in) want='// SPDX-License-Identifier: Apache-2.0' ;;
    *) want='# SPDX-License-Identifier: Apache-2.0' ;;
  esac
  if [[ $line != "$want" ]]; then
    echo "FAIL: $f: first line (after a shebang) is '$line'; expected '$want'"
    fail=1
  fi
done
# The list above must actually find the tree's sources.
(( checked >= 200 )) || { echo "FAIL: found only $checked source files in $PWD"; fail=1; }
(( fail == 0 )) && echo "license_test: $checked source files carry the SPDX header"
exit $fail
