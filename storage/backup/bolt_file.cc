#include "storage/backup/bolt_file.h"

#include <algorithm>
#include <optional>
#include <utility>

#include "absl/container/flat_hash_set.h"

namespace leasehold::storage {
namespace {

// bbolt's on-disk constants (little-endian structs, as on the platforms etcd ships for).
constexpr uint64_t kPageSize = 4096;
constexpr uint64_t kPageHeaderBytes = 16;  // id u64, flags u16, count u16, overflow u32
constexpr uint64_t kElementBytes = 16;  // leaf: flags, pos, ksize, vsize; branch: pos, ksize, pgid
constexpr uint16_t kBranchPage = 0x01;
constexpr uint16_t kLeafPage = 0x02;
constexpr uint16_t kMetaPage = 0x04;
constexpr uint16_t kFreelistPage = 0x10;
constexpr uint32_t kBucketElement = 0x01;
constexpr uint32_t kMagic = 0xED0CDAED;
constexpr uint32_t kVersion = 2;
constexpr uint64_t kMetaChecksummedBytes = 56;  // the meta struct up to its checksum
constexpr uint64_t kFreelistPageId = 2;
constexpr uint64_t kBucketHeaderBytes = 16;  // root page id, sequence
constexpr int kMaxDepth = 64;

template <typename T>
void Store(std::string* out, uint64_t offset, T value) {
  for (size_t i = 0; i < sizeof(T); ++i)
    (*out)[offset + i] = static_cast<char>((static_cast<uint64_t>(value) >> (8 * i)) & 0xff);
}

template <typename T>
T Load(std::string_view in, uint64_t offset) {
  uint64_t v = 0;
  for (size_t i = 0; i < sizeof(T); ++i)
    v |= static_cast<uint64_t>(static_cast<uint8_t>(in[offset + i])) << (8 * i);
  return static_cast<T>(v);
}

uint64_t Fnv1a64(std::string_view data) {
  uint64_t hash = 14695981039346656037ull;
  for (char c : data) {
    hash ^= static_cast<uint8_t>(c);
    hash *= 1099511628211ull;
  }
  return hash;
}

std::string BucketHeader(uint64_t root) {
  std::string header(kBucketHeaderBytes, '\0');
  Store<uint64_t>(&header, 0, root);  // the sequence (NextSequence) stays 0
  return header;
}

absl::Status Corrupt(std::string_view what) {
  return absl::DataLossError("not a valid bbolt file: " + std::string(what));
}

struct Meta {
  uint64_t page_size = 0;
  uint64_t root = 0;
  uint64_t high_water = 0;  // pages in use
  uint64_t txid = 0;
};

// The meta struct at `offset`, if its magic, version and checksum hold.
std::optional<Meta> ReadMeta(std::string_view file, uint64_t offset) {
  const uint64_t at = offset + kPageHeaderBytes;
  if (file.size() < at + kMetaChecksummedBytes + 8) return std::nullopt;
  if (Load<uint32_t>(file, at) != kMagic || Load<uint32_t>(file, at + 4) != kVersion)
    return std::nullopt;
  if (Load<uint64_t>(file, at + kMetaChecksummedBytes) !=
      Fnv1a64(file.substr(at, kMetaChecksummedBytes))) {
    return std::nullopt;
  }
  Meta meta;
  meta.page_size = Load<uint32_t>(file, at + 8);
  meta.root = Load<uint64_t>(file, at + 16);
  meta.high_water = Load<uint64_t>(file, at + 40);
  meta.txid = Load<uint64_t>(file, at + 48);
  return meta;
}

// Walks the tree at page `id` of `file` in key order. `visit(key, value, is_bucket)`.
class TreeWalker {
 public:
  using Visit = std::function<absl::Status(std::string_view, std::string_view, bool)>;
  TreeWalker(std::string_view file, const Meta& meta) : file_(file), meta_(meta) {}

  absl::Status WalkPageId(uint64_t id, int depth, const Visit& visit) {
    if (depth > kMaxDepth) return Corrupt("tree too deep");
    if (id < 2 || id >= meta_.high_water) return Corrupt("page id out of range");
    // A page reached twice would let a small file make the walk take exponential time.
    if (!visited_.insert(id).second) return Corrupt("page referenced twice");
    const std::string_view first = file_.substr(id * meta_.page_size, meta_.page_size);
    if (Load<uint64_t>(first, 0) != id) return Corrupt("page id mismatch");
    const uint64_t pages = 1 + uint64_t{Load<uint32_t>(first, 12)};
    if (id + pages > meta_.high_water) return Corrupt("page overflows the file");
    return WalkPage(file_.substr(id * meta_.page_size, pages * meta_.page_size), depth, visit);
  }

