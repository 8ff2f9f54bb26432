#include "server/tls/certificate_rules.h"

#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include <openssl/ec.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include "gtest/gtest.h"
#include "server/tls/openssl_ptr.h"

namespace leasehold::server {
namespace {

using Crl = OpenSslPtr<X509_CRL, X509_CRL_free>;
using Bio = OpenSslPtr<BIO, BIO_free>;

EvpKey NewKey() { return EvpKey(EVP_EC_gen("P-256")); }

// A certificate with common name `cn`, serial `serial` and subjectAltName `sans` (none when empty).
// The rules never look at signatures (gRPC and OpenSSL have checked the chain before), so it signs
// itself.
X509Cert MakeCert(const std::string& cn, long serial, const std::string& sans, EVP_PKEY* key) {
  X509Cert cert(X509_new());
  X509_set_version(cert.get(), 2);
  ASN1_INTEGER_set(X509_get_serialNumber(cert.get()), serial);
  X509_gmtime_adj(X509_getm_notBefore(cert.get()), 0);
  X509_gmtime_adj(X509_getm_notAfter(cert.get()), 3600);
  X509_NAME* name = X509_get_subject_name(cert.get());
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                             reinterpret_cast<const unsigned char*>(cn.c_str()), -1, -1, 0);
  X509_set_issuer_name(cert.get(), name);
  X509_set_pubkey(cert.get(), key);
  if (!sans.empty()) {
    X509V3_CTX ctx;
    X509V3_set_ctx_nodb(&ctx);
    X509V3_set_ctx(&ctx, cert.get(), cert.get(), nullptr, nullptr, 0);
    OpenSslPtr<X509_EXTENSION, X509_EXTENSION_free> ext(
        X509V3_EXT_conf_nid(nullptr, &ctx, NID_subject_alt_name, sans.c_str()));
    X509_add_ext(cert.get(), ext.get(), -1);
  }
  X509_sign(cert.get(), key, EVP_sha256());
  return cert;
}

// A revocation list of `serials`, in PEM or DER.
std::string MakeCrl(const std::vector<long>& serials, EVP_PKEY* key, bool pem) {
  Crl crl(X509_CRL_new());
  X509_CRL_set_version(crl.get(), 1);
  X509_NAME* issuer = X509_NAME_new();
  X509_NAME_add_entry_by_txt(issuer, "CN", MBSTRING_ASC,
                             reinterpret_cast<const unsigned char*>("ca"), -1, -1, 0);
  X509_CRL_set_issuer_name(crl.get(), issuer);
  X509_NAME_free(issuer);
  OpenSslPtr<ASN1_TIME, ASN1_TIME_free> now(ASN1_TIME_adj(nullptr, time(nullptr), 0, 0));
  X509_CRL_set1_lastUpdate(crl.get(), now.get());
  for (long serial : serials) {
    X509_REVOKED* revoked = X509_REVOKED_new();
    OpenSslPtr<ASN1_INTEGER, ASN1_INTEGER_free> number(ASN1_INTEGER_new());
    ASN1_INTEGER_set(number.get(), serial);
    X509_REVOKED_set_serialNumber(revoked, number.get());
    X509_REVOKED_set_revocationDate(revoked, now.get());
    X509_CRL_add0_revoked(crl.get(), revoked);
  }
  X509_CRL_sign(crl.get(), key, EVP_sha256());
  Bio out(BIO_new(BIO_s_mem()));
  if (pem) {
    PEM_write_bio_X509_CRL(out.get(), crl.get());
  } else {
    i2d_X509_CRL_bio(out.get(), crl.get());
  }
  char* data = nullptr;
  const long size = BIO_get_mem_data(out.get(), &data);
  return std::string(data, static_cast<size_t>(size));
}

std::string Pem(X509* cert) {
  Bio out(BIO_new(BIO_s_mem()));
  PEM_write_bio_X509(out.get(), cert);
  char* data = nullptr;
  const long size = BIO_get_mem_data(out.get(), &data);
  return std::string(data, static_cast<size_t>(size));
}

class CertificateRulesTest : public ::testing::Test {
 protected:
  void TearDown() override { std::remove(crl_path_.c_str()); }
  // Writes the revocation list into the rules' file.
  void WriteCrl(const std::string& contents) {
    std::ofstream(crl_path_, std::ios::binary | std::ios::trunc) << contents;
    rules_.crl_file = crl_path_;
  }
  absl::Status Check(const std::vector<X509*>& presented) {
    return CheckPresentedCertificates(rules_, presented);
  }

