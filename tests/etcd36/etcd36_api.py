"""etcd 3.5/3.6 additions to the v3 API, checked on the wire: raw gRPC calls whose messages are
encoded and decoded here by field number (from etcd 3.6's rpc.proto), so no generated code of any
etcd version is involved. Prints one JSON object of check name -> observed value.

usage: etcd36_api.py HOST:PORT
"""
import json
import sys

import grpc


def varint(n):
    out = bytearray()
    n &= (1 << 64) - 1
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def field(number, value):
    """One field: ints as varints, str/bytes as length-delimited."""
    if isinstance(value, int):
        return varint(number << 3) + varint(value)
    data = value.encode() if isinstance(value, str) else value
    return varint(number << 3 | 2) + varint(len(data)) + data


def decode(data):
    """field number -> list of values (ints for varints, bytes for length-delimited)."""
    fields, i = {}, 0
    while i < len(data):
        key, i = read_varint(data, i)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, i = read_varint(data, i)
        elif wire == 2:
            length, i = read_varint(data, i)
            value, i = data[i:i + length], i + length
        elif wire == 5:
            value, i = data[i:i + 4], i + 4
        elif wire == 1:
            value, i = data[i:i + 8], i + 8
        else:
            raise ValueError("wire type %d" % wire)
        fields.setdefault(number, []).append(value)
    return fields


def read_varint(data, i):
    shift = result = 0
    while True:
        b = data[i]
        i += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, i
        shift += 7


def main():
    channel = grpc.insecure_channel(sys.argv[1])
    grpc.channel_ready_future(channel).result(timeout=10)

    def call(method, request=b""):
        # No (de)serializers: the request and the answer are the bytes encoded and decoded here.
        send_raw = channel.unary_unary(method)
        try:
            answer = send_raw(request, timeout=10)
            return decode(answer), None
        except grpc.RpcError as e:
            return None, "%s %s" % (e.code().name, e.details())

    out = {}
    call("/etcdserverpb.KV/Put", field(1, b"k") + field(2, b"v"))
    status, err = call("/etcdserverpb.Maintenance/Status")
    out["status.storageVersion(11)"] = status[11][0].decode() if status and 11 in status else err
    out["status.dbSizeQuota(12)"] = status[12][0] if status and 12 in status else err
    out["status.downgradeInfo(13) present"] = bool(status and 13 in status)
    out["status.downgradeInfo.enabled"] = bool(status and decode(status[13][0]).get(1, [0])[0])
    header = decode(status[1][0])
    revision = header[3][0]

    hashkv, err = call("/etcdserverpb.Maintenance/HashKV")
    out["hashkv.hash_revision(4) at the current revision"] = (
        hashkv[4][0] == revision if hashkv and 4 in hashkv else err)
    hashkv, err = call("/etcdserverpb.Maintenance/HashKV", field(1, revision - 1))
    out["hashkv.hash_revision(4) at an earlier revision"] = (
        hashkv[4][0] == revision - 1 if hashkv and 4 in hashkv else err)

    snapshot = channel.unary_stream("/etcdserverpb.Maintenance/Snapshot",
                                    request_serializer=None, response_deserializer=None)
    versions = {decode(m).get(4, [b""])[0].decode() for m in snapshot(b"", timeout=30)}
    out["snapshot.version(4) in every message"] = sorted(versions)

    downgrade = "/etcdserverpb.Maintenance/Downgrade"
    out["downgrade validate 3.3"] = call(downgrade, field(1, 0) + field(2, "3.3"))[1]
    out["downgrade enable 3.3.0"] = call(downgrade, field(1, 1) + field(2, "3.3.0"))[1]
    out["downgrade validate x.y"] = call(downgrade, field(1, 0) + field(2, "x.y"))[1]
    out["downgrade cancel"] = call(downgrade, field(1, 2))[1]
    out["downgrade unknown action"] = call(downgrade, field(1, 7) + field(2, "3.3"))[1]

    members, err = call("/etcdserverpb.Cluster/MemberList", field(1, 1))
    out["memberlist linearizable"] = len(members[2]) if members else err

    # AuthStatus (3.5) and a user added with a bcrypt hash instead of a password (3.5's
    # hashedPassword): the password hashed is "e2e-pw".
    status, err = call("/etcdserverpb.Auth/AuthStatus")
    out["authstatus before"] = [bool(status.get(2, [0])[0]), status.get(3, [0])[0]] if status else err
    hashed = "$2b$04$MNTA0HRn70m/Kn3EYdfubumZ5Wy7tFQrO4dVvlSydBQ2GhFtWw.YW"
    out["useradd hashedPassword"] = call("/etcdserverpb.Auth/UserAdd", field(1, "root") + field(4, hashed))[1]
    call("/etcdserverpb.Auth/UserGrantRole", field(1, "root") + field(2, "root"))
    out["auth enable"] = call("/etcdserverpb.Auth/AuthEnable")[1]
    token, err = call("/etcdserverpb.Auth/Authenticate", field(1, "root") + field(2, "e2e-pw"))
    out["authenticate with the hashed password"] = bool(token and token.get(2)) or err
    status, err = channel.unary_unary("/etcdserverpb.Auth/AuthStatus", request_serializer=None,
                                      response_deserializer=None).with_call(
        b"", metadata=[("token", token[2][0].decode())] if token else [], timeout=10)[0], None
    status = decode(status)
    out["authstatus after"] = [bool(status.get(2, [0])[0]), status.get(3, [0])[0] > 0]
    # Auth off again, for the caller's checks that follow.
    channel.unary_unary("/etcdserverpb.Auth/AuthDisable", request_serializer=None,
                        response_deserializer=None)(
        b"", metadata=[("token", token[2][0].decode())] if token else [], timeout=10)
    print(json.dumps(out, indent=1, sort_keys=True))


main()
