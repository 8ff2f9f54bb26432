#!/usr/bin/env python3
"""Fails (exit 1) when a source file includes a header of a layer it may not depend on.

Every folder below is one library; LAYERS says which other folders each may include from (what
they depend on transitively is allowed too). Beyond that:
- common/, raft/ and storage/ include no gRPC (generated *.grpc.pb.h or <grpcpp/...>);
- raft/ includes no threads, clocks or sockets: it is a pure state machine.
Generated message headers (*.pb.h) may be included anywhere. The build runs this before compiling
the server (server/CMakeLists.txt), so an include that points up fails the build.

usage: check_layers.py REPO_ROOT
"""
import os
import re
import sys

LAYERS = {
    "common": [],
    "raft": [],
    "storage/backend": ["common", "raft"],
    "storage/mvcc": ["storage/backend"],
    "storage/lease": ["storage/backend"],
    "storage/cluster": ["storage/backend"],
    "storage/auth": ["storage/backend"],
    "storage/blob": ["storage/backend"],
    "storage/apply": ["storage/mvcc", "storage/lease", "storage/cluster", "storage/auth", "storage/blob"],
    "storage/backup": ["storage/cluster", "storage/auth"],
    "client": [],
    "server/observability": ["common"],
    "server/tls": ["server/observability"],
    "server/peer": ["server/tls", "storage/cluster"],
    "server/auth": ["server/tls", "storage/auth"],
    "server/watch": ["server/observability", "storage/apply", "client"],
    "server/member": ["server/peer", "server/auth", "server/watch", "storage/apply", "storage/backup"],
    "server/api": ["server/member", "client"],
    "server/corruption": ["server/api"],
    "server/http": ["server/member"],
    "server/blob": ["server/http"],
    "server/command": ["server/corruption", "server/blob"],
}
NO_GRPC = ("common", "raft", "storage/")
RAFT_FORBIDDEN = {"thread", "chrono", "mutex", "condition_variable", "future", "ctime", "sys/socket.h", "sys/time.h"}
INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]', re.M)


def closure(layer, seen=None):
    seen = set() if seen is None else seen
    for dep in LAYERS[layer]:
        if dep not in seen:
            seen.add(dep)
            closure(dep, seen)
    return seen


def layer_of(path):
    """The layer a repository path (file or included header) belongs to, or None."""
    for layer in sorted(LAYERS, key=len, reverse=True):
        if path.startswith(layer + "/"):
            return layer
    return None


def main(root):
    problems = []
    for layer in LAYERS:
        allowed = closure(layer) | {layer}
        top = os.path.join(root, layer)
        for dirpath, _, files in os.walk(top):
            for name in files:
                if not name.endswith((".h", ".cc")):
                    continue
                path = os.path.join(dirpath, name)
                rel = os.path.relpath(path, root)
                if layer_of(rel) != layer:
                    continue  # a deeper folder is a layer of its own
                with open(path, encoding="utf-8") as f:
                    text = f.read()
                for kind, header in INCLUDE.findall(text):
                    grpc = header.startswith("grpcpp/") or header.startswith("grpc/") or header.endswith(".grpc.pb.h")
                    if grpc and layer.startswith(NO_GRPC):
                        problems.append(f"{rel}: includes {header}, but {layer} knows nothing of gRPC")
                    if layer == "raft" and kind == "<" and header in RAFT_FORBIDDEN:
                        problems.append(f"{rel}: includes <{header}>, but raft touches no threads, clocks or sockets")
                    if kind != '"' or header.endswith(".pb.h"):
                        continue
                    target = layer_of(header)
                    if target is not None and target not in allowed:
                        problems.append(f"{rel}: includes {header}, but {layer} may not depend on {target}")
    for p in problems:
        print("layering: " + p, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..")))
