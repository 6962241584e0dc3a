// SPDX-License-Identifier: Apache-2.0
// The drive layer's result type. It lives in config/util/expected.h so that
// the shared system helpers there (SysError, ReadAttribute, OpenDirect) can
// return it; this header keeps the drive layer's includes as they were.
#pragma once

#include "config/util/expected.h"
