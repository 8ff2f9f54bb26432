// Printing a benchmark report as text or as one JSON object.
#pragma once

#include <string>

#include "client/bench/workloads.h"

namespace leasehold::bench {

std::string FormatText(const Report& report);
std::string FormatJson(const Report& report);

}  // namespace leasehold::bench
