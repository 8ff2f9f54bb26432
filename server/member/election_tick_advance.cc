#include "server/member/election_tick_advance.h"

#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "server/member/node_loop.h"
#include "server/observability/log.h"

namespace leasehold::server {

ElectionTickAdvance::ElectionTickAdvance(NodeLoop* node, std::function<int()> active_peers,
                                         int election_ticks, int64_t tick_ms)
    : node_(node),
      active_peers_(std::move(active_peers)),
      election_ticks_(election_ticks),
      tick_ms_(tick_ms) {}

void ElectionTickAdvance::Start(bool enabled) {
  const LogFields ticks = {{"election-ticks", std::to_string(election_ticks_)}};
  if (!enabled) {
    LogInfo("skipping initial election tick advance", ticks);
    return;
  }
  LogInfo("starting initial election tick advance", ticks);
  thread_ = std::thread([this] { Run(); });
}

void ElectionTickAdvance::Stop() {
  if (!stop_.HasBeenNotified()) stop_.Notify();
  if (thread_.joinable()) thread_.join();
}

void ElectionTickAdvance::Run() {
  // etcd waits as long as a peer connection takes to report (its 5 s read timeout).
  constexpr absl::Duration kStep = absl::Milliseconds(50);
  for (int i = 0; i < 100; ++i) {
    if (stop_.WaitForNotificationWithTimeout(kStep)) return;
    const int active = active_peers_();
    if (active <= 1) continue;
    // Two ticks short of a timeout: a leader's first heartbeat, if one was just elected elsewhere,
    // still arrives before this member would campaign.
    const int forward = election_ticks_ - 2;
    LogInfo("initialized peer connections; fast-forwarding election ticks",
            {{"local-member-id", absl::StrCat(absl::Hex(node_->id()))},
             {"forward-ticks", std::to_string(forward)},
             {"forward-duration", GoDuration(absl::Milliseconds(forward * tick_ms_))},
             {"election-ticks", std::to_string(election_ticks_)},
             {"election-timeout", GoDuration(absl::Milliseconds(election_ticks_ * tick_ms_))},
             {"active-remote-members", std::to_string(active)}});
    if (forward > 0) node_->AdvanceTicks(forward);
    return;
  }
}

}  // namespace leasehold::server
