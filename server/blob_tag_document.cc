#include "server/blob_tag_document.h"

#include <algorithm>
#include <sstream>
#include <utility>
#include <vector>

#include <boost/property_tree/ptree.hpp>
#include <boost/property_tree/xml_parser.hpp>

#include "server/blob_format.h"
#include "storage/blob_tags.h"

namespace leasehold::server {
namespace {

// Ten tags of the longest key and value fit in about 5 KB; anything far larger is not a tag set.
constexpr size_t kMaxDocumentBytes = 64 * 1024;
// The document is four elements deep; refusing deeper nesting before parsing keeps a hostile body
// from recursing the parser off its stack.
constexpr int kMaxDepth = 8;

BlobError InvalidXml() { return BlobError{400, "InvalidXmlDocument", "XML specified is not syntactically valid.", {}}; }

// The deepest element nesting, counted coarsely: every "<" followed by a name opens one, every "</"
// and "/>" closes one.
int Depth(std::string_view xml) {
  int depth = 0, deepest = 0;
  for (size_t i = 0; i + 1 < xml.size(); ++i) {
    if (xml[i] == '<' && (std::isalpha(static_cast<unsigned char>(xml[i + 1])) || xml[i + 1] == '_')) {
      deepest = std::max(deepest, ++depth);
    } else if ((xml[i] == '<' && xml[i + 1] == '/') || (xml[i] == '/' && xml[i + 1] == '>')) {
      --depth;
    }
  }
  return deepest;
}

bool IsComment(const std::string& name) { return name == "<xmlcomment>"; }

}  // namespace

std::optional<BlobError> ParseTagDocument(std::string_view xml, internalpb::BlobRequest* out) {
  namespace pt = boost::property_tree;
  if (xml.size() > kMaxDocumentBytes || Depth(xml) > kMaxDepth) return InvalidXml();
  pt::ptree document;
  try {
    std::istringstream in{std::string(xml)};
    pt::read_xml(in, document);
  } catch (const pt::ptree_error&) {
    return InvalidXml();
  }
  const pt::ptree* root = nullptr;
  for (const auto& [name, child] : document) {
    if (IsComment(name)) continue;
    if (name != "Tags" || root != nullptr) return InvalidXml();
    root = &child;
  }
  if (root == nullptr) return InvalidXml();
  std::vector<std::pair<std::string, std::string>> tags;
  for (const auto& [name, set] : *root) {
    if (IsComment(name)) continue;
    if (name != "TagSet") return InvalidXml();
    for (const auto& [item, tag] : set) {
      if (IsComment(item)) continue;
      if (item != "Tag") return InvalidXml();
      auto key = tag.get_child_optional("Key");
      auto value = tag.get_child_optional("Value");
      if (!key || !value || !key->empty() || !value->empty()) return InvalidXml();
      tags.emplace_back(key->data(), value->data());
    }
  }
  if (auto problem = storage::CheckTagSet(tags)) return BlobError{400, problem->code, problem->message, {}};
  for (auto& [key, value] : tags) (*out->mutable_tags())[std::move(key)] = std::move(value);
  return std::nullopt;
}

std::string TagSetXml(const google::protobuf::Map<std::string, std::string>& tags) {
  if (tags.empty()) return "<TagSet/>";
  std::vector<std::pair<std::string, std::string>> sorted(tags.begin(), tags.end());
  std::sort(sorted.begin(), sorted.end());
  std::string out = "<TagSet>";
  for (const auto& [key, value] : sorted) {
    out += "<Tag><Key>" + blobfmt::XmlEscape(key) + "</Key><Value>" + blobfmt::XmlEscape(value) + "</Value></Tag>";
  }
  return out + "</TagSet>";
}

std::string TagDocument(const google::protobuf::Map<std::string, std::string>& tags) {
  return "<?xml version=\"1.0\" encoding=\"utf-8\"?>\n<Tags>" + TagSetXml(tags) + "</Tags>";
}

}  // namespace leasehold::server
