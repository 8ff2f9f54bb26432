// Owning pointers for OpenSSL objects, freed with OpenSSL's own free function.
#pragma once

#include <memory>

#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/x509.h>

namespace leasehold::server {

template <auto Free>
struct OpenSslFreer {
  template <typename T>
  void operator()(T* p) const {
    Free(p);
  }
};
template <typename T, auto Free>
using OpenSslPtr = std::unique_ptr<T, OpenSslFreer<Free>>;

using EvpKey = OpenSslPtr<EVP_PKEY, EVP_PKEY_free>;
using X509Cert = OpenSslPtr<X509, X509_free>;

}  // namespace leasehold::server
