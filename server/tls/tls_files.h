// The certificates and rules of one TLS port, as etcd's --cert-file/--peer-cert-file families of
// flags give them (see tls.h).
#pragma once

#include <string>

namespace leasehold::server {

struct TlsFiles {
  std::string cert_file;
  std::string key_file;
  std::string trusted_ca_file;
  bool client_cert_auth =
      false;  // require a certificate signed by trusted_ca_file from every client
  // The certificate is one this member made itself (--auto-tls, --peer-auto-tls): peers dialled
  // with these files are not verified, as nobody could vouch for theirs either.
  bool self_signed = false;
  // etcd's rules for presented certificates (certificate_rules.h): --client-crl-file and
  // --client-cert-allowed-hostname; --peer-crl-file, --peer-cert-allowed-cn and
  // --peer-cert-allowed-hostname.
  std::string crl_file;
  std::string allowed_cn;
  std::string allowed_hostname;
  // etcd's --cipher-suites, as an OpenSSL cipher list for TLS 1.2 (cipher_suites.h); empty: the
  // library's defaults.
  std::string cipher_list;
  // etcd's --experimental-peer-skip-client-san-verification: peers' client certificates are not
  // checked against their addresses (peer_address_check.h). Peer port only.
  bool skip_client_san_verify = false;
};

}  // namespace leasehold::server
