// The error type lives with the public API (include/strata/result.h), which returns it; this
// header keeps the internal include path short.
#pragma once

#include "strata/result.h"
