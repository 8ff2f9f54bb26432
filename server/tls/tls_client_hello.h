// Reading which application protocols (ALPN) a TLS client offers, from the first bytes of its
// connection and before any TLS processing: how one https:// client port tells gRPC clients, which
// offer HTTP/2 only, from HTTP/1.1 clients (curl, browsers, monitoring), which etcd also serves
// there.
//
// Only the ClientHello is read; the bytes come from a peek, so the connection is untouched and can
// still be handed on whole. Hostile input is expected: every length is checked against what was
// read, and anything that is not a well-formed ClientHello says so rather than guessing.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace leasehold::server {

struct ClientHelloAlpn {
  enum class Verdict {
    kNeedMore,  // a ClientHello so far: wait for `needed_bytes` in all
    kNotTls,    // not a ClientHello (plaintext, garbage, or malformed)
    kRead,      // `protocols` holds what the client offers (empty without the extension)
  };
  Verdict verdict = Verdict::kNotTls;
  std::vector<std::string> protocols;
  size_t needed_bytes = 0;  // with kNeedMore
};

// The ClientHello at the start of `bytes` (which may be split over several TLS records). A hello
// longer than kMaxClientHelloBytes is kNotTls.
ClientHelloAlpn ReadClientHelloAlpn(std::string_view bytes);
inline constexpr size_t kMaxClientHelloBytes = 32 * 1024;

// Whether a client offering `protocols` speaks gRPC: it offers HTTP/2 ("h2") and not HTTP/1.1, as
// every gRPC implementation does (grpc-go and grpc-js offer "h2"; C-core adds "grpc-exp"), while
// curl and Go's HTTP client offer both and older HTTP clients offer none.
bool OffersHttp2Only(const std::vector<std::string>& protocols);

}  // namespace leasehold::server
