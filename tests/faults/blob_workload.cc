#include "tests/faults/blob_workload.h"

#include <algorithm>
#include <random>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "boost/asio/connect.hpp"
#include "boost/asio/ip/tcp.hpp"
#include "boost/beast/core/flat_buffer.hpp"
#include "boost/beast/core/tcp_stream.hpp"
#include "boost/beast/http/read.hpp"
#include "boost/beast/http/write.hpp"
#include "server/blob/blob_auth.h"
#include "server/blob/blob_request_parser.h"

namespace leasehold::faults {
namespace {

namespace http = boost::beast::http;
constexpr char kContainer[] = "faults";
constexpr char kBlob[] = "leased";
constexpr int64_t kDurationS = 15;
constexpr int64_t kS = 1000000000;

struct Answer {
  int status = 0;  // 0: no answer (timeout or connection failure)
  std::string error_code;
};

// One signed request to the blob adapter at `endpoint` (host:port), waiting at most 3 s.
Answer Send(const std::string& endpoint, http::verb verb, const std::string& target,
            const std::vector<std::pair<std::string, std::string>>& headers,
            const std::string& body) {
  static const std::string account(server::kDevAccountName);
  server::HttpRequest request{verb, "/" + account + target, 11};
  request.set(http::field::host, endpoint);
  request.set("x-ms-version", "2021-08-06");
  request.set("x-ms-date",
              absl::FormatTime("%a, %d %b %Y %H:%M:%S GMT", absl::Now(), absl::UTCTimeZone()));
  for (const auto& [name, value] : headers) request.set(name, value);
  request.body() = body;
  request.prepare_payload();
  const auto parsed =
      server::ParseBlobTarget(std::string_view(request.target().data(), request.target().size()));
  static const std::string key = [] {
    std::string decoded;
    absl::Base64Unescape(std::string(server::kDevAccountKey), &decoded);
    return decoded;
  }();
  const std::string to_sign = server::SharedKeyVerifier::StringToSign(
      request, account, parsed->raw_path, parsed->query, {});
  request.set(http::field::authorization,
              "SharedKey " + account + ":" + server::SignHmacSha256(key, to_sign));
  try {
    boost::asio::io_context io;
    boost::beast::tcp_stream stream(io);
    const size_t colon = endpoint.rfind(':');
    boost::asio::ip::tcp::endpoint to(boost::asio::ip::make_address(endpoint.substr(0, colon)),
                                      static_cast<uint16_t>(std::stoi(endpoint.substr(colon + 1))));
    stream.expires_after(std::chrono::seconds(3));
    stream.connect(to);
    http::write(stream, request);
    boost::beast::flat_buffer buffer;
    http::response<http::string_body> response;
    http::read(stream, buffer, response);
    return {static_cast<int>(response.result_int()), std::string(response["x-ms-error-code"])};
  } catch (const std::exception&) {
    return {};
  }
}

std::string NewLeaseId(std::mt19937_64& rng) {
  const uint64_t a = rng(), b = rng();
  return absl::StrFormat("%08x-%04x-4%03x-a%03x-%012x", a >> 32, (a >> 16) & 0xffff, a & 0xfff,
                         (b >> 48) & 0xfff, b & 0xffffffffffffULL);
}

}  // namespace

BlobLeaseWorkload::BlobLeaseWorkload(std::vector<std::string> endpoints, int workers, uint64_t seed,
                                     const CampaignClock* clock, Recorder* recorder,
                                     BlobRecord* record)
    : endpoints_(std::move(endpoints)),
      workers_(workers),
      seed_(seed),
      clock_(clock),
      recorder_(recorder),
      record_(record) {}

BlobLeaseWorkload::~BlobLeaseWorkload() { Stop(); }

void BlobLeaseWorkload::Start() {
  stop_ = false;
  for (int i = 0; i < workers_; ++i) threads_.emplace_back([this, i] { Worker(i); });
}

void BlobLeaseWorkload::Stop() {
  stop_ = true;
  for (std::thread& t : threads_) t.join();
  threads_.clear();
}

void BlobLeaseWorkload::Worker(int worker) {
  std::mt19937_64 rng(seed_ * 15485863 + worker);
  size_t node = worker % endpoints_.size();
  auto sleep_ms = [&](int64_t ms) {
    for (int64_t slept = 0; slept < ms && !stop_; slept += 50)
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
  };
  auto sample = [&](int64_t call, const Answer& a) {
    std::lock_guard lock(recorder_->mu);
    recorder_->samples.push_back({call, clock_->Now() - call, "blob", a.status != 0});
  };
  // The container and the blob, made by whoever gets there first (conflicts are fine).
  while (!stop_) {
    const Answer c = Send(endpoints_[node], http::verb::put,
                          absl::StrCat("/", kContainer, "?restype=container"), {}, "");
    const Answer b =
        Send(endpoints_[node], http::verb::put, absl::StrCat("/", kContainer, "/", kBlob),
             {{"x-ms-blob-type", "BlockBlob"}}, "initial");
    if ((c.status == 201 || c.status == 409) && (b.status == 201 || b.status == 412)) break;
    node = (node + 1) % endpoints_.size();
    sleep_ms(500);
  }
  const std::string lease_target = absl::StrCat("/", kContainer, "/", kBlob, "?comp=lease");
  int64_t writes = 0;
  while (!stop_) {
    BlobHolding holding;
    holding.client = worker;
    holding.lease_id = NewLeaseId(rng);
    const int64_t sent = clock_->Now();
    const Answer acquired = Send(endpoints_[node], http::verb::put, lease_target,
                                 {{"x-ms-lease-action", "acquire"},
                                  {"x-ms-lease-duration", std::to_string(kDurationS)},
                                  {"x-ms-proposed-lease-id", holding.lease_id}},
                                 "");
    sample(sent, acquired);
    if (acquired.status != 201) {
      if (acquired.status == 0 || acquired.status >= 500) node = (node + 1) % endpoints_.size();
      sleep_ms(300);
      continue;
    }
    holding.acquired_ns = clock_->Now();
    holding.believed_until_ns = sent + kDurationS * kS;
    const int64_t hold_until = clock_->Now() + static_cast<int64_t>(3 + rng() % 15) * kS;
    bool lost = false;
    int64_t last_renew = sent;
    while (!stop_ && !lost && clock_->Now() < hold_until) {
      sleep_ms(1000);
      const bool stall = rng() % 12 == 0;
      if (stall) sleep_ms(kDurationS * 1000 + 1000 + static_cast<int64_t>(rng() % 2000));
      BlobWrite w;
      w.client = worker;
      w.lease_id = holding.lease_id;
      w.call_ns = clock_->Now();
      w.stale = w.call_ns > holding.believed_until_ns;
      const Answer put =
          Send(endpoints_[node], http::verb::put, absl::StrCat("/", kContainer, "/", kBlob),
               {{"x-ms-blob-type", "BlockBlob"}, {"x-ms-lease-id", holding.lease_id}},
               absl::StrCat("client ", worker, " write ", writes++));
      w.return_ns = clock_->Now();
      w.status = put.status;
      sample(w.call_ns, put);
      {
        std::lock_guard lock(record_->mu);
        record_->writes.push_back(w);
      }
      if (put.status == 412) {
        holding.believed_until_ns = std::min(holding.believed_until_ns, w.return_ns);
        lost = true;
      } else if (put.status == 0 || put.status >= 500) {
        node = (node + 1) % endpoints_.size();
      }
      if (stall) lost = true;  // its lease has run out: it acquires again rather than renew
      if (!lost && clock_->Now() - last_renew > 5 * kS) {
        const int64_t renew_sent = clock_->Now();
        const Answer renewed =
            Send(endpoints_[node], http::verb::put, lease_target,
                 {{"x-ms-lease-action", "renew"}, {"x-ms-lease-id", holding.lease_id}}, "");
        sample(renew_sent, renewed);
        if (renewed.status == 200) {
          holding.believed_until_ns = renew_sent + kDurationS * kS;
          last_renew = renew_sent;
        } else if (renewed.status == 409 || renewed.status == 412) {
          holding.believed_until_ns = std::min(holding.believed_until_ns, clock_->Now());
          lost = true;
        } else {
          node = (node + 1) % endpoints_.size();
        }
      }
    }
    if (!lost && rng() % 2 == 0) {
      const int64_t release_sent = clock_->Now();
      holding.believed_until_ns = std::min(holding.believed_until_ns, release_sent);
      sample(release_sent,
             Send(endpoints_[node], http::verb::put, lease_target,
                  {{"x-ms-lease-action", "release"}, {"x-ms-lease-id", holding.lease_id}}, ""));
    }
    std::lock_guard lock(record_->mu);
    record_->holdings.push_back(holding);
  }
}

}  // namespace leasehold::faults
