// The library's logging is the public one (strata/log.h): programs set its level.
#pragma once

#include "strata/log.h"
