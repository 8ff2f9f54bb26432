#include "server/auth/jwt_tokens.h"

#include <fstream>
#include <iterator>
#include <vector>

#include <google/protobuf/struct.pb.h>
#include <google/protobuf/util/json_util.h>
#include <openssl/bn.h>
#include <openssl/ecdsa.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rsa.h>
#include <openssl/x509.h>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "server/tls/openssl_ptr.h"

namespace leasehold::server {
namespace {

enum class Kind { kRsa, kRsaPss, kEcdsa };

struct Method {
  std::string_view name;
  Kind kind;
  const EVP_MD* (*digest)();
  int coordinate_bytes;  // ECDSA: the size of r and of s in the signature
};

constexpr Method kMethods[] = {
    {"RS256", Kind::kRsa, EVP_sha256, 0},    {"RS384", Kind::kRsa, EVP_sha384, 0},
    {"RS512", Kind::kRsa, EVP_sha512, 0},    {"PS256", Kind::kRsaPss, EVP_sha256, 0},
    {"PS384", Kind::kRsaPss, EVP_sha384, 0}, {"PS512", Kind::kRsaPss, EVP_sha512, 0},
    {"ES256", Kind::kEcdsa, EVP_sha256, 32}, {"ES384", Kind::kEcdsa, EVP_sha384, 48},
    {"ES512", Kind::kEcdsa, EVP_sha512, 66},
};

const Method* FindMethod(std::string_view name) {
  for (const Method& m : kMethods) {
    if (m.name == name) return &m;
  }
  return nullptr;
}

using Key = EvpKey;
using DigestContext = OpenSslPtr<EVP_MD_CTX, EVP_MD_CTX_free>;
using Bio = OpenSslPtr<BIO, BIO_free>;
using Cert = X509Cert;
using EcdsaSignature = OpenSslPtr<ECDSA_SIG, ECDSA_SIG_free>;

absl::StatusOr<std::string> ReadFile(const std::string& path, const char* what) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return absl::InvalidArgumentError(absl::StrCat("cannot read the JWT ", what, " '", path, "'"));
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

Bio MemoryBio(const std::string& data) {
  return Bio(BIO_new_mem_buf(data.data(), static_cast<int>(data.size())));
}

// A PEM public key, or the key of a PEM certificate (etcd's examples pass the server certificate).
Key ReadPublicKey(const std::string& pem) {
  Bio bio = MemoryBio(pem);
  if (Key key(PEM_read_bio_PUBKEY(bio.get(), nullptr, nullptr, nullptr)); key) return key;
  bio = MemoryBio(pem);
  Cert cert(PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr));
  ERR_clear_error();  // the first attempt's, which no one else should read as theirs
  return Key(cert ? X509_get_pubkey(cert.get()) : nullptr);
}

bool FitsMethod(EVP_PKEY* key, const Method& method) {
  return EVP_PKEY_get_base_id(key) == (method.kind == Kind::kEcdsa ? EVP_PKEY_EC : EVP_PKEY_RSA);
}

bool SetPadding(EVP_PKEY_CTX* context, const Method& method, bool signing) {
  if (method.kind != Kind::kRsaPss) return true;
  return EVP_PKEY_CTX_set_rsa_padding(context, RSA_PKCS1_PSS_PADDING) > 0 &&
         EVP_PKEY_CTX_set_rsa_pss_saltlen(
             context, signing ? RSA_PSS_SALTLEN_DIGEST : RSA_PSS_SALTLEN_AUTO) > 0;
}

// JWT's ECDSA signatures are r and s side by side, each of a fixed size; OpenSSL's are DER.
std::optional<std::string> DerToJose(const std::string& der, int coordinate_bytes) {
  const unsigned char* p = reinterpret_cast<const unsigned char*>(der.data());
  EcdsaSignature signature(d2i_ECDSA_SIG(nullptr, &p, static_cast<long>(der.size())));
  if (!signature) return std::nullopt;
  const BIGNUM *r = nullptr, *s = nullptr;
  ECDSA_SIG_get0(signature.get(), &r, &s);
  std::string out(2 * static_cast<size_t>(coordinate_bytes), '\0');
  auto* bytes = reinterpret_cast<unsigned char*>(out.data());
  if (BN_bn2binpad(r, bytes, coordinate_bytes) < 0 ||
      BN_bn2binpad(s, bytes + coordinate_bytes, coordinate_bytes) < 0) {
    return std::nullopt;
  }
  return out;
}

std::optional<std::string> JoseToDer(std::string_view jose, int coordinate_bytes) {
  if (jose.size() != 2 * static_cast<size_t>(coordinate_bytes)) return std::nullopt;
  const auto* bytes = reinterpret_cast<const unsigned char*>(jose.data());
  EcdsaSignature signature(ECDSA_SIG_new());
  BIGNUM* r = BN_bin2bn(bytes, coordinate_bytes, nullptr);
  BIGNUM* s = BN_bin2bn(bytes + coordinate_bytes, coordinate_bytes, nullptr);
  if (!signature || r == nullptr || s == nullptr || ECDSA_SIG_set0(signature.get(), r, s) != 1) {
    BN_free(r);
    BN_free(s);
    return std::nullopt;
  }
  const int size = i2d_ECDSA_SIG(signature.get(), nullptr);
  if (size <= 0) return std::nullopt;
  std::string der(static_cast<size_t>(size), '\0');
  auto* out = reinterpret_cast<unsigned char*>(der.data());
  i2d_ECDSA_SIG(signature.get(), &out);
  return der;
}

// Debian's Abseil has its own string_view, not std's.
absl::string_view AsAbsl(std::string_view s) { return absl::string_view(s.data(), s.size()); }
std::string_view AsStd(absl::string_view s) { return std::string_view(s.data(), s.size()); }

std::optional<google::protobuf::Struct> DecodeJson(absl::string_view base64) {
  std::string json;
  if (!absl::WebSafeBase64Unescape(base64, &json)) return std::nullopt;
  google::protobuf::Struct object;
  if (!google::protobuf::util::JsonStringToMessage(json, &object).ok()) return std::nullopt;
  return object;
}

std::string EncodeJson(const google::protobuf::Struct& object) {
  std::string json;
  (void)google::protobuf::util::MessageToJsonString(object, &json);
  return absl::WebSafeBase64Escape(json);
}

}  // namespace

