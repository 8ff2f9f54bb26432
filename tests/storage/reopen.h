// Opening a state machine on a test's data dir, again after each simulated restart.
#pragma once

#include <memory>
#include <string>

#include <gtest/gtest.h>

#include "rocksdb/write_batch.h"
#include "storage/apply/state_machine.h"
#include "storage/backend/engine.h"

namespace leasehold::testing {

// Closes `*sm` and `*engine` (if open), then opens the engine in `dir` and a state machine on it,
// as a restart does. Call through ASSERT_NO_FATAL_FAILURE.
inline void ReopenStateMachine(const std::string& dir, std::unique_ptr<storage::Engine>* engine,
                               std::unique_ptr<storage::StateMachine>* sm) {
  sm->reset();
  engine->reset();
  auto opened = storage::Engine::Open(dir);
  ASSERT_TRUE(opened.ok()) << opened.status();
  *engine = std::move(*opened);
  auto machine = storage::StateMachine::Open(engine->get(), storage::StateMachine::Options{});
  ASSERT_TRUE(machine.ok()) << machine.status();
  *sm = std::move(*machine);
}

// Opens a fresh state machine in `dir` and installs `from`'s snapshot into it, as a lagging member
// does (applied up to index 100). Call through ASSERT_NO_FATAL_FAILURE.
inline void CopyBySnapshot(const storage::StateMachine& from, const std::string& dir,
                           std::unique_ptr<storage::Engine>* engine,
                           std::unique_ptr<storage::StateMachine>* copy) {
  std::string dump;
  ASSERT_TRUE(from.Dump(&dump).ok());
  ASSERT_NO_FATAL_FAILURE(ReopenStateMachine(dir, engine, copy));
  rocksdb::WriteBatch batch;
  ASSERT_TRUE((*copy)->PrepareInstall(dump, 100, &batch).ok());
  ASSERT_TRUE((*engine)->Write(&batch, true).ok());
  ASSERT_TRUE((*copy)->ReloadFromEngine().ok());
}

}  // namespace leasehold::testing
