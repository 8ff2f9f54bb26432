#include "server/http/json_gateway.h"

#include <cctype>
#include <map>
#include <string_view>
#include <vector>

#include <google/protobuf/util/json_util.h>
#include <grpcpp/support/byte_buffer.h>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "etcdserverpb/rpc.pb.h"
#include "v3electionpb/v3election.pb.h"
#include "v3lockpb/v3lock.pb.h"

namespace leasehold::server {
namespace {

namespace http = boost::beast::http;
using google::protobuf::Message;

struct Route {
  const char* method;      // the gRPC method's full name
  const Message* request;  // prototypes of its messages
  const Message* response;
};

template <typename Request, typename Response>
Route R(const char* method) {
  return Route{method, &Request::default_instance(), &Response::default_instance()};
}

const std::map<std::string, Route, std::less<>>& Routes() {
  namespace pb = etcdserverpb;
  static const auto* routes = new std::map<std::string, Route, std::less<>>{
      {"kv/range", R<pb::RangeRequest, pb::RangeResponse>("/etcdserverpb.KV/Range")},
      {"kv/put", R<pb::PutRequest, pb::PutResponse>("/etcdserverpb.KV/Put")},
      {"kv/deleterange",
       R<pb::DeleteRangeRequest, pb::DeleteRangeResponse>("/etcdserverpb.KV/DeleteRange")},
      {"kv/txn", R<pb::TxnRequest, pb::TxnResponse>("/etcdserverpb.KV/Txn")},
      {"kv/compaction",
       R<pb::CompactionRequest, pb::CompactionResponse>("/etcdserverpb.KV/Compact")},
      {"lease/grant",
       R<pb::LeaseGrantRequest, pb::LeaseGrantResponse>("/etcdserverpb.Lease/LeaseGrant")},
      {"lease/revoke",
       R<pb::LeaseRevokeRequest, pb::LeaseRevokeResponse>("/etcdserverpb.Lease/LeaseRevoke")},
      {"kv/lease/revoke",
       R<pb::LeaseRevokeRequest, pb::LeaseRevokeResponse>("/etcdserverpb.Lease/LeaseRevoke")},
      {"lease/timetolive", R<pb::LeaseTimeToLiveRequest, pb::LeaseTimeToLiveResponse>(
                               "/etcdserverpb.Lease/LeaseTimeToLive")},
      {"kv/lease/timetolive", R<pb::LeaseTimeToLiveRequest, pb::LeaseTimeToLiveResponse>(
                                  "/etcdserverpb.Lease/LeaseTimeToLive")},
      {"lease/leases",
       R<pb::LeaseLeasesRequest, pb::LeaseLeasesResponse>("/etcdserverpb.Lease/LeaseLeases")},
      {"kv/lease/leases",
       R<pb::LeaseLeasesRequest, pb::LeaseLeasesResponse>("/etcdserverpb.Lease/LeaseLeases")},
      {"cluster/member/list",
       R<pb::MemberListRequest, pb::MemberListResponse>("/etcdserverpb.Cluster/MemberList")},
      {"cluster/member/add",
       R<pb::MemberAddRequest, pb::MemberAddResponse>("/etcdserverpb.Cluster/MemberAdd")},
      {"cluster/member/remove",
       R<pb::MemberRemoveRequest, pb::MemberRemoveResponse>("/etcdserverpb.Cluster/MemberRemove")},
      {"cluster/member/update",
       R<pb::MemberUpdateRequest, pb::MemberUpdateResponse>("/etcdserverpb.Cluster/MemberUpdate")},
      {"cluster/member/promote", R<pb::MemberPromoteRequest, pb::MemberPromoteResponse>(
                                     "/etcdserverpb.Cluster/MemberPromote")},
      {"maintenance/status",
       R<pb::StatusRequest, pb::StatusResponse>("/etcdserverpb.Maintenance/Status")},
      {"maintenance/alarm",
       R<pb::AlarmRequest, pb::AlarmResponse>("/etcdserverpb.Maintenance/Alarm")},
      // HashKV has the same path in etcd 3.4's proto; etcd's gateway serves Hash there, and 3.5
      // gives HashKV a path of its own.
      {"maintenance/hash", R<pb::HashRequest, pb::HashResponse>("/etcdserverpb.Maintenance/Hash")},
      {"maintenance/hashkv",
       R<pb::HashKVRequest, pb::HashKVResponse>("/etcdserverpb.Maintenance/HashKV")},
      {"maintenance/downgrade",
       R<pb::DowngradeRequest, pb::DowngradeResponse>("/etcdserverpb.Maintenance/Downgrade")},
      {"maintenance/defragment",
       R<pb::DefragmentRequest, pb::DefragmentResponse>("/etcdserverpb.Maintenance/Defragment")},
      {"maintenance/transfer-leadership",
       R<pb::MoveLeaderRequest, pb::MoveLeaderResponse>("/etcdserverpb.Maintenance/MoveLeader")},
      {"lock/lock", R<v3lockpb::LockRequest, v3lockpb::LockResponse>("/v3lockpb.Lock/Lock")},
      {"lock/unlock",
       R<v3lockpb::UnlockRequest, v3lockpb::UnlockResponse>("/v3lockpb.Lock/Unlock")},
      {"election/campaign", R<v3electionpb::CampaignRequest, v3electionpb::CampaignResponse>(
                                "/v3electionpb.Election/Campaign")},
      {"election/proclaim", R<v3electionpb::ProclaimRequest, v3electionpb::ProclaimResponse>(
                                "/v3electionpb.Election/Proclaim")},
      {"election/leader", R<v3electionpb::LeaderRequest, v3electionpb::LeaderResponse>(
                              "/v3electionpb.Election/Leader")},
      {"election/resign", R<v3electionpb::ResignRequest, v3electionpb::ResignResponse>(
                              "/v3electionpb.Election/Resign")},
      {"auth/enable",
       R<pb::AuthEnableRequest, pb::AuthEnableResponse>("/etcdserverpb.Auth/AuthEnable")},
      {"auth/disable",
       R<pb::AuthDisableRequest, pb::AuthDisableResponse>("/etcdserverpb.Auth/AuthDisable")},
      {"auth/status",
       R<pb::AuthStatusRequest, pb::AuthStatusResponse>("/etcdserverpb.Auth/AuthStatus")},
      {"auth/authenticate",
       R<pb::AuthenticateRequest, pb::AuthenticateResponse>("/etcdserverpb.Auth/Authenticate")},
      {"auth/user/add",
       R<pb::AuthUserAddRequest, pb::AuthUserAddResponse>("/etcdserverpb.Auth/UserAdd")},
      {"auth/user/get",
       R<pb::AuthUserGetRequest, pb::AuthUserGetResponse>("/etcdserverpb.Auth/UserGet")},
      {"auth/user/list",
       R<pb::AuthUserListRequest, pb::AuthUserListResponse>("/etcdserverpb.Auth/UserList")},
      {"auth/user/delete",
       R<pb::AuthUserDeleteRequest, pb::AuthUserDeleteResponse>("/etcdserverpb.Auth/UserDelete")},
      {"auth/user/changepw",
       R<pb::AuthUserChangePasswordRequest, pb::AuthUserChangePasswordResponse>(
           "/etcdserverpb.Auth/UserChangePassword")},
      {"auth/user/grant", R<pb::AuthUserGrantRoleRequest, pb::AuthUserGrantRoleResponse>(
                              "/etcdserverpb.Auth/UserGrantRole")},
      {"auth/user/revoke", R<pb::AuthUserRevokeRoleRequest, pb::AuthUserRevokeRoleResponse>(
                               "/etcdserverpb.Auth/UserRevokeRole")},
      {"auth/role/add",
       R<pb::AuthRoleAddRequest, pb::AuthRoleAddResponse>("/etcdserverpb.Auth/RoleAdd")},
      {"auth/role/get",
       R<pb::AuthRoleGetRequest, pb::AuthRoleGetResponse>("/etcdserverpb.Auth/RoleGet")},
      {"auth/role/list",
       R<pb::AuthRoleListRequest, pb::AuthRoleListResponse>("/etcdserverpb.Auth/RoleList")},
      {"auth/role/delete",
       R<pb::AuthRoleDeleteRequest, pb::AuthRoleDeleteResponse>("/etcdserverpb.Auth/RoleDelete")},
      {"auth/role/grant",
       R<pb::AuthRoleGrantPermissionRequest, pb::AuthRoleGrantPermissionResponse>(
           "/etcdserverpb.Auth/RoleGrantPermission")},
      {"auth/role/revoke",
       R<pb::AuthRoleRevokePermissionRequest, pb::AuthRoleRevokePermissionResponse>(
           "/etcdserverpb.Auth/RoleRevokePermission")},
  };
  return *routes;
}

// Streaming calls served as etcd's gateway serves them: the body's one request in, every response
// out as a line {"result":...} of a chunked answer.
struct StreamRoute {
  Route route;
  // Whether the request side closes after the request. A watch stays open after its client's
  // half-close anyway; a keep-alive stream ends after answering, as etcd's does.
  bool half_close;
  // etcd's gateway watches ask for a leader, as `etcdctl watch` does.
  bool require_leader;
};

const std::map<std::string, StreamRoute, std::less<>>& StreamRoutes() {
  namespace pb = etcdserverpb;
  static const auto* routes = new std::map<std::string, StreamRoute, std::less<>>{
      {"watch", {R<pb::WatchRequest, pb::WatchResponse>("/etcdserverpb.Watch/Watch"), false, true}},
      {"lease/keepalive",
       {R<pb::LeaseKeepAliveRequest, pb::LeaseKeepAliveResponse>(
            "/etcdserverpb.Lease/LeaseKeepAlive"),
        true, false}},
      {"election/observe",
       {R<v3electionpb::LeaderRequest, v3electionpb::LeaderResponse>(
            "/v3electionpb.Election/Observe"),
        true, false}},
  };
  return *routes;
}

// Streaming calls the gateway knows of but does not serve.
bool IsUnservedStreamingCall(std::string_view call) { return call == "maintenance/snapshot"; }

// grpc-gateway's mapping of gRPC codes to HTTP statuses.
http::status HttpStatusOf(grpc::StatusCode code) {
  switch (code) {
    case grpc::StatusCode::OK:
      return http::status::ok;
    case grpc::StatusCode::CANCELLED:
      return http::status::request_timeout;
    case grpc::StatusCode::INVALID_ARGUMENT:
      return http::status::bad_request;
    case grpc::StatusCode::DEADLINE_EXCEEDED:
      return http::status::gateway_timeout;
    case grpc::StatusCode::NOT_FOUND:
      return http::status::not_found;
    case grpc::StatusCode::ALREADY_EXISTS:
      return http::status::conflict;
    case grpc::StatusCode::PERMISSION_DENIED:
      return http::status::forbidden;
    case grpc::StatusCode::UNAUTHENTICATED:
      return http::status::unauthorized;
    case grpc::StatusCode::RESOURCE_EXHAUSTED:
      return http::status::too_many_requests;
    case grpc::StatusCode::FAILED_PRECONDITION:
      return http::status::precondition_failed;
    case grpc::StatusCode::ABORTED:
      return http::status::conflict;
    case grpc::StatusCode::OUT_OF_RANGE:
      return http::status::bad_request;
    case grpc::StatusCode::UNIMPLEMENTED:
      return http::status::not_implemented;
    case grpc::StatusCode::UNAVAILABLE:
      return http::status::service_unavailable;
    default:
      return http::status::internal_server_error;
  }
}

std::string JsonString(std::string_view text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char escaped[8];
      std::snprintf(escaped, sizeof escaped, "\\u%04x", c);
      out += escaped;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

HttpResponse Json(http::status status, std::string body) {
  return MakeHttpResponse(status, "application/json", std::move(body));
}

HttpResponse Error(grpc::StatusCode code, std::string_view message) {
  // etcd 3.4's gateway writes these three fields in this order.
  return Json(HttpStatusOf(code),
              absl::StrCat("{\"error\":", JsonString(message), ",\"message\":", JsonString(message),
                           ",\"code\":", static_cast<int>(code), "}"));
}

// A path or method no call answers to: a plain-text body, as etcd's gateway (Go's http.Error)
// gives.
HttpResponse PlainError(http::status status) {
  HttpResponse response =
      MakeHttpResponse(status, "text/plain; charset=utf-8",
                       absl::StrCat(std::string(http::obsolete_reason(status)), "\n"));
  response.set("X-Content-Type-Options", "nosniff");
  return response;
}

grpc::ByteBuffer ToByteBuffer(const Message& message) {
  const std::string wire = message.SerializeAsString();
  grpc::Slice slice(wire);
  return grpc::ByteBuffer(&slice, 1);
}

bool FromByteBuffer(const grpc::ByteBuffer& buffer, Message* message) {
  std::vector<grpc::Slice> slices;
  if (!buffer.Dump(&slices).ok()) return false;
  std::string wire;
  for (const auto& s : slices) wire.append(reinterpret_cast<const char*>(s.begin()), s.size());
  return message->ParseFromString(wire);
}

absl::StatusOr<std::string> ToJson(const Message& message) {
  google::protobuf::util::JsonPrintOptions print;
  print.preserve_proto_field_names = true;
  std::string json;
  auto printed = google::protobuf::util::MessageToJsonString(message, &json, print);
  if (!printed.ok()) return absl::InternalError(std::string(printed.message()));
  return json;
}

// The top-level JSON values of a stream's body, one after another (as etcd's gateway reads a
// streaming call's requests): each object or array whole, by its brackets outside strings. Text
// that is not such a value is returned as it is, for the JSON parser to refuse.
std::vector<std::string_view> JsonValues(std::string_view body) {
  std::vector<std::string_view> values;
  size_t i = 0;
  while (true) {
    while (i < body.size() && std::isspace(static_cast<unsigned char>(body[i]))) ++i;
    if (i == body.size()) return values;
    const size_t start = i;
    if (body[i] != '{' && body[i] != '[') {
      values.push_back(body.substr(start));
      return values;
    }
    int depth = 0;
    bool in_string = false;
    for (; i < body.size(); ++i) {
      const char c = body[i];
      if (in_string) {
        if (c == '\\')
          ++i;
        else if (c == '"')
          in_string = false;
      } else if (c == '"') {
        in_string = true;
      } else if (c == '{' || c == '[') {
        ++depth;
      } else if ((c == '}' || c == ']') && --depth == 0) {
        break;
      }
    }
    if (i >= body.size()) {  // unterminated
      values.push_back(body.substr(start));
      return values;
    }
    values.push_back(body.substr(start, ++i - start));
  }
}

// A streaming call (see StreamRoutes): the body's requests in, in order, every response out as a
// line {"result":...}, on a chunked answer that lasts until the client hangs up or the call ends.
class StreamBridge : public grpc::ClientBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>,
                     public std::enable_shared_from_this<StreamBridge> {
 public:
  static void Start(grpc::GenericStub& stub, const StreamRoute& route,
                    std::vector<grpc::ByteBuffer> requests, const std::string& auth_token,
                    const HttpServer::Respond& respond) {
    auto bridge = std::make_shared<StreamBridge>();
    bridge->self_ = bridge;
    bridge->requests_ = std::move(requests);
    bridge->half_close_ = route.half_close;
    bridge->decoded_.reset(route.route.response->New());
    if (route.require_leader) bridge->context_.AddMetadata("hasleader", "true");
    if (!auth_token.empty()) bridge->context_.AddMetadata("token", auth_token);
    HttpResponse header{http::status::ok, 11};
    header.set(http::field::content_type, "application/json");
    bridge->http_ = respond.Stream(std::move(header));
    std::weak_ptr<StreamBridge> weak = bridge;
    bridge->http_->OnClosed([weak] {
      if (auto b = weak.lock()) b->context_.TryCancel();
    });
    stub.PrepareBidiStreamingCall(&bridge->context_, route.route.method, grpc::StubOptions(),
                                  bridge.get());
    bridge->WriteNext();
    bridge->StartRead(&bridge->response_);
    bridge->StartCall();
  }

  void OnWriteDone(bool ok) override {
    if (ok) WriteNext();
  }

  void OnReadDone(bool ok) override {
    if (!ok) return;
    decoded_->Clear();
    auto json = FromByteBuffer(response_, decoded_.get())
                    ? ToJson(*decoded_)
                    : absl::InternalError("unreadable response");
    if (!json.ok() || !http_->Send(absl::StrCat("{\"result\":", *json, "}\n"))) {
      context_.TryCancel();
      return;
    }
    StartRead(&response_);
  }

  void OnDone(const grpc::Status& status) override {
    if (!status.ok() && status.error_code() != grpc::StatusCode::CANCELLED) {
      http_->Send(
          absl::StrCat("{\"error\":{\"grpc_code\":", static_cast<int>(status.error_code()),
                       ",\"http_code\":", static_cast<int>(HttpStatusOf(status.error_code())),
                       ",\"message\":", JsonString(status.error_message()), "}}\n"));
    }
    http_->End();
    self_.reset();  // the last reference, unless OnClosed is running
  }

 private:
  // One write at a time: the next request once the previous one is written.
  void WriteNext() {
    if (written_ == requests_.size()) return;
    const grpc::ByteBuffer* next = &requests_[written_++];
    if (written_ == requests_.size() && half_close_) {
      StartWriteLast(next, grpc::WriteOptions());
    } else {
      StartWrite(next);
    }
  }

  grpc::ClientContext context_;
  std::vector<grpc::ByteBuffer> requests_;
  size_t written_ = 0;
  bool half_close_ = false;
  grpc::ByteBuffer response_;
  std::unique_ptr<Message> decoded_;
  std::shared_ptr<HttpStream> http_;
  std::shared_ptr<StreamBridge> self_;
};

// One gateway call in flight: owns the messages and the gRPC context until the call completes.
struct Call {
  explicit Call(HttpServer::Respond r) : respond(std::move(r)) {}
  grpc::ClientContext context;
  grpc::ByteBuffer request;
  grpc::ByteBuffer response;
  std::unique_ptr<Message> decoded;
  HttpServer::Respond respond;
};

}  // namespace

JsonGateway::JsonGateway(std::shared_ptr<grpc::Channel> in_process)
    : stub_(std::move(in_process)) {}

HttpResponse JsonGateway::TooLarge() {
  HttpResponse response =
      Error(grpc::StatusCode::INVALID_ARGUMENT, "etcdserver: request is too large");
  response.result(http::status::payload_too_large);
  return response;
}

bool JsonGateway::Serves(std::string_view path) {
  return path.starts_with("/v3/") || path.starts_with("/v3beta/");
}

void JsonGateway::Handle(HttpRequest&& request, HttpServer::Respond respond) {
  std::string_view path(request.target().data(), request.target().size());
  path = path.substr(0, path.find('?'));
  const std::string_view call = path.substr(path.find('/', 1) + 1);
  auto route = Routes().find(call);
  // etcd's gateway passes the Authorization header (a token from /v3/auth/authenticate) on to the
  // call.
  const std::string auth_token(request[http::field::authorization]);
  auto stream = StreamRoutes().find(call);
  if (route == Routes().end() && stream == StreamRoutes().end()) {
    if (IsUnservedStreamingCall(call)) {
      return respond(
          Error(grpc::StatusCode::UNIMPLEMENTED, "streaming calls are not served by this gateway"));
    }
    return respond(PlainError(http::status::not_found));
  }
  if (request.method() != http::verb::post)
    return respond(PlainError(http::status::method_not_allowed));
  // Fields this version does not know are skipped, as etcd's gateway skips them.
  google::protobuf::util::JsonParseOptions parse;
  parse.ignore_unknown_fields = true;
  if (stream != StreamRoutes().end()) {
    std::vector<std::string_view> bodies = JsonValues(request.body());
    if (bodies.empty()) bodies.push_back("{}");
    std::vector<grpc::ByteBuffer> requests;
    for (std::string_view body : bodies) {
      std::unique_ptr<Message> message(stream->second.route.request->New());
      auto parsed = google::protobuf::util::JsonStringToMessage(body, message.get(), parse);
      if (!parsed.ok())
        return respond(Error(grpc::StatusCode::INVALID_ARGUMENT, std::string(parsed.message())));
      requests.push_back(ToByteBuffer(*message));
    }
    StreamBridge::Start(stub_, stream->second, std::move(requests), auth_token, respond);
    return;
  }
  std::unique_ptr<Message> message(route->second.request->New());
  const std::string& body = request.body();
  auto parsed =
      google::protobuf::util::JsonStringToMessage(body.empty() ? "{}" : body, message.get(), parse);
  if (!parsed.ok())
    return respond(Error(grpc::StatusCode::INVALID_ARGUMENT, std::string(parsed.message())));

  auto state = std::make_shared<Call>(std::move(respond));
  state->decoded.reset(route->second.response->New());
  state->request = ToByteBuffer(*message);
  if (!auth_token.empty()) state->context.AddMetadata("token", auth_token);
  // A client that hangs up does not cancel the call (as with a gRPC unary call whose answer is
  // lost).
  stub_.UnaryCall(
      &state->context, route->second.method, grpc::StubOptions(), &state->request, &state->response,
      [state](grpc::Status status) {
        if (!status.ok()) return state->respond(Error(status.error_code(), status.error_message()));
        if (!FromByteBuffer(state->response, state->decoded.get())) {
          return state->respond(Error(grpc::StatusCode::INTERNAL, "unreadable response"));
        }
        auto json = ToJson(*state->decoded);
        if (!json.ok())
          return state->respond(
              Error(grpc::StatusCode::INTERNAL, std::string(json.status().message())));
        state->respond(Json(http::status::ok, std::move(*json)));
      });
}

}  // namespace leasehold::server