  const std::string crl_path_ =
      ::testing::TempDir() + "/rules-test-" + std::to_string(getpid()) + ".crl";
  EvpKey key_ = NewKey();
  TlsFiles rules_;
};

TEST_F(CertificateRulesTest, RevokedSerialRefusedWithEtcdsWords) {
  X509Cert good = MakeCert("client", 499, "", key_.get()),
           bad = MakeCert("client", 500, "", key_.get());
  WriteCrl(MakeCrl({500, 77}, key_.get(), /*pem=*/true));
  EXPECT_TRUE(Check({good.get()}).ok());
  absl::Status st = Check({bad.get()});
  EXPECT_EQ(st.code(), absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(st.message(),
            "transport: certificate serial 01f4 revoked");  // Go's %x of the serial's bytes
  // Every certificate the other side sent counts, as in etcd: a revoked intermediate too.
  EXPECT_FALSE(Check({good.get(), bad.get()}).ok());
}

TEST_F(CertificateRulesTest, DerListAndReadAgainForEachCheck) {
  X509Cert cert = MakeCert("client", 42, "", key_.get());
  WriteCrl(MakeCrl({7}, key_.get(), /*pem=*/false));
  EXPECT_TRUE(ValidateCertificateRules(rules_).ok());
  EXPECT_TRUE(Check({cert.get()}).ok());
  WriteCrl(MakeCrl({7, 42}, key_.get(), /*pem=*/false));  // a newer list, no restart
  EXPECT_EQ(Check({cert.get()}).code(), absl::StatusCode::kPermissionDenied);
}

TEST_F(CertificateRulesTest, BadListsAreNamed) {
  rules_.crl_file = "/nonexistent/list.crl";
  EXPECT_EQ(ValidateCertificateRules(rules_).message(),
            "cannot read the certificate revocation list '/nonexistent/list.crl'");
  WriteCrl("-----BEGIN X509 CRL-----\nnot base64\n-----END X509 CRL-----\n");
  absl::Status st = ValidateCertificateRules(rules_);
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("is not a certificate revocation list"), std::string::npos) << st;
  // A list that has become unreadable refuses certificates rather than letting them through.
  X509Cert cert = MakeCert("client", 1, "", key_.get());
  EXPECT_FALSE(Check({cert.get()}).ok());
}

TEST_F(CertificateRulesTest, CommonNameAndHostNameAreMutuallyExclusive) {
  rules_.allowed_cn = "peer";
  rules_.allowed_hostname = "localhost";
  absl::Status st = ValidateCertificateRules(rules_);
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(
      st.message(),
      "AllowedCN and AllowedHostname are mutually exclusive (cn=\"peer\", hostname=\"localhost\")");
}

TEST_F(CertificateRulesTest, AllowedCommonNameIsTheLeafs) {
  rules_.allowed_cn = "peer";
  X509Cert peer = MakeCert("peer", 1, "", key_.get()), other = MakeCert("peers", 2, "", key_.get());
  EXPECT_TRUE(Check({peer.get()}).ok());
  absl::Status st = Check({other.get(), peer.get()});
  EXPECT_EQ(st.code(), absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(st.message(), "client certificate authentication failed");
  EXPECT_TRUE(Check({}).ok());  // nothing presented: nothing was asked for
}

TEST_F(CertificateRulesTest, AllowedHostNameMatchesSubjectAltNamesOnly) {
  X509Cert dns = MakeCert("x", 1, "DNS:node1.example.com,DNS:*.peers.example.com", key_.get());
  X509Cert ip = MakeCert("x", 2, "IP:10.0.0.7,IP:::1", key_.get());
  X509Cert cn_only = MakeCert("node1.example.com", 3, "", key_.get());
  auto allowed = [&](const std::string& host, X509* cert) {
    rules_.allowed_hostname = host;
    return Check({cert}).ok();
  };
  EXPECT_TRUE(allowed("node1.example.com", dns.get()));
  EXPECT_TRUE(allowed("NODE1.example.com", dns.get()));
  EXPECT_TRUE(allowed("a.peers.example.com", dns.get()));
  EXPECT_FALSE(allowed("a.b.peers.example.com", dns.get()));  // a wildcard is one label
  EXPECT_FALSE(allowed("node2.example.com", dns.get()));
  EXPECT_TRUE(allowed("10.0.0.7", ip.get()));
  EXPECT_TRUE(allowed("[::1]", ip.get()));
  EXPECT_FALSE(allowed("10.0.0.8", ip.get()));
  EXPECT_FALSE(allowed("node1.example.com", cn_only.get()));  // never the common name, as Go
}

TEST_F(CertificateRulesTest, PemChainLeafFirstRepeatSkipped) {
  rules_.allowed_cn = "peer";
  X509Cert peer = MakeCert("peer", 9, "", key_.get()), ca = MakeCert("ca", 10, "", key_.get());
  EXPECT_TRUE(CheckPresentedPem(rules_, Pem(peer.get()) + Pem(peer.get()) + Pem(ca.get())).ok());
  EXPECT_FALSE(CheckPresentedPem(rules_, Pem(ca.get()) + Pem(peer.get())).ok());
  WriteCrl(MakeCrl({10}, key_.get(), /*pem=*/true));
  EXPECT_EQ(CheckPresentedPem(rules_, Pem(peer.get()) + Pem(ca.get())).message(),
            "transport: certificate serial 0a revoked");
  EXPECT_TRUE(CheckPresentedPem(rules_, "").ok());
}

TEST(GoHostnameErrorTest, NamesWhatTheCertificateIsValidForAsGoDoes) {
  EvpKey key = NewKey();
  X509Cert ips = MakeCert("c", 1, "IP:10.0.0.1,IP:10.0.0.2", key.get());
  EXPECT_EQ(GoHostnameError(ips.get(), "10.0.0.3"),
            "x509: certificate is valid for 10.0.0.1, 10.0.0.2, not 10.0.0.3");
  X509Cert names = MakeCert("c", 2, "DNS:a.example,DNS:b.example", key.get());
  EXPECT_EQ(GoHostnameError(names.get(), "10.0.0.3"),
            "x509: cannot validate certificate for 10.0.0.3 because it doesn't contain any IP SANs");
  EXPECT_EQ(GoHostnameError(names.get(), "c.example"),
            "x509: certificate is valid for a.example, b.example, not c.example");
  X509Cert legacy = MakeCert("c.example", 3, "", key.get());
  EXPECT_EQ(GoHostnameError(legacy.get(), "c.example"),
            "x509: certificate relies on legacy Common Name field, use SANs instead");
  EXPECT_EQ(GoHostnameError(legacy.get(), "d.example"),
            "x509: certificate is not valid for any names, but wanted to match d.example");
}

}  // namespace
}  // namespace leasehold::server
