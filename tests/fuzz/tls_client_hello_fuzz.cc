// libFuzzer target: reading a ClientHello's ALPN offer off a connection's first bytes, which on an
// https:// client port anyone may send. On any input it must not crash or read out of bounds, must
// ask for more only beyond what it was given, and, since the server reads again with whatever more
// has arrived, every prefix's final verdict must be the whole input's.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "server/tls/tls_client_hello.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using leasehold::server::ClientHelloAlpn;
  using leasehold::server::ReadClientHelloAlpn;
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  const ClientHelloAlpn whole = ReadClientHelloAlpn(bytes);
  // Prefixes up to a few kilobytes: enough for every real hello, and quick.
  for (size_t have = 0; have <= std::min<size_t>(size, 4096); ++have) {
    const ClientHelloAlpn part = ReadClientHelloAlpn(bytes.substr(0, have));
    if (part.verdict == ClientHelloAlpn::Verdict::kNeedMore) {
      if (part.needed_bytes <= have) std::abort();  // asking for what it has would spin the server
      continue;
    }
    if (part.verdict != whole.verdict || part.protocols != whole.protocols) std::abort();
  }
  return 0;
}
