#include "server/blob/blob_tag_document.h"

#include <algorithm>
#include <exception>
#include <sstream>
#include <utility>
#include <vector>

#include <boost/property_tree/ptree.hpp>
#include <boost/property_tree/xml_parser.hpp>

#include "server/blob/blob_format.h"

namespace leasehold::server {
namespace {

// Ten tags of the longest key and value fit in about 5 KB; anything far larger is not a tag set.
constexpr size_t kMaxDocumentBytes = 64 * 1024;
// A full document of ten tags has 65 markup openings ('<'). Nesting can be no deeper than their
// count, so bounding it keeps a hostile body from recursing the parser off its stack.
constexpr std::ptrdiff_t kMaxMarkup = 160;

BlobError InvalidXml() {
  return BlobError{400, "InvalidXmlDocument", "XML specified is not syntactically valid.", {}};
}

bool IsComment(const std::string& name) { return name == "<xmlcomment>"; }

// The one child element named `name`, comments aside; null if absent, repeated or beside others.
const boost::property_tree::ptree* OnlyChild(const boost::property_tree::ptree& parent,
                                             const std::string& name) {
  const boost::property_tree::ptree* found = nullptr;
  for (const auto& [child_name, child] : parent) {
    if (IsComment(child_name)) continue;
    if (child_name != name || found != nullptr) return nullptr;
    found = &child;
  }
  return found;
}

// An element's text; nullopt if it has child elements (comments are allowed).
std::optional<std::string> TextOf(const boost::property_tree::ptree& element) {
  for (const auto& [name, child] : element) {
    if (!IsComment(name)) return std::nullopt;
  }
  return element.data();
}

}  // namespace

absl::Status ParseTagDocument(std::string_view xml, internalpb::BlobRequest* out) {
  namespace pt = boost::property_tree;
  if (xml.size() > kMaxDocumentBytes || std::count(xml.begin(), xml.end(), '<') > kMaxMarkup)
    return InvalidXml();
  pt::ptree document;
  try {
    std::istringstream in{std::string(xml)};
    pt::read_xml(in, document);
  } catch (const std::exception&) {  // the parser's errors, and running out of memory
    return InvalidXml();
  }
  const pt::ptree* root = OnlyChild(document, "Tags");
  const pt::ptree* set = root == nullptr ? nullptr : OnlyChild(*root, "TagSet");
  if (set == nullptr) return InvalidXml();
  std::vector<std::pair<std::string, std::string>> tags;
  for (const auto& [name, tag] : *set) {
    if (IsComment(name)) continue;
    if (name != "Tag") return InvalidXml();
    // Exactly a Key and a Value, in either order.
    const pt::ptree *key = nullptr, *value = nullptr;
    for (const auto& [field, element] : tag) {
      if (IsComment(field)) continue;
      const pt::ptree** slot = field == "Key" ? &key : field == "Value" ? &value : nullptr;
      if (slot == nullptr || *slot != nullptr) return InvalidXml();
      *slot = &element;
    }
    if (key == nullptr || value == nullptr) return InvalidXml();
    auto key_text = TextOf(*key);
    auto value_text = TextOf(*value);
    if (!key_text || !value_text) return InvalidXml();
    tags.emplace_back(std::move(*key_text), std::move(*value_text));
  }
  return SetTags(std::move(tags), out);
}

std::string TagSetXml(const google::protobuf::Map<std::string, std::string>& tags) {
  if (tags.empty()) return "<TagSet/>";
  std::vector<std::pair<std::string, std::string>> sorted(tags.begin(), tags.end());
  std::sort(sorted.begin(), sorted.end());
  std::string out = "<TagSet>";
  for (const auto& [key, value] : sorted) {
    out += "<Tag><Key>" + blobfmt::XmlEscape(key) + "</Key><Value>" + blobfmt::XmlEscape(value) +
           "</Value></Tag>";
  }
  return out + "</TagSet>";
}

std::string TagDocument(const google::protobuf::Map<std::string, std::string>& tags) {
  return "<?xml version=\"1.0\" encoding=\"utf-8\"?>\n<Tags>" + TagSetXml(tags) + "</Tags>";
}

}  // namespace leasehold::server
