#include "server/tls/tls_client_hello.h"

#include <string>
#include <vector>

#include <openssl/bio.h>
#include <openssl/ssl.h>

#include "gtest/gtest.h"

namespace leasehold::server {
namespace {

using Verdict = ClientHelloAlpn::Verdict;

// The first flight a real OpenSSL client sends, offering `protocols` by ALPN (none when empty).
std::string ClientHelloOffering(const std::vector<std::string>& protocols) {
  SSL_CTX* ctx = SSL_CTX_new(TLS_client_method());
  SSL* ssl = SSL_new(ctx);
  std::string wire;
  for (const auto& p : protocols) wire += static_cast<char>(p.size()) + p;
  if (!wire.empty())
    SSL_set_alpn_protos(ssl, reinterpret_cast<const unsigned char*>(wire.data()), wire.size());
  SSL_set_tlsext_host_name(ssl, "leasehold.example");
  BIO* in = BIO_new(BIO_s_mem());
  BIO* out = BIO_new(BIO_s_mem());
  SSL_set_bio(ssl, in, out);
  SSL_set_connect_state(ssl);
  SSL_do_handshake(ssl);  // wants the server's answer; the hello is in `out`
  char* data = nullptr;
  const long n = BIO_get_mem_data(out, &data);
  std::string hello(data, static_cast<size_t>(n));
  SSL_free(ssl);
  SSL_CTX_free(ctx);
  return hello;
}

// The same hello re-framed as two handshake records, split `at` bytes into the message.
std::string SplitIntoTwoRecords(const std::string& hello, size_t at) {
  const std::string message = hello.substr(5);
  auto record = [&hello](std::string_view payload) {
    std::string r = hello.substr(0, 3);
    r += static_cast<char>(payload.size() >> 8);
    r += static_cast<char>(payload.size() & 0xff);
    r += payload;
    return r;
  };
  return record(std::string_view(message).substr(0, at)) +
         record(std::string_view(message).substr(at));
}

TEST(TlsClientHelloTest, ReadsWhatARealClientOffers) {
  ClientHelloAlpn grpc = ReadClientHelloAlpn(ClientHelloOffering({"grpc-exp", "h2"}));
  ASSERT_EQ(grpc.verdict, Verdict::kRead);
  EXPECT_EQ(grpc.protocols, (std::vector<std::string>{"grpc-exp", "h2"}));
  EXPECT_TRUE(OffersHttp2Only(grpc.protocols));

  ClientHelloAlpn curl = ReadClientHelloAlpn(ClientHelloOffering({"h2", "http/1.1"}));
  ASSERT_EQ(curl.verdict, Verdict::kRead);
  EXPECT_FALSE(OffersHttp2Only(curl.protocols));

  ClientHelloAlpn none = ReadClientHelloAlpn(ClientHelloOffering({}));
  ASSERT_EQ(none.verdict, Verdict::kRead);
  EXPECT_TRUE(none.protocols.empty());
  EXPECT_FALSE(OffersHttp2Only(none.protocols));
}

TEST(TlsClientHelloTest, AsksForMoreUntilTheHelloIsWhole) {
  const std::string hello = ClientHelloOffering({"h2"});
  size_t have = 0;
  int rounds = 0;
  while (true) {
    ClientHelloAlpn r = ReadClientHelloAlpn(std::string_view(hello).substr(0, have));
    if (r.verdict == Verdict::kRead) break;
    ASSERT_EQ(r.verdict, Verdict::kNeedMore) << "at " << have << " bytes";
    ASSERT_GT(r.needed_bytes, have);
    ASSERT_LE(r.needed_bytes, hello.size());
    have = r.needed_bytes;
    ASSERT_LT(++rounds, 10);
  }
  EXPECT_EQ(have, hello.size());
  EXPECT_EQ(ReadClientHelloAlpn(hello.substr(0, hello.size() - 1)).verdict, Verdict::kNeedMore);
}

TEST(TlsClientHelloTest, GathersAHelloSplitOverRecords) {
  const std::string hello = ClientHelloOffering({"h2"});
  for (size_t at : {size_t{1}, size_t{3}, size_t{40}, hello.size() - 6}) {
    const std::string split = SplitIntoTwoRecords(hello, at);
    ClientHelloAlpn r = ReadClientHelloAlpn(split);
    ASSERT_EQ(r.verdict, Verdict::kRead) << "split at " << at;
    EXPECT_EQ(r.protocols, std::vector<std::string>{"h2"});
    EXPECT_EQ(ReadClientHelloAlpn(split.substr(0, hello.size())).verdict, Verdict::kNeedMore);
  }
}

TEST(TlsClientHelloTest, PlaintextIsNotTls) {
  EXPECT_EQ(ReadClientHelloAlpn("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n").verdict, Verdict::kNotTls);
  EXPECT_EQ(ReadClientHelloAlpn("GET /health HTTP/1.1\r\n").verdict, Verdict::kNotTls);
  EXPECT_EQ(ReadClientHelloAlpn("P").verdict, Verdict::kNotTls);
  EXPECT_EQ(ReadClientHelloAlpn(std::string("\x16\x07", 2)).verdict, Verdict::kNotTls);
  EXPECT_EQ(ReadClientHelloAlpn("").verdict, Verdict::kNeedMore);
  EXPECT_EQ(ReadClientHelloAlpn(std::string("\x16", 1)).verdict, Verdict::kNeedMore);
}

TEST(TlsClientHelloTest, MalformedHellosAreRefusedNotRead) {
  const std::string hello = ClientHelloOffering({"h2", "http/1.1"});
  // Every single-byte corruption of the hello either still parses or is refused; none reads past
  // the bytes given (the sanitizers would say) and none claims protocols that were not there.
  for (size_t i = 0; i < hello.size(); ++i) {
    for (unsigned char flip : {0x01, 0x80, 0xff}) {
      std::string bad = hello;
      bad[i] = static_cast<char>(bad[i] ^ flip);
      ClientHelloAlpn r = ReadClientHelloAlpn(bad);
      if (r.verdict == Verdict::kNeedMore) {
        EXPECT_GT(r.needed_bytes, bad.size()) << "byte " << i;
      }
      if (r.verdict == Verdict::kRead) {
        EXPECT_LE(r.protocols.size(), 2u) << "byte " << i;
      }
    }
  }
  // A record too long for TLS, and a hello claiming more than any client sends.
  EXPECT_EQ(ReadClientHelloAlpn(std::string("\x16\x03\x01\xff\xff", 5)).verdict, Verdict::kNotTls);
  std::string huge = hello.substr(0, 5) + std::string("\x01\x7f\xff\xff", 4);
  huge[3] = 0;
  huge[4] = 4;
  EXPECT_EQ(ReadClientHelloAlpn(huge).verdict, Verdict::kNotTls);
  // Not a ClientHello (a ServerHello's type).
  std::string server_hello = hello;
  server_hello[5] = 2;
  EXPECT_EQ(ReadClientHelloAlpn(server_hello).verdict, Verdict::kNotTls);
  // An empty protocol name in the ALPN list.
  std::string empty_name = ClientHelloOffering({"h2"});
  const size_t list = empty_name.find(std::string("\x00\x03\x02h2", 5));
  ASSERT_NE(list, std::string::npos);
  empty_name[list + 2] = 0;
  EXPECT_EQ(ReadClientHelloAlpn(empty_name).verdict, Verdict::kNotTls);
}

}  // namespace
}  // namespace leasehold::server
