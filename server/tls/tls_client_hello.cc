#include "server/tls/tls_client_hello.h"

#include <algorithm>
#include <cstdint>
#include <optional>

namespace leasehold::server {
namespace {

constexpr uint8_t kHandshakeRecord = 22;
constexpr uint8_t kClientHello = 1;
constexpr uint16_t kAlpnExtension = 16;
constexpr size_t kRecordHeaderBytes = 5;
constexpr size_t kMaxRecordPayload = 16 * 1024;  // a plaintext record's limit (RFC 8446 5.1)

// Reads big-endian fields off the front of a byte range; every read fails once the range is short.
class Reader {
 public:
  explicit Reader(std::string_view bytes) : bytes_(bytes) {}

  std::optional<uint32_t> Number(size_t width) {
    if (bytes_.size() < width) return std::nullopt;
    uint32_t n = 0;
    for (size_t i = 0; i < width; ++i) n = (n << 8) | static_cast<uint8_t>(bytes_[i]);
    bytes_.remove_prefix(width);
    return n;
  }
  std::optional<std::string_view> Bytes(size_t n) {
    if (bytes_.size() < n) return std::nullopt;
    std::string_view taken = bytes_.substr(0, n);
    bytes_.remove_prefix(n);
    return taken;
  }
  // A vector whose length comes first, in `width` bytes.
  std::optional<std::string_view> Prefixed(size_t width) {
    auto n = Number(width);
    if (!n) return std::nullopt;
    return Bytes(*n);
  }
  bool empty() const { return bytes_.empty(); }

 private:
  std::string_view bytes_;
};

ClientHelloAlpn NotTls() { return ClientHelloAlpn{}; }

ClientHelloAlpn NeedMore(size_t bytes) {
  ClientHelloAlpn result;
  result.verdict = ClientHelloAlpn::Verdict::kNeedMore;
  result.needed_bytes = bytes;
  return result;
}

// The ALPN names in a whole ClientHello body (after its 4-byte handshake header).
ClientHelloAlpn ParseHello(std::string_view body) {
  Reader r(body);
  if (!r.Number(2) || !r.Bytes(32) || !r.Prefixed(1) || !r.Prefixed(2) || !r.Prefixed(1))
    return NotTls();
  ClientHelloAlpn result;
  result.verdict = ClientHelloAlpn::Verdict::kRead;
  if (r.empty()) return result;  // no extensions at all
  auto extensions = r.Prefixed(2);
  if (!extensions || !r.empty()) return NotTls();
  Reader ext(*extensions);
  while (!ext.empty()) {
    auto type = ext.Number(2);
    auto data = ext.Prefixed(2);
    if (!type || !data) return NotTls();
    if (*type != kAlpnExtension) continue;
    Reader alpn(*data);
    auto list = alpn.Prefixed(2);
    if (!list || !alpn.empty() || list->empty()) return NotTls();
    Reader names(*list);
    while (!names.empty()) {
      auto name = names.Prefixed(1);
      if (!name || name->empty()) return NotTls();
      result.protocols.emplace_back(*name);
    }
  }
  return result;
}

}  // namespace

ClientHelloAlpn ReadClientHelloAlpn(std::string_view bytes) {
  // The handshake message may span records: gather their payloads until it is whole.
  std::string handshake;
  size_t offset = 0;
  while (true) {
    if (bytes.size() < offset + kRecordHeaderBytes) {
      // What has come so far must already look like a handshake record.
      const std::string_view head = bytes.substr(offset);
      if (!head.empty() && static_cast<uint8_t>(head[0]) != kHandshakeRecord) return NotTls();
      if (head.size() >= 2 && head[1] != 3) return NotTls();
      return NeedMore(offset + kRecordHeaderBytes);
    }
    Reader header(bytes.substr(offset, kRecordHeaderBytes));
    const uint32_t type = *header.Number(1), major = *header.Number(1), minor = *header.Number(1);
    const uint32_t length = *header.Number(2);
    (void)minor;
    if (type != kHandshakeRecord || major != 3 || length == 0 || length > kMaxRecordPayload)
      return NotTls();
    const size_t record_end = offset + kRecordHeaderBytes + length;
    if (record_end > kMaxClientHelloBytes + kRecordHeaderBytes * 8) return NotTls();
    if (bytes.size() < record_end) return NeedMore(record_end);
    handshake.append(bytes.substr(offset + kRecordHeaderBytes, length));
    offset = record_end;
    if (handshake.size() < 4) continue;
    Reader message(handshake);
    const uint32_t message_type = *message.Number(1), message_length = *message.Number(3);
    if (message_type != kClientHello || message_length > kMaxClientHelloBytes) return NotTls();
    if (handshake.size() < 4 + message_length) continue;
    return ParseHello(std::string_view(handshake).substr(4, message_length));
  }
}

bool OffersHttp2Only(const std::vector<std::string>& protocols) {
  auto offers = [&protocols](std::string_view name) {
    return std::find(protocols.begin(), protocols.end(), name) != protocols.end();
  };
  return offers("h2") && !offers("http/1.1");
}

}  // namespace leasehold::server