struct JwtTokens::Keys {
  const Method* method = nullptr;
  Key public_key;
  Key private_key;
};

absl::StatusOr<JwtOptions> ParseJwtOptions(std::string_view flag_value) {
  std::vector<absl::string_view> parts = absl::StrSplit(AsAbsl(flag_value), ',');
  if (parts.empty() || parts[0] != "jwt")
    return absl::InvalidArgumentError("not a jwt token option");
  JwtOptions options;
  for (size_t i = 1; i < parts.size(); ++i) {
    std::pair<absl::string_view, absl::string_view> kv =
        absl::StrSplit(parts[i], absl::MaxSplits('=', 1));
    if (kv.first == "pub-key") {
      options.public_key_file = std::string(kv.second);
    } else if (kv.first == "priv-key") {
      options.private_key_file = std::string(kv.second);
    } else if (kv.first == "sign-method") {
      options.sign_method = std::string(kv.second);
    } else if (kv.first == "ttl") {
      if (!absl::ParseDuration(kv.second, &options.ttl) || options.ttl <= absl::ZeroDuration()) {
        return absl::InvalidArgumentError(
            absl::StrCat("invalid ttl option '", kv.second, "' (e.g. 5m, 30s)"));
      }
    } else {
      return absl::InvalidArgumentError(absl::StrCat("unknown token option '", kv.first, "'"));
    }
  }
  if (options.sign_method.empty()) return absl::InvalidArgumentError("jwt tokens need sign-method");
  if (FindMethod(options.sign_method) == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("unsupported sign-method '", options.sign_method,
                     "' (RS256/384/512, PS256/384/512, ES256/384/512)"));
  }
  if (options.public_key_file.empty()) return absl::InvalidArgumentError("jwt tokens need pub-key");
  return options;
}

JwtTokens::JwtTokens(JwtOptions options, std::unique_ptr<Keys> keys)
    : options_(std::move(options)), keys_(std::move(keys)) {}
JwtTokens::~JwtTokens() = default;

absl::StatusOr<std::unique_ptr<JwtTokens>> JwtTokens::Load(const JwtOptions& options) {
  auto keys = std::make_unique<Keys>();
  keys->method = FindMethod(options.sign_method);
  if (keys->method == nullptr)
    return absl::InvalidArgumentError("unsupported sign-method '" + options.sign_method + "'");
  absl::StatusOr<std::string> public_pem = ReadFile(options.public_key_file, "public key");
  if (!public_pem.ok()) return public_pem.status();
  keys->public_key = ReadPublicKey(*public_pem);
  if (!keys->public_key || !FitsMethod(keys->public_key.get(), *keys->method)) {
    return absl::InvalidArgumentError(absl::StrCat("'", options.public_key_file, "' holds no ",
                                                   options.sign_method,
                                                   " public key or certificate"));
  }
  if (!options.private_key_file.empty()) {
    absl::StatusOr<std::string> private_pem = ReadFile(options.private_key_file, "private key");
    if (!private_pem.ok()) return private_pem.status();
    Bio bio = MemoryBio(*private_pem);
    keys->private_key.reset(PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, nullptr));
    if (!keys->private_key || !FitsMethod(keys->private_key.get(), *keys->method)) {
      return absl::InvalidArgumentError(absl::StrCat("'", options.private_key_file, "' holds no ",
                                                     options.sign_method, " private key"));
    }
  }
  return std::unique_ptr<JwtTokens>(new JwtTokens(options, std::move(keys)));
}

