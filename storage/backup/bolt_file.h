// bbolt database files (the format of etcd's backend and of `etcdctl snapshot save` files): a
// writer that lays out a fresh file holding top-level buckets of sorted key/value pairs, and a
// reader for the buckets of such a file. Backups use them so that etcd's tools can open ours.
//
// What is produced: 4 KiB pages; two meta pages (transactions 0 and 1), an empty freelist, then
// each bucket's B+tree (leaf pages, then branch levels), then the root bucket's tree. Every page is
// reachable or the freelist, so bbolt's consistency check (`etcdctl snapshot status`) passes.
// The reader accepts any valid file with non-nested buckets; it checks every offset it follows, so
// a damaged or hostile file yields DataLoss, never a read out of bounds.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"

namespace leasehold::storage {

class BoltFileBuilder {
 public:
  BoltFileBuilder();
  // Starts a new top-level bucket. Names must come in ascending byte order, each once.
  void AddBucket(std::string_view name);
  // Adds a pair to the last bucket started. Keys must come in ascending byte order, each once,
  // and be non-empty.
  void Put(std::string key, std::string value);
  // The whole file. The builder is spent afterwards.
  std::string Finish();

 private:
  struct Element {
    std::string key;
    std::string value;
    bool is_bucket = false;
  };
  struct Bucket {
    std::string name;
    std::vector<Element> elements;
  };
  // Writes the tree over `elements` and returns its root page id.
  uint64_t WriteTree(std::vector<Element> elements);
  // Appends one page (plus overflow pages when `bytes` exceeds a page) and returns its id.
  uint64_t AppendPage(uint16_t flags, const std::vector<const Element*>& elements,
                      const std::vector<uint64_t>* children);

  std::vector<Bucket> buckets_;
  std::string file_;
  uint64_t next_page_ = 0;
};

// Calls `visit` for each pair of the top-level bucket `bucket` of the bbolt file in `file`, in key
// order. NotFound when the bucket is absent; DataLoss when the file is not a valid bbolt file.
[[nodiscard]] absl::Status ForEachInBoltBucket(
    std::string_view file, std::string_view bucket,
    const std::function<absl::Status(std::string_view, std::string_view)>& visit);

// Whether `file` starts like a bbolt file (a meta page with bbolt's magic number).
bool LooksLikeBoltFile(std::string_view file);

}  // namespace leasehold::storage