  // `page` holds one page and its overflow (or an inline bucket's page).
  absl::Status WalkPage(std::string_view page, int depth, const Visit& visit) {
    if (page.size() < kPageHeaderBytes) return Corrupt("short page");
    const uint16_t flags = Load<uint16_t>(page, 8);
    const uint64_t count = Load<uint16_t>(page, 10);
    if (kPageHeaderBytes + count * kElementBytes > page.size())
      return Corrupt("elements overflow their page");
    for (uint64_t i = 0; i < count; ++i) {
      const uint64_t element = kPageHeaderBytes + i * kElementBytes;
      if (flags & kLeafPage) {
        const uint32_t element_flags = Load<uint32_t>(page, element);
        const uint64_t start = element + Load<uint32_t>(page, element + 4);
        const uint64_t key_size = Load<uint32_t>(page, element + 8);
        const uint64_t value_size = Load<uint32_t>(page, element + 12);
        if (start + key_size + value_size > page.size()) return Corrupt("pair overflows its page");
        if (absl::Status st =
                visit(page.substr(start, key_size), page.substr(start + key_size, value_size),
                      (element_flags & kBucketElement) != 0);
            !st.ok()) {
          return st;
        }
      } else if (flags & kBranchPage) {
        if (absl::Status st = WalkPageId(Load<uint64_t>(page, element + 8), depth + 1, visit);
            !st.ok())
          return st;
      } else {
        return Corrupt("page is neither branch nor leaf");
      }
    }
    return absl::OkStatus();
  }

