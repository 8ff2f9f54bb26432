// The seed of a randomized unit test: LEASEHOLD_TEST_SEED when set (to replay a failure), else a
// fresh one. Either way it is printed, so a failing run says how to replay itself.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>

namespace leasehold::testing {

inline uint32_t TestSeed() {
  uint32_t seed = 0;
  if (const char* given = std::getenv("LEASEHOLD_TEST_SEED"); given != nullptr && *given != '\0') {
    seed = static_cast<uint32_t>(std::stoul(given));
  } else {
    seed = std::random_device{}();
  }
  std::printf("seed %u (LEASEHOLD_TEST_SEED=%u replays it)\n", seed, seed);
  return seed;
}

}  // namespace leasehold::testing
