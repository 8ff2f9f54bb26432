"""A gRPC client (Python's grpcio, C-core) that pings its connection every second, to see a server's
keepalive policy: it makes one etcd call and, with "stream", opens a watch stream it keeps quiet;
then it idles for a few seconds while pinging, and prints "goaway" if the server sent GOAWAY
meanwhile (the channel left READY), else "kept".
usage: grpc_pinger.py HOST:PORT stream|nostream [SECONDS]"""
import queue
import sys
import threading
import time

import grpc
from etcd3.etcdrpc import rpc_pb2, rpc_pb2_grpc

endpoint, mode = sys.argv[1], sys.argv[2]
idle = float(sys.argv[3]) if len(sys.argv) > 3 else 6
options = [
    ("grpc.keepalive_time_ms", 1000),
    ("grpc.keepalive_timeout_ms", 5000),
    ("grpc.keepalive_permit_without_calls", 1),
    ("grpc.http2.max_pings_without_data", 0),
    ("grpc.http2.min_time_between_pings_ms", 1000),
]
channel = grpc.insecure_channel(endpoint, options=options)
states = []
channel.subscribe(states.append, try_to_connect=True)
# One call brings the connection up (READY); its answer is not needed.
rpc_pb2_grpc.KVStub(channel).Range(rpc_pb2.RangeRequest(key=b"ping"), timeout=5)
done = queue.Queue()


def watch_requests():
    """One watch, then nothing until the end: the stream stays open and quiet."""
    yield rpc_pb2.WatchRequest(create_request=rpc_pb2.WatchCreateRequest(key=b"quiet"))
    done.get()


def drain(responses):
    for _ in responses:
        pass


if mode == "stream":
    watch = rpc_pb2_grpc.WatchStub(channel).Watch(watch_requests())
    threading.Thread(target=drain, args=(watch,), daemon=True).start()
time.sleep(idle)
seen_ready = went_away = False
for state in states:
    if state == grpc.ChannelConnectivity.READY:
        seen_ready = True
    elif seen_ready:
        went_away = True
print("goaway" if went_away else "kept")
done.put(None)
channel.close()