 private:
  std::string_view file_;
  Meta meta_;
  absl::flat_hash_set<uint64_t> visited_;
};

}  // namespace

BoltFileBuilder::BoltFileBuilder()
    : file_((kFreelistPageId + 1) * kPageSize, '\0'), next_page_(kFreelistPageId + 1) {}

void BoltFileBuilder::AddBucket(std::string_view name) {
  buckets_.push_back({std::string(name), {}});
}

void BoltFileBuilder::Put(std::string key, std::string value) {
  buckets_.back().elements.push_back({std::move(key), std::move(value), false});
}

uint64_t BoltFileBuilder::AppendPage(uint16_t flags, const std::vector<const Element*>& elements,
                                     const std::vector<uint64_t>* children) {
  uint64_t bytes = kPageHeaderBytes + elements.size() * kElementBytes;
  for (const Element* e : elements)
    bytes += e->key.size() + (children == nullptr ? e->value.size() : 0);
  const uint64_t pages = std::max<uint64_t>(1, (bytes + kPageSize - 1) / kPageSize);
  const uint64_t id = next_page_;
  next_page_ += pages;
  std::string page(pages * kPageSize, '\0');
  Store<uint64_t>(&page, 0, id);
  Store<uint16_t>(&page, 8, flags);
  Store<uint16_t>(&page, 10, static_cast<uint16_t>(elements.size()));
  Store<uint32_t>(&page, 12, static_cast<uint32_t>(pages - 1));
  uint64_t data = kPageHeaderBytes + elements.size() * kElementBytes;
  for (size_t i = 0; i < elements.size(); ++i) {
    const Element& e = *elements[i];
    const uint64_t element = kPageHeaderBytes + i * kElementBytes;
    if (children == nullptr) {
      Store<uint32_t>(&page, element, e.is_bucket ? kBucketElement : 0);
      Store<uint32_t>(&page, element + 4, static_cast<uint32_t>(data - element));
      Store<uint32_t>(&page, element + 8, static_cast<uint32_t>(e.key.size()));
      Store<uint32_t>(&page, element + 12, static_cast<uint32_t>(e.value.size()));
      page.replace(data, e.key.size(), e.key);
      page.replace(data + e.key.size(), e.value.size(), e.value);
      data += e.key.size() + e.value.size();
    } else {
      Store<uint32_t>(&page, element, static_cast<uint32_t>(data - element));
      Store<uint32_t>(&page, element + 4, static_cast<uint32_t>(e.key.size()));
      Store<uint64_t>(&page, element + 8, (*children)[i]);
      page.replace(data, e.key.size(), e.key);
      data += e.key.size();
    }
  }
  file_.append(page);
  return id;
}

uint64_t BoltFileBuilder::WriteTree(std::vector<Element> elements) {
  if (elements.empty()) return AppendPage(kLeafPage, {}, nullptr);
  // Leaves filled up to a page each (an oversized pair gets a page with overflow of its own); then
  // branch levels, each element naming its child's first key, until one root remains.
  std::vector<Element> level;  // first key of each page written, with the page id as `children`
  std::vector<uint64_t> ids;
  auto pack = [&](const std::vector<Element>& items, bool leaf) {
    std::vector<Element> firsts;
    std::vector<uint64_t> page_ids;
    size_t i = 0;
    while (i < items.size()) {
      std::vector<const Element*> page;
      std::vector<uint64_t> children;
      uint64_t bytes = kPageHeaderBytes;
      while (i < items.size()) {
        const uint64_t add =
            kElementBytes + items[i].key.size() + (leaf ? items[i].value.size() : 0);
        if (!page.empty() && bytes + add > kPageSize) break;
        bytes += add;
        page.push_back(&items[i]);
        if (!leaf) children.push_back(ids[i]);
        ++i;
      }
      page_ids.push_back(
          AppendPage(leaf ? kLeafPage : kBranchPage, page, leaf ? nullptr : &children));
      firsts.push_back({page.front()->key, {}, false});
    }
    level = std::move(firsts);
    ids = std::move(page_ids);
  };
  pack(elements, /*leaf=*/true);
  while (level.size() > 1) {
    std::vector<Element> items = std::move(level);
    pack(items, /*leaf=*/false);
  }
  return ids.front();
}

std::string BoltFileBuilder::Finish() {
  std::vector<Element> root;
  for (Bucket& bucket : buckets_) {
    const uint64_t bucket_root = WriteTree(std::move(bucket.elements));
    root.push_back({std::move(bucket.name), BucketHeader(bucket_root), true});
  }
  const uint64_t root_page = WriteTree(std::move(root));
  for (uint64_t id = 0; id < 2; ++id) {
    const uint64_t page = id * kPageSize;
    const uint64_t at = page + kPageHeaderBytes;
    Store<uint64_t>(&file_, page, id);
    Store<uint16_t>(&file_, page + 8, kMetaPage);
    Store<uint32_t>(&file_, at, kMagic);
    Store<uint32_t>(&file_, at + 4, kVersion);
    Store<uint32_t>(&file_, at + 8, static_cast<uint32_t>(kPageSize));
    Store<uint64_t>(&file_, at + 16, root_page);
    Store<uint64_t>(&file_, at + 32, kFreelistPageId);
    Store<uint64_t>(&file_, at + 40, next_page_);
    Store<uint64_t>(&file_, at + 48, id);  // transaction id: meta 1 is the current one
    Store<uint64_t>(&file_, at + kMetaChecksummedBytes,
                    Fnv1a64(std::string_view(file_).substr(at, kMetaChecksummedBytes)));
  }
  Store<uint64_t>(&file_, kFreelistPageId * kPageSize, kFreelistPageId);
  Store<uint16_t>(&file_, kFreelistPageId * kPageSize + 8, kFreelistPage);  // no free pages
  buckets_.clear();
  return std::move(file_);
}

bool LooksLikeBoltFile(std::string_view file) {
  return file.size() >= kPageHeaderBytes + 4 && Load<uint32_t>(file, kPageHeaderBytes) == kMagic;
}

absl::Status ForEachInBoltBucket(
    std::string_view file, std::string_view bucket,
    const std::function<absl::Status(std::string_view, std::string_view)>& visit) {
  std::optional<Meta> meta = ReadMeta(file, 0);
  if (meta.has_value()) {
    if (std::optional<Meta> second = ReadMeta(file, meta->page_size);
        second && second->txid > meta->txid)
      meta = second;
  } else {
    // The first meta page may have been torn by a crash: bbolt then reads the second at its own
    // page size.
    meta = ReadMeta(file, kPageSize);
  }
  if (!meta.has_value()) return Corrupt("no valid meta page");
  if (meta->page_size < 512 || meta->page_size > 65536 ||
      (meta->page_size & (meta->page_size - 1)) != 0) {
    return Corrupt("bad page size");
  }
  if (meta->high_water > file.size() / meta->page_size)
    return Corrupt("file shorter than its pages");
  TreeWalker walker(file, *meta);
  std::optional<std::string_view> header;
  if (absl::Status st =
          walker.WalkPageId(meta->root, 0,
                            [&](std::string_view key, std::string_view value, bool is_bucket) {
                              if (is_bucket && key == bucket) header = value;
                              return absl::OkStatus();
                            });
      !st.ok()) {
    return st;
  }
  if (!header.has_value()) return absl::NotFoundError("no bucket " + std::string(bucket));
  if (header->size() < kBucketHeaderBytes) return Corrupt("short bucket header");
  auto pairs = [&](std::string_view key, std::string_view value, bool is_bucket) -> absl::Status {
    if (is_bucket) return Corrupt("nested bucket");
    return visit(key, value);
  };
  const uint64_t bucket_root = Load<uint64_t>(*header, 0);
  if (bucket_root == 0)
    return walker.WalkPage(header->substr(kBucketHeaderBytes), 0, pairs);  // an inline bucket
  return walker.WalkPageId(bucket_root, 0, pairs);
}

}  // namespace leasehold::storage
