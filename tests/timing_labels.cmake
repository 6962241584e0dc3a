# SPDX-License-Identifier: Apache-2.0
# Read by ctest after integration_test's discovered cases (tests/
# CMakeLists.txt): the timing cases, listed by gtest_discover_tests in
# dw_integration_timing_tests, get both their labels, so that the sanitize
# stage runs them and `tests/tools/repeat.sh -- -L 'timing|race'` repeats
# them.
if(dw_integration_timing_tests)
  set_tests_properties(${dw_integration_timing_tests} PROPERTIES LABELS "sanitize;timing")
endif()