absl::StatusOr<std::string> JwtTokens::Sign(std::string_view user, uint64_t revision,
                                            absl::Time now) const {
  if (!keys_->private_key)
    return absl::FailedPreconditionError("auth: token signing attempted with verify-only key");
  google::protobuf::Struct header, claims;
  (*header.mutable_fields())["alg"].set_string_value(std::string(keys_->method->name));
  (*header.mutable_fields())["typ"].set_string_value("JWT");
  (*claims.mutable_fields())["username"].set_string_value(std::string(user));
  (*claims.mutable_fields())["revision"].set_number_value(static_cast<double>(revision));
  (*claims.mutable_fields())["exp"].set_number_value(
      static_cast<double>(absl::ToUnixSeconds(now + options_.ttl)));
  const std::string signed_part = absl::StrCat(EncodeJson(header), ".", EncodeJson(claims));

  DigestContext context(EVP_MD_CTX_new());
  EVP_PKEY_CTX* key_context = nullptr;
  size_t size = 0;
  if (!context ||
      EVP_DigestSignInit(context.get(), &key_context, keys_->method->digest(), nullptr,
                         keys_->private_key.get()) != 1 ||
      !SetPadding(key_context, *keys_->method, /*signing=*/true) ||
      EVP_DigestSign(context.get(), nullptr, &size,
                     reinterpret_cast<const unsigned char*>(signed_part.data()),
                     signed_part.size()) != 1) {
    return absl::InternalError("cannot sign a JWT");
  }
  std::string signature(size, '\0');
  if (EVP_DigestSign(context.get(), reinterpret_cast<unsigned char*>(signature.data()), &size,
                     reinterpret_cast<const unsigned char*>(signed_part.data()),
                     signed_part.size()) != 1) {
    return absl::InternalError("cannot sign a JWT");
  }
  signature.resize(size);
  if (keys_->method->kind == Kind::kEcdsa) {
    std::optional<std::string> jose = DerToJose(signature, keys_->method->coordinate_bytes);
    if (!jose) return absl::InternalError("cannot encode a JWT's ECDSA signature");
    signature = std::move(*jose);
  }
  return absl::StrCat(signed_part, ".", absl::WebSafeBase64Escape(signature));
}

std::optional<JwtTokens::Claims> JwtTokens::Verify(std::string_view token, absl::Time now) const {
  std::vector<absl::string_view> parts = absl::StrSplit(AsAbsl(token), '.');
  if (parts.size() != 3) return std::nullopt;
  // The algorithm is ours, not the token's to choose.
  std::optional<google::protobuf::Struct> header = DecodeJson(parts[0]);
  if (!header) return std::nullopt;
  auto alg = header->fields().find("alg");
  if (alg == header->fields().end() || AsStd(alg->second.string_value()) != keys_->method->name)
    return std::nullopt;

  std::string signature;
  if (!absl::WebSafeBase64Unescape(parts[2], &signature)) return std::nullopt;
  if (keys_->method->kind == Kind::kEcdsa) {
    std::optional<std::string> der = JoseToDer(signature, keys_->method->coordinate_bytes);
    if (!der) return std::nullopt;
    signature = std::move(*der);
  }
  const std::string_view signed_part = token.substr(0, parts[0].size() + 1 + parts[1].size());
  DigestContext context(EVP_MD_CTX_new());
  EVP_PKEY_CTX* key_context = nullptr;
  if (!context ||
      EVP_DigestVerifyInit(context.get(), &key_context, keys_->method->digest(), nullptr,
                           keys_->public_key.get()) != 1 ||
      !SetPadding(key_context, *keys_->method, /*signing=*/false) ||
      EVP_DigestVerify(context.get(), reinterpret_cast<const unsigned char*>(signature.data()),
                       signature.size(), reinterpret_cast<const unsigned char*>(signed_part.data()),
                       signed_part.size()) != 1) {
    ERR_clear_error();
    return std::nullopt;
  }

  std::optional<google::protobuf::Struct> claims = DecodeJson(parts[1]);
  if (!claims) return std::nullopt;
  const auto& fields = claims->fields();
  auto user = fields.find("username"), revision = fields.find("revision"), exp = fields.find("exp");
  if (user == fields.end() || !user->second.has_string_value() || revision == fields.end() ||
      !revision->second.has_number_value() || revision->second.number_value() < 0 ||
      exp == fields.end() || !exp->second.has_number_value() ||
      exp->second.number_value() < static_cast<double>(absl::ToUnixSeconds(now))) {
    return std::nullopt;
  }
  return Claims{user->second.string_value(),
                static_cast<uint64_t>(revision->second.number_value())};
}

}  // namespace leasehold::server
